//! CIFAR ResNet-18 with GroupNorm(2) (§7.1): 3×3 stride-1 stem, no max-pool, BasicBlocks
//! [2, 2, 2, 2] of widths 64/128/256/512, 1×1 conv shortcut. Head: the FedNAR/FedExP code's
//! `avg_pool2d(kernel 3)` on the 4×4 map (top-left 3×3 window only), or a global average pool
//! (FedACG). 11,173,962 parameters for 10 classes.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, AvgPool2d, AvgPool2dConfig};
use burn::nn::{GroupNorm, GroupNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use super::projection::{Projection, project};
use crate::kernels::{Kernels, conv2d, group_norm};

pub const GROUPS: usize = 2;

fn conv3x3(cin: usize, cout: usize, stride: usize, device: &Device) -> Conv2d {
    Conv2dConfig::new([cin, cout], [3, 3])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
        .with_bias(false)
        .init(device)
}

fn gn(c: usize, device: &Device) -> GroupNorm {
    GroupNormConfig::new(GROUPS, c).init(device)
}

#[derive(Module, Debug)]
pub struct Block {
    pub(crate) conv1: Conv2d,
    pub(crate) gn1: GroupNorm,
    pub(crate) conv2: Conv2d,
    pub(crate) gn2: GroupNorm,
    pub(crate) shortcut: Option<(Conv2d, GroupNorm)>,
}

impl Block {
    fn new(cin: usize, cout: usize, stride: usize, device: &Device) -> Self {
        let shortcut = (stride != 1 || cin != cout).then(|| {
            (
                Conv2dConfig::new([cin, cout], [1, 1])
                    .with_stride([stride, stride])
                    .with_bias(false)
                    .init(device),
                gn(cout, device),
            )
        });
        Block {
            conv1: conv3x3(cin, cout, stride, device),
            gn1: gn(cout, device),
            conv2: conv3x3(cout, cout, 1, device),
            gn2: gn(cout, device),
            shortcut,
        }
    }

    fn forward(&self, x: Tensor<4>, k: Kernels) -> Tensor<4> {
        let idt = match &self.shortcut {
            Some((c, n)) => group_norm(n, conv2d(c, x.clone(), k), false, k),
            None => x.clone(),
        };
        let y = group_norm(&self.gn1, conv2d(&self.conv1, x, k), true, k);
        let y = group_norm(&self.gn2, conv2d(&self.conv2, y, k), false, k);
        relu(y + idt)
    }
}

#[derive(Module, Debug)]
pub enum Head {
    /// avg_pool2d(kernel 3, stride 3) on the 4×4 map: the FedNAR/FedExP code.
    FedNar(AvgPool2d),
    /// Global average pool: FedACG.
    Global(AdaptiveAvgPool2d),
}

#[derive(Module, Debug)]
pub struct ResNet18 {
    pub(crate) stem: Conv2d,
    pub(crate) stem_gn: GroupNorm,
    pub(crate) blocks: Vec<Block>,
    pub(crate) head: Head,
    /// MOON's projection head before the classifier (`model.projection > 0`).
    pub(crate) proj: Option<Projection>,
    fc: Linear,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl ResNet18 {
    pub fn new(
        classes: usize,
        fednar_head: bool,
        projection: usize,
        kernels: Kernels,
        device: &Device,
    ) -> Self {
        let mut blocks = Vec::new();
        let mut cin = 64;
        for (i, &w) in [64usize, 128, 256, 512].iter().enumerate() {
            blocks.push(Block::new(cin, w, if i == 0 { 1 } else { 2 }, device));
            blocks.push(Block::new(w, w, 1, device));
            cin = w;
        }
        let head = if fednar_head {
            Head::FedNar(AvgPool2dConfig::new([3, 3]).with_strides([3, 3]).init())
        } else {
            Head::Global(AdaptiveAvgPool2dConfig::new([1, 1]).init())
        };
        ResNet18 {
            stem: conv3x3(3, 64, 1, device),
            stem_gn: gn(64, device),
            blocks,
            head,
            proj: (projection > 0).then(|| Projection::new(512, projection, device)),
            fc: LinearConfig::new(if projection > 0 { projection } else { 512 }, classes)
                .init(device),
            kernels,
        }
    }

    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.fc.forward(self.features(x))
    }

    /// The representation the classifier reads: the pooled 512-d features, or their projection.
    pub fn features(&self, x: Tensor<4>) -> Tensor<2> {
        self.levels(x).1
    }

    /// The activations after the stem (level 0) and after each stage (levels 1–4), and the
    /// features.
    pub fn levels(&self, x: Tensor<4>) -> (Vec<Tensor<4>>, Tensor<2>) {
        let k = self.kernels;
        let mut x = group_norm(&self.stem_gn, conv2d(&self.stem, x, k), true, k);
        let mut levels = vec![x.clone()];
        for pair in self.blocks.chunks(2) {
            for b in pair {
                x = b.forward(x, k);
            }
            levels.push(x.clone());
        }
        let f = self.pool(x);
        (levels, f)
    }

    fn pool(&self, x: Tensor<4>) -> Tensor<2> {
        let x = match &self.head {
            Head::FedNar(p) => p.forward(x),
            Head::Global(p) => p.forward(x),
        };
        project(&self.proj, x.flatten(1, 3))
    }

    /// Logits from an activation at `level` (0 = after the stem, 1–4 = after that stage):
    /// the stages after it, the pool and the classifier (FedMLB's hybrid branches).
    pub fn forward_from(&self, level: usize, x: Tensor<4>) -> Tensor<2> {
        let k = self.kernels;
        let mut x = x;
        for b in &self.blocks[2 * level.min(4)..] {
            x = b.forward(x, k);
        }
        self.fc.forward(self.pool(x))
    }

    pub fn classify(&self, features: Tensor<2>) -> Tensor<2> {
        self.fc.forward(features)
    }
}
