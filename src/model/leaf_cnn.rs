//! LEAF's reference CNNs (§7.3; LEAF `models/femnist/cnn.py`, `models/celeba/cnn.py`), with
//! PyTorch's default initialisation as every fedrun model.
//!
//! - FEMNIST (6,603,710 parameters for 62 classes): conv 5×5 1→32 "same" → ReLU → maxpool 2;
//!   conv 5×5 32→64 "same" → ReLU → maxpool 2; 3136 → 2048 → ReLU → classes.
//! - CelebA (31,202 parameters for 2 classes): 4 × [conv 3×3 →32 "same" → batch norm →
//!   maxpool 2 ("same": the last window of an odd side is partial) → ReLU]; 84 → 42 → 21 → 11 →
//!   6; 6·6·32 → classes. LEAF's batch norm is `tf.layers.batch_normalization(training=True)`
//!   in training and in evaluation alike: it always normalises with the batch's own mean and
//!   (biased) variance, ε = 10⁻³, and keeps no running statistics. Its γ and β are parameters
//!   like any other (averaged by FedAvg); there are no statistics to average.

use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use crate::kernels::{Kernels, conv2d, linear, max_pool2d};

/// A conv with "same" padding (odd kernel, stride 1).
fn same_conv(cin: usize, cout: usize, k: usize, device: &Device) -> Conv2d {
    let p = k / 2;
    Conv2dConfig::new([cin, cout], [k, k])
        .with_padding(PaddingConfig2d::Explicit(p, p, p, p))
        .init(device)
}

#[derive(Module, Debug)]
pub struct FemnistCnn {
    pub(crate) conv1: Conv2d,
    pub(crate) conv2: Conv2d,
    pub(crate) pool: MaxPool2d,
    fc1: Linear,
    fc2: Linear,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl FemnistCnn {
    pub fn new(classes: usize, kernels: Kernels, device: &Device) -> Self {
        FemnistCnn {
            conv1: same_conv(1, 32, 5, device),
            conv2: same_conv(32, 64, 5, device),
            pool: MaxPool2dConfig::new([2, 2]).init(),
            fc1: LinearConfig::new(7 * 7 * 64, 2048).init(device),
            fc2: LinearConfig::new(2048, classes).init(device),
            kernels,
        }
    }

    /// The 2048-d hidden layer the classifier reads.
    pub fn features(&self, x: Tensor<4>) -> Tensor<2> {
        let k = self.kernels;
        let x = max_pool2d(&self.pool, conv2d(&self.conv1, x, k), true, k);
        let x = max_pool2d(&self.pool, conv2d(&self.conv2, x, k), true, k);
        relu(linear(&self.fc1, x.flatten(1, 3), k))
    }

    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(features)
    }
}

/// Batch normalisation with the batch's own statistics, always (LEAF's CelebA model).
#[derive(Module, Debug)]
pub struct BatchStatNorm {
    gamma: Param<Tensor<1>>,
    beta: Param<Tensor<1>>,
}

/// TensorFlow's default ε of `tf.layers.batch_normalization`.
pub const BN_EPS: f64 = 1e-3;

impl BatchStatNorm {
    pub fn new(channels: usize, device: &Device) -> Self {
        BatchStatNorm {
            gamma: Param::from_tensor(Tensor::ones([channels], device)),
            beta: Param::from_tensor(Tensor::zeros([channels], device)),
        }
    }

    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        batch_stat_norm(x, self.gamma.val(), self.beta.val(), BN_EPS)
    }
}

/// The norm with the batch's own statistics (mean and biased variance per channel over the
/// batch and the map) and the per-channel affine `gamma`, `beta` given as tensors (a cohort's
/// stacked parameters).
pub fn batch_stat_norm(x: Tensor<4>, gamma: Tensor<1>, beta: Tensor<1>, eps: f64) -> Tensor<4> {
    let c = x.dims()[1];
    let mean = x.clone().mean_dim(0).mean_dim(2).mean_dim(3);
    let centred = x - mean;
    let var = (centred.clone() * centred.clone())
        .mean_dim(0)
        .mean_dim(2)
        .mean_dim(3);
    let y = centred / (var + eps).sqrt();
    y * gamma.reshape([1, c, 1, 1]) + beta.reshape([1, c, 1, 1])
}

#[derive(Module, Debug)]
pub struct CelebaBlock {
    pub(crate) conv: Conv2d,
    norm: BatchStatNorm,
}

#[derive(Module, Debug)]
pub struct CelebaCnn {
    pub(crate) blocks: Vec<CelebaBlock>,
    pub(crate) pool: MaxPool2d,
    fc: Linear,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl CelebaCnn {
    pub fn new(classes: usize, kernels: Kernels, device: &Device) -> Self {
        let blocks = (0..4)
            .map(|i| CelebaBlock {
                conv: same_conv(if i == 0 { 3 } else { 32 }, 32, 3, device),
                norm: BatchStatNorm::new(32, device),
            })
            .collect();
        CelebaCnn {
            blocks,
            // TF's "same" pooling of stride 2: ceil(side / 2) windows, the last one partial
            pool: MaxPool2dConfig::new([2, 2]).with_ceil_mode(true).init(),
            fc: LinearConfig::new(6 * 6 * 32, classes).init(device),
            kernels,
        }
    }

    /// The flattened 6×6×32 map the classifier reads.
    pub fn features(&self, mut x: Tensor<4>) -> Tensor<2> {
        let k = self.kernels;
        for b in &self.blocks {
            let y = b.norm.forward(conv2d(&b.conv, x, k));
            x = max_pool2d(&self.pool, y, true, k);
        }
        x.flatten(1, 3)
    }

    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fc.forward(features)
    }
}
