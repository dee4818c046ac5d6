//! K copies of a model as one computation, for the cohort step (`run.cohort`, after HFTA's
//! fused models, Wang et al., MLSys 2021): every parameter tensor of the K copies is one
//! tensor, client after client, and each layer of the K copies is one batched op (a linear
//! layer is a batched matrix product `[K, b, in]·[K, in, out]`). The loss is the sum of the K
//! clients' batch losses, so the gradient in each client's block is that client's own.
//!
//! The copies' parameters come from, and their gradients go to, the flat vectors of the
//! model's [`Layout`], one per client. Models with a stacked form: the linear model, the MLP,
//! the FedExP CNN (its convolutions grouped, one group per copy) and ResNet-18 (`resnet.rs`:
//! grouped convolutions and GroupNorms); [`why_not`] names what the others lack.

mod parts;
mod resnet;

use burn::backend::ops::ConvOptions;
use burn::nn::pool::MaxPool2d;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::{Device, Gradients, Int, Tensor, TensorData};

use super::Model;
use super::params::Layout;
use super::resnet::ResNet18;
use crate::config::{ModelKind, ModelSpec};
use crate::data::Input;
use crate::kernels::{Kernels, conv2d_of, is_flex, max_pool2d};
use parts::{Cursor, to_channels};

/// Why a model of `spec` has no stacked form yet; None when it has one.
pub fn why_not(spec: &ModelSpec) -> Option<String> {
    match spec.kind {
        ModelKind::Linear | ModelKind::Mlp => None,
        ModelKind::Cnn | ModelKind::TinyCnn | ModelKind::Resnet18 if spec.projection == 0 => None,
        ModelKind::Cnn | ModelKind::TinyCnn | ModelKind::Resnet18 => {
            Some("model.projection > 0: the projection head has no stacked form yet".into())
        }
        other => Some(format!(
            "model.kind = \"{}\" has no stacked form yet (the linear model, the MLP, the FedExP CNN and ResNet-18 have one)",
            other.as_str()
        )),
    }
}

/// How the copies compute: a chain of linear layers on the flattened input, the FedExP
/// CNN's two convolutions (grouped: one group per copy) before its linear layers, or ResNet-18
/// on the copies' maps side by side in the channels.
enum Form<'m> {
    Linear,
    ResNet(&'m ResNet18),
    Cnn {
        pool: MaxPool2d,
        kernels: Kernels,
        stride: [usize; 2],
    },
}

impl<'m> Form<'m> {
    fn of(model: &'m Model) -> Form<'m> {
        match model {
            Model::Linear(_) | Model::Mlp(_) => Form::Linear,
            Model::ResNet(m) => Form::ResNet(m),
            Model::Cnn(m) => {
                let (pool, kernels, stride) = m.stack_parts().expect("a CNN with a stacked form");
                Form::Cnn {
                    pool: pool.clone(),
                    kernels,
                    stride,
                }
            }
            _ => panic!("a model without a stacked form"),
        }
    }
}

/// The parameters of K copies of a model, each tensor flat and client-major, with gradient.
pub struct Stacked<'m> {
    form: Form<'m>,
    params: Vec<Tensor<1>>,
    shapes: Vec<Vec<usize>>,
    copies: usize,
}

impl<'m> Stacked<'m> {
    /// The copies whose parameters are `xs` (one flat vector of `layout` per copy), on
    /// `device`. `model` must have a stacked form ([`why_not`]).
    pub fn new(model: &'m Model, layout: &Layout, xs: &[&[f32]], device: &Device) -> Stacked<'m> {
        let copies = xs.len();
        let params = layout
            .tensors
            .iter()
            .map(|t| {
                let mut v = Vec::with_capacity(copies * t.len);
                xs.iter().for_each(|x| v.extend_from_slice(&x[t.range()]));
                Tensor::<1>::from_data(TensorData::new(v, [copies * t.len]), device).require_grad()
            })
            .collect();
        Self::of(model, layout, params, copies)
    }

    /// The copies whose parameters are `params`: each tensor of `layout`, flat and
    /// client-major (`copies` × its size), on the training device. Their gradients are the
    /// caller's to read (the parameters may be taken from larger leaves).
    pub fn of(
        model: &'m Model,
        layout: &Layout,
        params: Vec<Tensor<1>>,
        copies: usize,
    ) -> Stacked<'m> {
        let shapes = layout.tensors.iter().map(|t| t.shape.clone()).collect();
        Stacked {
            form: Form::of(model),
            params,
            shapes,
            copies,
        }
    }

