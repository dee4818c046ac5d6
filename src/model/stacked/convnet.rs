//! The stacked form of the plain CNNs (the FedExP CIFAR CNN and its tiny variant, LEAF's
//! FEMNIST and CelebA CNNs, the Fed-LAMB MNIST CNN without dropout): stages of a convolution,
//! an optional batch-statistics norm, a max-pool and a ReLU, then linear layers. The copies'
//! stages run on their maps side by side in the channels (`[b, K·c, h, w]`), each convolution
//! one grouped convolution and each norm per channel, so per copy; on flex with fedrun's kernels
//! each copy's stages run on its own batch instead, on the kernels one client at a time uses
//! (a grouped convolution takes burn's slower direct path there: twice the round's time with 50
//! copies of the CIFAR CNN).

use burn::backend::ops::ConvOptions;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2d;
use burn::nn::pool::MaxPool2d;
use burn::tensor::Tensor;

use super::parts::{Cursor, Outputs3, linear_chain, to_channels};
use crate::kernels::{Kernels, conv2d_of, is_flex, max_pool2d};
use crate::model::Model;
use crate::model::leaf_cnn::{BN_EPS, batch_stat_norm};

/// One stage: a convolution (stride, symmetric padding), a norm with the batch's statistics
/// (its ε) or none, then max-pool and ReLU.
struct Stage {
    stride: [usize; 2],
    padding: [usize; 2],
    norm: Option<f64>,
}

impl Stage {
    fn of(c: &Conv2d, norm: Option<f64>) -> Stage {
        let padding = match c.padding {
            PaddingConfig2d::Explicit(t, l, b, r) if t == b && l == r => [t, l],
            _ => [0, 0],
        };
        Stage {
            stride: c.stride,
            padding,
            norm,
        }
    }

    /// Its parameter tensors: the convolution's weight and bias, and the norm's γ and β.
    fn tensors(&self) -> usize {
        if self.norm.is_some() { 4 } else { 2 }
    }
}

/// A CNN's stages, its pooling and kernels.
pub struct ConvNet<'m> {
    stages: Vec<Stage>,
    pool: &'m MaxPool2d,
    kernels: Kernels,
}

impl<'m> ConvNet<'m> {
    /// The stages of `model`, if it is one of the plain CNNs.
    pub fn of(model: &'m Model) -> Option<ConvNet<'m>> {
        let two = |a: &Conv2d, b: &Conv2d| vec![Stage::of(a, None), Stage::of(b, None)];
        let (stages, pool, kernels) = match model {
            Model::Cnn(m) => (two(&m.conv1, &m.conv2), &m.pool, m.kernels),
            Model::FemnistCnn(m) => (two(&m.conv1, &m.conv2), &m.pool, m.kernels),
            Model::MnistCnn(m) => (two(&m.conv1, &m.conv2), &m.pool, m.kernels),
            Model::CelebaCnn(m) => {
                let stages = m
                    .blocks
                    .iter()
                    .map(|b| Stage::of(&b.conv, Some(BN_EPS)))
                    .collect();
                (stages, &m.pool, m.kernels)
            }
            _ => return None,
        };
        Some(ConvNet {
            stages,
            pool,
            kernels,
        })
    }

    /// The K copies' outputs on their batches `[K·b, c, h, w]`.
    pub fn outputs(&self, x: Tensor<4>, all: &mut Cursor) -> Outputs3 {
        let k = all.copies;
        let n_conv: usize = self.stages.iter().map(Stage::tensors).sum();
        let features: Tensor<3> = if self.kernels == Kernels::Fedrun && is_flex(&x.device()) {
            let b = x.dims()[0] / k;
            let per: Vec<Tensor<2>> = (0..k)
                .map(|i| {
                    let own = all.copy(i, n_conv);
                    let mut one = Cursor::new(&own, all.shapes, 1);
                    let y = self.stages(x.clone().narrow(0, i * b, b), &mut one);
                    y.flatten(1, 3)
                })
                .collect();
            Tensor::stack(per, 0)
        } else {
            let y = self.stages(to_channels(x, k), all);
            let [b, kc, h, w] = y.dims();
            y.reshape([b, k, kc / k * h * w]).swap_dims(0, 1)
        };
        all.at = n_conv;
        linear_chain(features, all)
    }

    /// The stages on `x`, `cursor.copies` copies side by side in the channels.
    fn stages(&self, mut x: Tensor<4>, cursor: &mut Cursor) -> Tensor<4> {
        let k = self.kernels;
        for st in &self.stages {
            let (w, bias) = (cursor.conv(), cursor.vector());
            let o = ConvOptions::new(st.stride, st.padding, [1, 1], cursor.copies);
            let mut y = conv2d_of(x, w, Some(bias), o, k);
            if let Some(eps) = st.norm {
                y = batch_stat_norm(y, cursor.vector(), cursor.vector(), eps);
            }
            x = max_pool2d(self.pool, y, true, k);
        }
        x
    }
}
