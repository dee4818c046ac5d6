//! The one owner of a forward's copies: [`Ops`] holds the K copies' parameters, the kernels,
//! the dropout seeds, and whether each copy runs alone (flex with fedrun's kernels) or the
//! copies side by side in one op. A model reads its parameters through its layers' leaves
//! ([`super::params::Linear`], [`super::params::Conv`], …), which name their tensors in the
//! layout: nothing is read by position. With K = 1 each layer is the op one model alone runs.

use burn::tensor::Tensor;
use burn::tensor::module::layer_norm;

use super::params::{Conv, Linear, Norm, Param};
use crate::kernels::lstm::FUSED_MAX_BATCH;
use crate::kernels::{Kernels, dropout_copies, dropout_mask, is_flex, linear_of, on_cube};
use crate::rng::{Rng, Stream};

/// The K copies' parameters: each tensor of the layout as one `[K·len]` tensor, copy after
/// copy; or each copy's tensors apart (`[copy][tensor]`, each its own autodiff leaf: on flex,
/// where each copy runs alone, a copy's gradient then lands in its own leaf, where a narrow of
/// the stacked tensor would give each copy a zeroed `[K·len]` gradient to add up).
#[derive(Clone, Copy)]
pub enum Params<'a> {
    Stacked(&'a [Tensor<1>]),
    Apart(&'a [Vec<Tensor<1>>]),
}

impl Params<'_> {
    /// Tensor `j` of copy `i` (`len` values).
    fn copy(&self, i: usize, j: usize, len: usize) -> Tensor<1> {
        match self {
            Params::Stacked(p) => p[j].clone().narrow(0, i * len, len),
            Params::Apart(p) => p[i][j].clone(),
        }
    }

    /// Tensor `j` of every copy, `[K·len]`.
    fn stacked(&self, j: usize) -> Tensor<1> {
        match self {
            Params::Stacked(p) => p[j].clone(),
            Params::Apart([one]) => one[j].clone(),
            Params::Apart(p) => Tensor::cat(p.iter().map(|c| c[j].clone()).collect(), 0),
        }
    }
}

/// The K copies' parameters and what a forward runs them with: every K = 1, per-copy and
/// batched choice of a layer is made here.
pub struct Ops<'a> {
    params: Params<'a>,
    shapes: &'a [Vec<usize>],
    /// The copy this view reads alone (a copy's own pass, [`Ops::each_copy`]); else all.
    view: Option<usize>,
    /// K, the number of copies (1 in a copy's own view).
    pub copies: usize,
    pub kernels: Kernels,
    /// Each copy's dropout seeds for this step; None: no dropout (evaluation).
    masks: Option<Seeds<'a>>,
    /// The dropout sites met so far in this forward.
    pub site: u64,
}

/// How the copies' LSTM layers run, chosen once by [`Ops::recurrence`]: fedrun's fused layer
/// (one kernel a layer; flex's takes one copy at a time, the GPU's every copy at once) or
/// gate by gate (burn's ops, the equations of `lstm::cell`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recurrence {
    /// Each copy alone on fedrun's fused CPU layer (flex, batches up to
    /// [`crate::kernels::lstm::FUSED_MAX_BATCH`]).
    FusedEach,
    /// Each copy alone, gate by gate (flex, larger batches: an evaluation's).
    GatesEach,
    /// Every copy at once on fedrun's fused GPU layer (cubecl's runtimes).
    FusedAll,
    /// Every copy at once, gate by gate (burn's kernels).
    GatesAll,
}

