//! The FedExP CIFAR CNN ("FedNet", §7.4), a tiny variant for tests, and an MLP.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use super::projection::{Projection, project};
use crate::kernels::{Kernels, conv2d, max_pool2d};

/// conv5×5 c1 → ReLU → maxpool2 → conv5×5 c2 → ReLU → maxpool2 → fc … → classes.
#[derive(Module, Debug)]
pub struct Cnn {
    pub(crate) conv1: Conv2d,
    pub(crate) conv2: Conv2d,
    pub(crate) pool: MaxPool2d,
    fcs: Vec<Linear>,
    /// MOON's projection head before the classifier (`model.projection > 0`).
    proj: Option<Projection>,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl Cnn {
    fn with(
        c1: usize,
        c2: usize,
        hidden: &[usize],
        classes: usize,
        projection: usize,
        kernels: Kernels,
        device: &Device,
    ) -> Self {
        let mut dims = vec![c2 * 5 * 5];
        dims.extend_from_slice(hidden);
        let last = *dims.last().expect("dims");
        let proj = (projection > 0).then(|| Projection::new(last, projection, device));
        // the classifier's input: the projection, or the last hidden layer
        let mut fc_dims = dims.clone();
        if projection > 0 {
            fc_dims.push(projection);
        }
        Cnn {
            conv1: Conv2dConfig::new([3, c1], [5, 5]).init(device),
            conv2: Conv2dConfig::new([c1, c2], [5, 5]).init(device),
            pool: MaxPool2dConfig::new([2, 2]).init(),
            fcs: dims
                .windows(2)
                .map(|w| LinearConfig::new(w[0], w[1]).init(device))
                .chain(std::iter::once(
                    LinearConfig::new(*fc_dims.last().expect("dims"), classes).init(device),
                ))
                .collect(),
            proj,
            kernels,
        }
    }

    /// The FedExP CNN: 32 and 64 channels, 1600 → 384 → 192 → classes (744,330 parameters).
    pub fn fedexp(classes: usize, projection: usize, kernels: Kernels, device: &Device) -> Self {
        Self::with(32, 64, &[384, 192], classes, projection, kernels, device)
    }

    /// A small CNN of the same shape for tests and smoke runs.
    pub fn tiny(classes: usize, projection: usize, kernels: Kernels, device: &Device) -> Self {
        Self::with(4, 8, &[32], classes, projection, kernels, device)
    }

    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.classify(self.features(x))
    }

    /// The representation the classifier reads: the last hidden layer's activations (192-d in
    /// the FedExP CNN), or their projection.
    pub fn features(&self, x: Tensor<4>) -> Tensor<2> {
        let k = self.kernels;
        // relu(pool(·)) = pool(relu(·)), value and gradient (kernels::max_pool2d)
        let x = max_pool2d(&self.pool, conv2d(&self.conv1, x, k), true, k);
        let x = max_pool2d(&self.pool, conv2d(&self.conv2, x, k), true, k);
        let mut h: Tensor<2> = x.flatten(1, 3);
        for fc in &self.fcs[..self.fcs.len() - 1] {
            h = relu(fc.forward(h));
        }
        project(&self.proj, h)
    }

    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fcs[self.fcs.len() - 1].forward(features)
    }
}

/// input → hidden (ReLU) → classes (the Fed-LAMB MNIST MLP with hidden 200).
#[derive(Module, Debug)]
pub struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    pub fn new(input: usize, hidden: usize, classes: usize, device: &Device) -> Self {
        Mlp {
            fc1: LinearConfig::new(input, hidden).init(device),
            fc2: LinearConfig::new(hidden, classes).init(device),
        }
    }
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(self.features(x))
    }
    pub fn features(&self, x: Tensor<2>) -> Tensor<2> {
        relu(self.fc1.forward(x))
    }
    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(features)
    }
}
