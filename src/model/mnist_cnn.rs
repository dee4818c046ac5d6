//! The Fed-LAMB MNIST CNN (§7.4; the classic PyTorch MNIST example net, 21,840 parameters for
//! 10 classes): conv5×5 1→10 → maxpool2 → ReLU; conv5×5 10→20 → Dropout2d → maxpool2 → ReLU;
//! 320 → 50 → ReLU → dropout → classes. The channel sizes and p (`model.dropout`; 0.5 in the
//! Fed-LAMB configs) are the example's, which the paper's text matches but does not state.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use crate::kernels::{Kernels, conv2d, max_pool2d};

#[derive(Module, Debug)]
pub struct MnistCnn {
    pub(crate) conv1: Conv2d,
    pub(crate) conv2: Conv2d,
    pub(crate) pool: MaxPool2d,
    fc1: Linear,
    fc2: Linear,
    drop: Dropout,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl MnistCnn {
    pub fn new(classes: usize, dropout: f64, kernels: Kernels, device: &Device) -> Self {
        MnistCnn {
            conv1: Conv2dConfig::new([1, 10], [5, 5]).init(device),
            conv2: Conv2dConfig::new([10, 20], [5, 5]).init(device),
            pool: MaxPool2dConfig::new([2, 2]).init(),
            fc1: LinearConfig::new(320, 50).init(device),
            fc2: LinearConfig::new(50, classes).init(device),
            drop: DropoutConfig::new(dropout).init(),
            kernels,
        }
    }

    /// The 50-d hidden layer the classifier reads (after its dropout).
    pub fn features(&self, x: Tensor<4>) -> Tensor<2> {
        let k = self.kernels;
        // relu(pool(·)) = pool(relu(·)), fused (kernels::max_pool2d)
        let x = max_pool2d(&self.pool, conv2d(&self.conv1, x, k), true, k);
        let y = conv2d(&self.conv2, x, k);
        // Dropout2d: one keep/drop draw per (image, channel), the same dropout layer applied
        // to a [B, C, 1, 1] mask (a no-op outside training)
        let [b, c, _, _] = y.dims();
        let mask = self
            .drop
            .forward(Tensor::<4>::ones([b, c, 1, 1], &y.device()));
        let x = max_pool2d(&self.pool, y * mask, true, k);
        self.drop.forward(relu(self.fc1.forward(x.flatten(1, 3))))
    }

    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(features)
    }

    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.classify(self.features(x))
    }
}
