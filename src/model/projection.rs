//! MOON's projection head (`ModelFedCon` in the official MOON code): the representation h goes
//! through `Linear(d, d) → ReLU → Linear(d, out)` to z, and the classifier reads z. Added to the
//! CNN and ResNet-18 when `model.projection > 0`.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

#[derive(Module, Debug)]
pub struct Projection {
    l1: Linear,
    l2: Linear,
}

impl Projection {
    pub fn new(d: usize, out: usize, device: &Device) -> Self {
        Projection {
            l1: LinearConfig::new(d, d).init(device),
            l2: LinearConfig::new(d, out).init(device),
        }
    }

    pub fn forward(&self, h: Tensor<2>) -> Tensor<2> {
        self.l2.forward(relu(self.l1.forward(h)))
    }
}

/// h, or its projection when there is a head.
pub fn project(head: &Option<Projection>, h: Tensor<2>) -> Tensor<2> {
    match head {
        Some(p) => p.forward(h),
        None => h,
    }
}
