//! K copies of a model as one computation: every parameter tensor of the K copies is one
//! tensor, client after client, and each layer of the K copies is one batched op. K = 1 is one
//! model. The loss of a cohort is the sum of its clients' batch losses, so the gradient in each
//! client's block is that client's own.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Gradients, Int, Tensor, TensorData};

use super::Model;
use super::ops::{Ops, Params, Seeds};
use super::outputs::Outputs3;
use crate::data::Input;
use crate::kernels::{Kernels, is_flex};

/// Which rows of a step's K batches of b count: `keep` `[K, b, 1]` (1 for a sample, 0 for a
/// padding row), `scale` `[K]` each copy's b over its kept rows (1 for a full batch; 0 for a copy
/// with none). A step whose batches are shorter than b, or where a client takes no part, is
/// padded to K·b rows with it, so that one captured graph serves every step.
#[derive(Clone, Debug)]
pub struct RowMask {
    pub keep: Tensor<3>,
    pub scale: Tensor<1>,
}

/// The parameters of K copies of a model, each tensor flat and client-major; or, for copies
/// trained on flex's per-copy path, each copy's tensors as leaves of their own ([`Params`]).
pub struct Stacked<'m> {
    model: &'m Model,
    params: Vec<Tensor<1>>,
    /// Each copy's tensors (`[copy][tensor]`) where they are leaves apart (else empty).
    apart: Vec<Vec<Tensor<1>>>,
    shapes: Vec<Vec<usize>>,
    copies: usize,
}

