//! The pieces every model is written with: a cursor over the K copies' parameters in the
//! layout's order, and the layers of K copies at once (a linear layer, a convolution, dropout).
//! With K = 1 each layer is the op one model alone runs.

use burn::tensor::Tensor;
use burn::tensor::module::layer_norm;

use crate::kernels::{Kernels, dropout_copies, dropout_mask, is_flex, linear_of};
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

/// The K copies' parameters in the layout's order, taken one tensor at a time as a model's
/// forward reads them, with the run's kernels and the copies' dropout streams.
pub struct Cursor<'a> {
    pub params: Params<'a>,
    pub shapes: &'a [Vec<usize>],
    pub at: usize,
    /// K, the number of copies.
    pub copies: usize,
    pub kernels: Kernels,
    /// Each copy's dropout seeds for this step; None: no dropout (evaluation).
    pub masks: Option<Seeds<'a>>,
    /// The dropout sites met so far in this forward.
    pub site: u64,
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

impl<'a> Cursor<'a> {
    /// Whether each copy runs on its own batch with fedrun's CPU kernels (flex), rather than
    /// the copies side by side in one grouped op.
    pub fn per_copy<const D: usize>(&self, x: &Tensor<D>) -> bool {
        self.copies > 1 && self.kernels == Kernels::Fedrun && is_flex(&x.device())
    }

    /// `f(i, cursor)` for each copy i, its cursor one copy's views of the next `n` tensors
    /// (its dropout stream its own); the cursor then moves past them.
    pub fn each_copy<T>(&mut self, n: usize, mut f: impl FnMut(usize, &mut Cursor) -> T) -> Vec<T> {
        if self.copies == 1 {
            return vec![f(0, self)]; // the tensors themselves: no slice for the backward to undo
        }
        let (from, mut site) = (self.at, self.site);
        let out = (0..self.copies)
            .map(|i| {
                let own: Vec<Tensor<1>> = (from..from + n)
                    .map(|j| self.params.copy(i, j, self.shapes[j].iter().product()))
                    .collect();
                let host = match self.masks {
                    Some(Seeds::Host(m)) => [m[i]],
                    _ => [0],
                };
                let device = match self.masks {
                    Some(Seeds::Device(t)) => Some(t.clone().narrow(1, i, 1)),
                    _ => None,
                };
                let masks = match (self.masks, &device) {
                    (Some(Seeds::Host(_)), _) => Some(Seeds::Host(&host[..])),
                    (Some(Seeds::Device(_)), Some(t)) => Some(Seeds::Device(t)),
                    _ => None,
                };
                let mut one = Cursor {
                    params: Params::Stacked(&own),
                    shapes: &self.shapes[from..from + n],
                    at: 0,
                    copies: 1,
                    kernels: self.kernels,
                    masks,
                    site: self.site,
                };
                let y = f(i, &mut one);
                site = one.site;
                y
            })
            .collect();
        (self.at, self.site) = (from + n, site);
        out
    }

    fn next(&mut self) -> (Tensor<1>, &[usize]) {
        let i = self.at;
        self.at += 1;
        (self.params.stacked(i), &self.shapes[i])
    }

    /// The next tensor, a convolution's weight: the copies' `[K·out, in, kh, kw]`.
    pub fn conv(&mut self) -> Tensor<4> {
        let k = self.copies;
        let (p, s) = self.next();
        assert_eq!(s.len(), 4, "a convolution's weight");
        p.reshape([k * s[0], s[1], s[2], s[3]])
    }

    /// The next tensor, a vector: the copies' `[K·n]`.
    pub fn vector(&mut self) -> Tensor<1> {
        let (p, s) = self.next();
        assert_eq!(s.len(), 1, "a vector");
        p
    }

    /// The next tensor, a matrix (an embedding table): the copies' `[K·rows, cols]` and the
    /// one copy's `[rows, cols]`.
    pub fn matrix(&mut self) -> (Tensor<2>, [usize; 2]) {
        let k = self.copies;
        let (p, s) = self.next();
        assert_eq!(s.len(), 2, "a matrix");
        let (rows, cols) = (s[0], s[1]);
        (p.reshape([k * rows, cols]), [rows, cols])
    }

    /// The next two tensors, a linear layer's weight and bias: `[K, in, out]` and `[K, 1, out]`.
    pub fn weights(&mut self) -> (Tensor<3>, Tensor<3>) {
        let k = self.copies;
        let (w, s) = self.next();
        assert_eq!(s.len(), 2, "a linear layer's weight");
        let (din, dout) = (s[0], s[1]);
        let b = self.vector();
        (w.reshape([k, din, dout]), b.reshape([k, 1, dout]))
    }

    /// One copy's next linear layer as burn's `linear` takes it: `[in, out]` and `[out]`.
    pub fn linear_one(&mut self) -> (Tensor<2>, Tensor<1>) {
        let (w, s) = self.next();
        let w = w.reshape([s[0], s[1]]);
        (w, self.vector())
    }

    /// The next linear layer on `x` (`[K, rows, in]`): with one copy burn's (or fedrun's,
    /// [`linear_of`]) linear layer on the rows; with K on flex and fedrun's kernels, that layer
    /// for each copy (the product and the sums it runs alone); else one batched product.
    pub fn linear(&mut self, x: Tensor<3>) -> Tensor<3> {
        if self.per_copy(&x) {
            let per = self.each_copy(2, |i, one| one.linear(x.clone().narrow(0, i, 1)));
            return Tensor::cat(per, 0);
        }
        if self.copies > 1 {
            let (w, b) = self.weights();
            return x.matmul(w) + b;
        }
        let ((w, b), rows) = (self.linear_one(), x.dims()[1]);
        let [din, dout] = w.dims();
        linear_of(x.reshape([rows, din]), w, b, self.kernels).reshape([1, rows, dout])
    }

    /// LayerNorm over the last axis of each copy's rows (`x` `[K, rows, d]`) with the copy's own
    /// γ and β (`[K·d]`): burn's `layer_norm` with them for one copy; for K, the norm without
    /// them, then each copy's scale and shift.
    pub fn layer_norm(
        &self,
        x: Tensor<3>,
        (gamma, beta): (Tensor<1>, Tensor<1>),
        eps: f64,
    ) -> Tensor<3> {
        let k = self.copies;
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
