//! The FedExP code's EMNIST CNN (§7.4; 1,206,590 parameters for 62 classes): conv 3×3 1→32 →
//! ReLU; conv 3×3 32→64 → ReLU; maxpool 2; dropout 0.25; 9216 → 128 → ReLU; dropout 0.5;
//! → classes. The two dropout rates are the code's, fixed (`model.dropout` is not read). It
//! takes any 1×28×28 input: FEMNIST's 62 classes, (E)MNIST through `idx`, MNIST.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use crate::kernels::{Kernels, conv2d, max_pool2d};

pub const DROPOUT_CONV: f64 = 0.25;
pub const DROPOUT_FC: f64 = 0.5;

#[derive(Module, Debug)]
pub struct EmnistCnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    drop1: Dropout,
    fc1: Linear,
    drop2: Dropout,
    fc2: Linear,
    #[module(skip)]
    kernels: Kernels,
}

impl EmnistCnn {
    pub fn new(classes: usize, kernels: Kernels, device: &Device) -> Self {
        EmnistCnn {
            conv1: Conv2dConfig::new([1, 32], [3, 3]).init(device),
            conv2: Conv2dConfig::new([32, 64], [3, 3]).init(device),
            pool: MaxPool2dConfig::new([2, 2]).init(),
            drop1: DropoutConfig::new(DROPOUT_CONV).init(),
            fc1: LinearConfig::new(12 * 12 * 64, 128).init(device),
            drop2: DropoutConfig::new(DROPOUT_FC).init(),
            fc2: LinearConfig::new(128, classes).init(device),
            kernels,
        }
    }

    /// The 128-d hidden layer the classifier reads (after its dropout).
    pub fn features(&self, x: Tensor<4>) -> Tensor<2> {
        let k = self.kernels;
        let x = relu(conv2d(&self.conv1, x, k));
        // relu(pool(·)) = pool(relu(·)), fused
        let x = max_pool2d(&self.pool, conv2d(&self.conv2, x, k), true, k);
        let x = self.drop1.forward(x).flatten(1, 3);
        self.drop2.forward(relu(self.fc1.forward(x)))
    }

    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(features)
    }
}