impl<'m> Stacked<'m> {
    /// The copies whose parameters are `xs` (one flat vector of the model's layout per copy),
    /// on `device`, with gradient.
    /// On flex with fedrun's kernels, where each of K > 1 copies runs alone, each copy's
    /// tensors are leaves apart, so that each gradient lands in its copy's leaf (the same
    /// values; a stacked leaf's narrows would each add a zeroed `[K·len]` gradient into it).
    pub fn new(model: &'m Model, xs: &[&[f32]], device: &Device) -> Stacked<'m> {
        let apart = xs.len() > 1 && model.kernels == Kernels::Fedrun && is_flex(device);
        if apart {
            let leaf =
                |x: &[f32]| Tensor::<1>::from_data(TensorData::new(x.to_vec(), [x.len()]), device);
            let mut s = Self::of(model, Vec::new(), xs.len());
            s.apart = (xs.iter())
                .map(|x| {
                    let ts = model.layout.tensors.iter();
                    ts.map(|t| leaf(&x[t.range()]).require_grad()).collect()
                })
                .collect();
            return s;
        }
        let s = Self::frozen(model, xs, device);
        let params = s.params.into_iter().map(|p| p.require_grad()).collect();
        Self::of(model, params, xs.len())
    }

    /// As [`Stacked::new`], without gradient (the models a loss reads, the evaluation's).
    pub fn frozen(model: &'m Model, xs: &[&[f32]], device: &Device) -> Stacked<'m> {
        let copies = xs.len();
        let params = model
            .layout
            .tensors
            .iter()
            .map(|t| {
                let mut v = Vec::with_capacity(copies * t.len);
                xs.iter().for_each(|x| v.extend_from_slice(&x[t.range()]));
                Tensor::<1>::from_data(TensorData::new(v, [copies * t.len]), device)
            })
            .collect();
        Self::of(model, params, copies)
    }

    /// The copies whose parameters are `params`: each tensor of the layout, flat and
    /// client-major (`copies` × its size). Their gradients are the caller's to read.
    pub fn of(model: &'m Model, params: Vec<Tensor<1>>, copies: usize) -> Stacked<'m> {
        let shapes = model
            .layout
            .tensors
            .iter()
            .map(|t| t.shape.clone())
            .collect();
        Stacked {
            model,
            params,
            apart: Vec::new(),
            shapes,
            copies,
        }
    }

    fn ops<'a>(&'a self, masks: Option<Seeds<'a>>) -> Ops<'a> {
        let params = match self.apart.is_empty() {
            true => Params::Stacked(&self.params),
            false => Params::Apart(&self.apart),
        };
        Ops::new(params, &self.shapes, self.copies, self.model.kernels, masks)
    }

    /// The K copies' outputs on `input`, the K clients' batches of b samples one after another
    /// (`[K·b, …]`). `masks`: each copy's dropout seed for this step (training), or None (no
    /// dropout).
    pub fn outputs(&self, input: Input, masks: Option<&[u64]>) -> Outputs3 {
        self.outputs_with(input, masks.map(Seeds::Host)).0
    }

    /// [`Stacked::outputs`] with the seeds on the host or on the device ([`Seeds`]), and the
    /// number of dropout sites the forward met.
    pub fn outputs_with(&self, input: Input, masks: Option<Seeds>) -> (Outputs3, u64) {
        let mut ops = self.ops(masks);
        let out = self.model.net.outputs(input, &mut ops);
        (out, ops.site)
    }

    /// The logits `[K, b, classes]` (evaluation: no dropout).
    pub fn logits(&self, input: Input) -> Tensor<3> {
        self.outputs(input, None).logits
    }

    /// The copies' logits `[b, classes]` from an activation at `level` of one copy (FedMLB's
    /// hybrid branches; ResNet-18 only, None for the other models).
    pub fn forward_from(&self, level: usize, x: Tensor<4>) -> Option<Tensor<2>> {
        let l = self.model.net.forward_from(level, x, &mut self.ops(None))?;
        let [_, b, c] = l.dims();
        Some(l.reshape([b, c]))
    }

    /// Each client's mean cross-entropy on its batch `[K]`, from the logits `[K, b, classes]`
    /// and the targets `[K·b]`; with `mask`, the mean of the rows it keeps (a batch padded to b
    /// rows: the mean of the kept rows and the padding's zeros, times b over the kept count;
    /// for a full batch the mean times 1, so the same bits as without a mask). On flex each client's is computed
    /// as one client's is (its logits' log-softmax, the targets picked, their `mean`), so that a
    /// cohort's losses, and the `train_loss` column, are one at a time's to the bit: `mean_dim`
    /// over the cohort sums the b values in another order than `mean` does.
    pub fn losses(logits: Tensor<3>, targets: Tensor<1, Int>, mask: Option<&RowMask>) -> Tensor<1> {
        let [k, b, c] = logits.dims();
        let one = |i: usize, own: Tensor<2>, y: Tensor<1, Int>| -> Tensor<1> {
            let picked = log_softmax(own, 1)
                .gather(1, y.reshape([b, 1]))
                .reshape([b]);
            match mask {
                None => picked.mean().neg(),
                Some(m) => {
                    let keep = m.keep.clone().narrow(0, i, 1).reshape([b]);
                    ((picked * keep).mean() * m.scale.clone().narrow(0, i, 1)).neg()
                }
            }
        };
        if k == 1 {
            return one(0, logits.reshape([b, c]), targets);
        }
        if crate::kernels::is_flex(&logits.device()) {
            let each = (0..k).map(|i| {
                let own = logits.clone().narrow(0, i, 1).reshape([b, c]);
                one(i, own, targets.clone().narrow(0, i * b, b))
            });
            return Tensor::cat(each.collect(), 0);
        }
        let picked = log_softmax(logits, 2).gather(2, targets.reshape([k, b, 1]));
        match mask {
            None => picked.mean_dim(1).reshape([k]).neg(),
            Some(m) => ((picked * m.keep.clone()).mean_dim(1).reshape([k]) * m.scale.clone()).neg(),
        }
    }

    /// Move each copy's gradient out of `grads` into its flat vector `out[k]` (zero where a
    /// parameter has none).
    pub fn read_grads(&self, grads: &mut Gradients, out: &mut [&mut [f32]]) {
        for (own, o) in self.apart.iter().zip(out.iter_mut()) {
            for (p, t) in own.iter().zip(&self.model.layout.tensors) {
                match p.grad_remove(grads) {
                    Some(g) => {
                        let data = g.into_data().convert::<f32>();
                        o[t.range()].copy_from_slice(data.as_slice::<f32>().expect("f32"));
                    }
                    None => o[t.range()].fill(0.0),
                }
            }
        }
        for (p, t) in self.params.iter().zip(&self.model.layout.tensors) {
            let Some(g) = p.grad_remove(grads) else {
                out.iter_mut().for_each(|o| o[t.range()].fill(0.0));
                continue;
            };
            let data = g.into_data().convert::<f32>();
            let all = data.as_slice::<f32>().expect("f32");
            for (o, chunk) in out.iter_mut().zip(all.chunks(t.len)) {
                o[t.range()].copy_from_slice(chunk);
            }
        }
    }
}