    /// The logits `[K, b, classes]` of the K copies on `input`, the K clients' batches of b
    /// samples one after another (`[K·b, …]`).
    pub fn logits(&self, input: Input) -> Tensor<3> {
        let Input::Images(x) = input else {
            panic!("the stacked models read images")
        };
        let [n, ..] = x.dims();
        let (k, b) = (self.copies, n / self.copies);
        let (h, first) = match &self.form {
            Form::ResNet(m) => {
                let mut cursor = Cursor {
                    params: &self.params,
                    shapes: &self.shapes,
                    at: 0,
                    copies: k,
                };
                return resnet::logits(m, to_channels(x, k), &mut cursor);
            }
            Form::Linear => {
                let flat: Tensor<2> = x.flatten(1, 3);
                let d = flat.dims()[1];
                (flat.reshape([k, b, d]), 0)
            }
            Form::Cnn {
                pool,
                kernels,
                stride,
            } => (self.convolutions(x, pool, *kernels, *stride), 4),
        };
        self.linear_chain(h, first)
    }

    /// The CNN's convolutions, ReLUs and poolings on `[K·b, c, h, w]`; the flattened features
    /// `[K, b, d]`. On flex each copy's convolution runs on fedrun's kernel, one after another
    /// (a grouped convolution takes burn's slower direct path there: twice the round's time
    /// with 50 copies of the CIFAR CNN); elsewhere they run as one grouped convolution on
    /// `[b, K·c, h, w]`, one launch for all copies.
    fn convolutions(
        &self,
        x: Tensor<4>,
        pool: &MaxPool2d,
        kernels: Kernels,
        stride: [usize; 2],
    ) -> Tensor<3> {
        let [n, ..] = x.dims();
        let (k, b) = (self.copies, n / self.copies);
        let h = if kernels == Kernels::Fedrun && is_flex(&x.device()) {
            let per: Vec<Tensor<4>> = (0..k)
                .map(|i| {
                    let xi = x.clone().narrow(0, i * b, b);
                    self.conv_layers(xi, 1, i, pool, kernels, stride)
                })
                .collect();
            Tensor::cat(per, 0)
        } else {
            let y = self.conv_layers(to_channels(x, k), k, 0, pool, kernels, stride);
            let [_, kc, oh, ow] = y.dims();
            let y5: Tensor<5> = y.reshape([b, k, kc / k, oh, ow]);
            y5.swap_dims(0, 1).reshape([k * b, kc / k, oh, ow])
        };
        let [_, c, oh, ow] = h.dims();
        h.reshape([k, b, c * oh * ow])
    }

    /// The two convolutions (each with its ReLU and pooling) of `groups` copies from copy
    /// `first` on, as one convolution with `groups` groups.
    fn conv_layers(
        &self,
        mut h: Tensor<4>,
        groups: usize,
        first: usize,
        pool: &MaxPool2d,
        kernels: Kernels,
        stride: [usize; 2],
    ) -> Tensor<4> {
        for layer in 0..2 {
            let s = &self.shapes[2 * layer];
            let (wn, bn) = (s.iter().product::<usize>(), s[0]);
            let w = self.params[2 * layer]
                .clone()
                .narrow(0, first * wn, groups * wn);
            let w = w.reshape([groups * s[0], s[1], s[2], s[3]]);
            let bias = self.params[2 * layer + 1]
                .clone()
                .narrow(0, first * bn, groups * bn);
            let o = ConvOptions::new(stride, [0, 0], [1, 1], groups);
            let y = conv2d_of(h, w, Some(bias), o, kernels);
            h = max_pool2d(pool, y, true, kernels);
        }
        h
    }

    /// The linear layers from parameter `first` on, a ReLU between them.
    fn linear_chain(&self, mut h: Tensor<3>, first: usize) -> Tensor<3> {
        let k = self.copies;
        let layers = (self.params.len() - first) / 2;
        for i in 0..layers {
            let (wi, bi) = (first + 2 * i, first + 2 * i + 1);
            let (din, dout) = (self.shapes[wi][0], self.shapes[wi][1]);
            let w = self.params[wi].clone().reshape([k, din, dout]);
            let b = self.params[bi].clone().reshape([k, 1, dout]);
            h = h.matmul(w) + b;
            if i + 1 < layers {
                h = relu(h);
            }
        }
        h
    }

    /// Each client's mean cross-entropy on its batch `[K]`, from the logits `[K, b, classes]`
    /// and the targets `[K·b]`.
    pub fn losses(logits: Tensor<3>, targets: Tensor<1, Int>) -> Tensor<1> {
        let [k, b, _] = logits.dims();
        let picked = log_softmax(logits, 2).gather(2, targets.reshape([k, b, 1]));
        picked.mean_dim(1).reshape([k]).neg()
    }

    /// Move each copy's gradient out of `grads` into its flat vector `out[k]` (zero where a
    /// parameter has none).
    pub fn read_grads(&self, grads: &mut Gradients, out: &mut [&mut [f32]], layout: &Layout) {
        for (p, t) in self.params.iter().zip(&layout.tensors) {
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