/// The copies' dropout seeds at a step: each copy's step seed on the host (a site's seed derived
/// from it there and given with the op), or every site's seeds already derived and held on the
/// device, `[sites, K, 4]` (site s's seed of copy k as its four 16-bit quarters,
/// [`crate::kernels::ext_mask::quarters`]): what a step that takes nothing from the host reads.
/// Both give each copy the same masks.
#[derive(Clone, Copy)]
pub enum Seeds<'a> {
    Host(&'a [u64]),
    Device(&'a Tensor<3>),
}

/// A copy's step seed at dropout site `site` (the seed its masks there are drawn from).
pub fn site_seed(step_seed: u64, site: u64) -> u64 {
    Rng::derive(step_seed, Stream::Dropout, &[site]).next_u64()
}

impl<'a> Ops<'a> {
    /// The `copies` copies' parameters `params` (the layout's tensors, of `shapes`), run with
    /// `kernels`, drawing dropout from `masks`.
    pub fn new(
        params: Params<'a>,
        shapes: &'a [Vec<usize>],
        copies: usize,
        kernels: Kernels,
        masks: Option<Seeds<'a>>,
    ) -> Self {
        Ops {
            params,
            shapes,
            view: None,
            copies,
            kernels,
            masks,
            site: 0,
        }
    }

    /// Whether each copy runs on its own batch with fedrun's CPU kernels (flex), rather than
    /// the copies side by side in one grouped op.
    pub fn per_copy<const D: usize>(&self, x: &Tensor<D>) -> bool {
        self.copies > 1 && self.kernels == Kernels::Fedrun && is_flex(&x.device())
    }

    /// How the copies' LSTM layers run on batches of `b` sequences on `device`.
    pub fn recurrence(&self, b: usize, device: &burn::tensor::Device) -> Recurrence {
        let fedrun = self.kernels == Kernels::Fedrun;
        match (fedrun && is_flex(device), fedrun && on_cube(device)) {
            (true, _) if b <= FUSED_MAX_BATCH => Recurrence::FusedEach,
            (true, _) => Recurrence::GatesEach,
            (_, true) => Recurrence::FusedAll,
            _ => Recurrence::GatesAll,
        }
    }

    /// `f(i, view)` for each copy i, `view` reading copy i's parameters alone (its dropout
    /// stream its own).
    pub fn each_copy<T>(&mut self, mut f: impl FnMut(usize, &mut Ops) -> T) -> Vec<T> {
        if self.copies == 1 {
            return vec![f(0, self)]; // the tensors themselves: no slice for the backward to undo
        }
        let mut site = self.site;
        let out = (0..self.copies)
            .map(|i| {
                let (host, device);
                let masks = match self.masks {
                    Some(Seeds::Host(m)) => {
                        host = [m[i]];
                        Some(Seeds::Host(&host[..]))
                    }
                    Some(Seeds::Device(t)) => {
                        device = t.clone().narrow(1, i, 1);
                        Some(Seeds::Device(&device))
                    }
                    None => None,
                };
                let mut one = Ops {
                    view: Some(i),
                    copies: 1,
                    masks,
                    ..*self
                };
                let y = f(i, &mut one);
                site = one.site;
                y
            })
            .collect();
        self.site = site;
        out
    }

    /// Tensor `p` of the copies this reads, `[K·len]`, and its shape.
    fn tensor(&self, p: Param) -> (Tensor<1>, &[usize]) {
        let shape = &self.shapes[p.0];
        let t = match self.view {
            Some(i) => self.params.copy(i, p.0, shape.iter().product()),
            None => self.params.stacked(p.0),
        };
        (t, shape)
    }

    /// A convolution's weight as the copies' `[K·out, in, kh, kw]`, and its bias `[K·out]`.
    pub fn conv(&self, c: &Conv) -> (Tensor<4>, Option<Tensor<1>>) {
        let (p, s) = self.tensor(c.weight);
        assert_eq!(s.len(), 4, "a convolution's weight");
        let w = p.reshape([self.copies * s[0], s[1], s[2], s[3]]);
        (w, c.bias.map(|b| self.vector(b)))
    }

    /// A vector parameter: the copies' `[K·n]`.
    pub fn vector(&self, p: Param) -> Tensor<1> {
        let (t, s) = self.tensor(p);
        assert_eq!(s.len(), 1, "a vector");
        t
    }

    /// A norm's γ and β, each the copies' `[K·c]`.
    pub fn norm(&self, n: &Norm) -> (Tensor<1>, Tensor<1>) {
        (self.vector(n.gamma), self.vector(n.beta))
    }

    /// A matrix parameter (an embedding table): the copies' `[K·rows, cols]` and one copy's
    /// `[rows, cols]`.
    pub fn matrix(&self, p: Param) -> (Tensor<2>, [usize; 2]) {
        let (t, s) = self.tensor(p);
        assert_eq!(s.len(), 2, "a matrix");
        let (rows, cols) = (s[0], s[1]);
        (t.reshape([self.copies * rows, cols]), [rows, cols])
    }

    /// A linear layer's weight and bias: `[K, in, out]` and `[K, 1, out]`.
    pub fn weights(&self, l: &Linear) -> (Tensor<3>, Tensor<3>) {
        let k = self.copies;
        let (w, s) = self.tensor(l.weight);
        assert_eq!(s.len(), 2, "a linear layer's weight");
        let (din, dout) = (s[0], s[1]);
        let b = self.vector(l.bias);
        (w.reshape([k, din, dout]), b.reshape([k, 1, dout]))
    }

    /// The linear layer `l` on `x` (`[K, rows, in]`): with one copy burn's (or fedrun's,
    /// [`linear_of`]) linear layer on the rows; with K on flex and fedrun's kernels, that layer
    /// for each copy (the product and the sums it runs alone); else one batched product.
    pub fn linear(&mut self, l: &Linear, x: Tensor<3>) -> Tensor<3> {
        if self.per_copy(&x) {
            let per = self.each_copy(|i, one| one.linear(l, x.clone().narrow(0, i, 1)));
            return Tensor::cat(per, 0);
        }
        if self.copies > 1 {
            let (w, b) = self.weights(l);
            return x.matmul(w) + b;
        }
        // one copy: the tensors as burn's linear layer takes them, one reshape each
        let (w, s) = self.tensor(l.weight);
        let ([din, dout], rows) = ([s[0], s[1]], x.dims()[1]);
        let (w, b) = (w.reshape([din, dout]), self.vector(l.bias));
        linear_of(x.reshape([rows, din]), w, b, self.kernels).reshape([1, rows, dout])
    }

    /// LayerNorm over the last axis of each copy's rows (`x` `[K, rows, d]`) with the copy's own
    /// γ and β (`[K·d]`): burn's `layer_norm` with them for one copy; for K, the norm without
    /// them, then each copy's scale and shift.
    pub fn layer_norm(&self, x: Tensor<3>, n: &Norm, eps: f64) -> Tensor<3> {
        let (k, (gamma, beta)) = (self.copies, self.norm(n));
        if k == 1 {
            return layer_norm(x, gamma, Some(beta), eps);
        }
        let d = x.dims()[2];
        let ones = Tensor::<1>::ones([d], &x.device());
        let y = layer_norm(x, ones, None, eps);
        y * gamma.reshape([k, 1, d]) + beta.reshape([k, 1, d])
    }

    /// Dropout of probability `p` on `x`, whose axis `axis` holds the copies one after another:
    /// each copy's mask drawn from its own stream, a pure function of its seed and the site
    /// (the same whether the copy runs alone or beside others). None in evaluation.
    pub fn dropout<const D: usize>(&mut self, x: Tensor<D>, p: f64, axis: usize) -> Tensor<D> {
        let Some(seeds) = self.masks.filter(|_| p > 0.0) else {
            return x;
        };
        let site = self.site;
        self.site += 1;
        match seeds {
            Seeds::Host(seeds) => {
                let own: Vec<u64> = seeds.iter().map(|&s| site_seed(s, site)).collect();
                dropout_copies(x, &own, axis, p, self.kernels)
            }
            Seeds::Device(all) => {
                let k = all.dims()[1];
                let own = all.clone().narrow(0, site as usize, 1).reshape([k, 4]);
                let mask = dropout_mask(&x, own, axis, p);
                x * mask
            }
        }
    }
}

impl Linear {
    /// This layer on `x` (`[K, rows, in]`), as [`Ops::linear`] runs it.
    pub fn apply(&self, x: Tensor<3>, ops: &mut Ops) -> Tensor<3> {
        ops.linear(self, x)
    }
}

/// The K copies' batches `[K·b, c, h, w]` side by side in the channels: `[b, K·c, h, w]` (the
/// grouped convolutions' layout: group i is copy i).
pub fn to_channels(x: Tensor<4>, k: usize) -> Tensor<4> {
    if k == 1 {
        return x;
    }
    let [n, c, h, w] = x.dims();
    let x5: Tensor<5> = x.reshape([k, n / k, c, h, w]);
    x5.swap_dims(0, 1).reshape([n / k, k * c, h, w])
}

/// The copies' maps side by side in the channels (`[b, K·c, h, w]`) as `[K, b, c·h·w]`.
pub fn from_channels(x: Tensor<4>, k: usize) -> Tensor<3> {
    let [b, kc, h, w] = x.dims();
    x.reshape([b, k, kc / k * h * w]).swap_dims(0, 1)
}
