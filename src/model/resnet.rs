//! CIFAR ResNet-18 with GroupNorm(2) (§7.1): 3×3 stride-1 stem, no max-pool, BasicBlocks
//! [2, 2, 2, 2] of widths 64/128/256/512, 1×1 conv shortcut. Head: the FedNAR/FedExP code's
//! `avg_pool2d(kernel 3)` on the 4×4 map (top-left 3×3 window only), or a global average pool
//! (FedACG); MOON's projection head before the classifier when `model.projection > 0`.
//! 11,173,962 parameters for 10 classes.
//!
//! The K copies' maps run side by side in the channels (`[b, K·c, h, w]`): every convolution
//! one grouped convolution (a group per copy; on flex each copy's own), every GroupNorm(2) one
//! GroupNorm(2K) (a copy's two groups are its own channels, so its statistics are its own), the
//! head's pooling per channel, the linear layers batched products.

use burn::backend::ops::ConvOptions;
use burn::nn::pool::{AdaptiveAvgPool2dConfig, AvgPool2dConfig};
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use super::network::Network;
use super::ops::{Ops, from_channels, to_channels};
use super::outputs::Outputs3;
use super::params::{Builder, Conv, Layout, Linear, Norm};
use crate::data::Input;
use crate::kernels::{conv2d_copies, group_norm_of};

pub const GROUPS: usize = 2;
const GN_EPS: f64 = 1e-5;

/// A BasicBlock's stride and leaves: conv1, gn1, conv2, gn2, and the shortcut's convolution
/// and norm where the block changes the width or the side.
#[derive(Clone, Debug)]
struct Block {
    stride: usize,
    conv1: Conv,
    gn1: Norm,
    conv2: Conv,
    gn2: Norm,
    shortcut: Option<(Conv, Norm)>,
}

#[derive(Clone, Debug)]
pub struct ResNet {
    fednar_head: bool,
    layout: Layout,
    stem: Conv,
    stem_gn: Norm,
    blocks: Vec<Block>,
    /// MOON's projection head.
    proj: Option<[Linear; 2]>,
    fc: Linear,
}

impl ResNet {
    /// ResNet-18 on 3×`side`×`side` images, `classes` classes, with the FedNAR code's head if
    /// `fednar_head` and MOON's projection to `projection` if it is above 0. A training step
    /// keeps the batch's copy and what each layer declares ([`conv_norm`]; a linear layer its
    /// output and the next op's).
    pub fn new(classes: usize, fednar_head: bool, projection: usize, side: usize) -> ResNet {
        let mut b = Builder::new("ResNet");
        let r = "ResNet18";
        let input = (3 * side * side) as u128;
        b.keeps(input, 0);
        let stem = b.conv("stem", r, [64, 3, 3, 3], false);
        b.keeps_columns([64, 3, 3, 3], side * side, side * side);
        let stem_gn = b.norm("stem_gn", r, "GroupNorm", 64);
        conv_norm(&mut b, input, 64 * side * side, 0);
        let blocks = b.scope("blocks", r, |b| {
            let (mut cin, mut side) = (64, side);
            let mut blocks = Vec::new();
            for (i, &w) in [64usize, 128, 256, 512].iter().enumerate() {
                for (j, stride) in [(0, if i == 0 { 1 } else { 2 }), (1, 1)] {
                    let name = (2 * i + j).to_string();
                    let at = (cin, side);
                    blocks.push(b.scope(&name, "Vec", |b| block_params(b, at, w, stride)));
                    (cin, side) = (w, (side - 1) / stride + 1);
                }
            }
            blocks
        });
        let linear = |b: &mut Builder, (name, parent): (&str, &str), din: usize, dout: usize| {
            b.keeps_linear(din, dout);
            b.linear(name, parent, din, dout)
        };
        let proj = (projection > 0).then(|| {
            b.scope("proj", r, |b| {
                let l1 = linear(b, ("l1", "Projection"), 512, 512);
                [l1, linear(b, ("l2", "Projection"), 512, projection)]
            })
        });
        let d = if projection > 0 { projection } else { 512 };
        let fc = linear(&mut b, ("fc", r), d, classes);
        ResNet {
            fednar_head,
            layout: b.finish(),
            stem,
            stem_gn,
            blocks,
            proj,
            fc,
        }
    }
}

/// What a convolution and its GroupNorm to a map of `a` floats a sample keep, while `held` more
/// are held (a block's input, which its shortcut reads, and its branch's output): a training
/// step keeps the convolution's output and the norm's (its ReLU in place); an evaluation holds
/// `held`, the convolution's output, the norm's temporary and its output.
fn conv_norm(b: &mut Builder, held: u128, a: usize, more: usize) {
    let (a, more) = (a as u128, more as u128);
    b.keeps(2 * a, held + more + 3 * a);
}

/// A BasicBlock's leaves from `cin` channels of side `side` to `cout` at `stride`, in the
/// layout's order, and what a sample keeps: each convolution and norm's ([`conv_norm`]), the
/// residual sum's.
fn block_params(b: &mut Builder, (cin, side): (usize, usize), cout: usize, stride: usize) -> Block {
    let c = cout;
    let out = (side - 1) / stride + 1;
    let (x, a) = ((cin * side * side) as u128, c * out * out);
    let block = Block {
        stride,
        conv1: b.conv("conv1", "Block", [c, cin, 3, 3], false),
        gn1: b.norm("gn1", "Block", "GroupNorm", c),
        conv2: b.conv("conv2", "Block", [c, c, 3, 3], false),
        gn2: b.norm("gn2", "Block", "GroupNorm", c),
        shortcut: (stride != 1 || cin != cout).then(|| {
            b.scope("shortcut", "Block", |b| {
                let conv = b.conv("0", "Tuple", [c, cin, 1, 1], false);
                (conv, b.norm("1", "Tuple", "GroupNorm", c))
            })
        }),
    };
    let (map, l) = (side * side, out * out);
    b.keeps_columns([c, cin, 3, 3], map, l);
    b.keeps_columns([c, c, 3, 3], l, l);
    if block.shortcut.is_some() {
        b.keeps_columns([c, cin, 1, 1], map, l);
    }
    let branches = if block.shortcut.is_some() { 3 } else { 2 };
    (0..branches).for_each(|i| conv_norm(b, x, a, if i == 2 { a } else { 0 }));
    b.keeps(a as u128, 0);
    block
}

impl Network for ResNet {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The K copies' outputs on their batches `[K·b, 3, h, w]`: the logits, the features the
    /// classifier reads and the activations after the stem and after each stage (FedMLB), the
    /// copies side by side in the channels.
    fn outputs(&self, input: Input, ops: &mut Ops) -> Outputs3 {
        let x = input.images("ResNet-18");
        let stem = conv(&self.stem, to_channels(x, ops.copies), 1, ops);
        let mut h = norm(&self.stem_gn, stem, true, ops);
        let mut levels = vec![h.clone()];
        for pair in self.blocks.chunks(2) {
            for b in pair {
                h = block(b, h, ops);
            }
            levels.push(h.clone());
        }
        let (logits, features) = self.head(h, ops);
        Outputs3 {
            logits,
            features,
            levels,
        }
    }

    /// The logits from an activation at `level` (0: after the stem, 1–4: after that stage),
    /// the copies side by side in the channels: the stages after it, the pool and the
    /// classifier (FedMLB's hybrid branches).
    fn forward_from(&self, level: usize, x: Tensor<4>, ops: &mut Ops) -> Option<Tensor<3>> {
        let first = (2 * level).min(self.blocks.len());
        let mut h = x;
        for b in &self.blocks[first..] {
            h = block(b, h, ops);
        }
        Some(self.head(h, ops).0)
    }
}

impl ResNet {
    /// The pool, MOON's projection and the classifier: the logits and the features.
    fn head(&self, h: Tensor<4>, ops: &mut Ops) -> (Tensor<3>, Tensor<3>) {
        let pooled = if self.fednar_head {
            let pool = AvgPool2dConfig::new([3, 3]).with_strides([3, 3]).init();
            pool.forward(h)
        } else {
            AdaptiveAvgPool2dConfig::new([1, 1]).init().forward(h)
        };
        let mut f = from_channels(pooled, ops.copies);
        if let Some([l1, l2]) = &self.proj {
            let z = relu(l1.apply(f, ops));
            f = l2.apply(z, ops);
        }
        (self.fc.apply(f.clone(), ops), f)
    }
}

/// A BasicBlock of the K copies.
fn block(b: &Block, x: Tensor<4>, ops: &mut Ops) -> Tensor<4> {
    let y = norm(&b.gn1, conv(&b.conv1, x.clone(), b.stride, ops), true, ops);
    let y = norm(&b.gn2, conv(&b.conv2, y, 1, ops), false, ops);
    let idt = match &b.shortcut {
        Some((c, n)) => norm(n, conv(c, x, b.stride, ops), false, ops),
        None => x,
    };
    relu(y + idt)
}

/// The copies' convolution `c` (no bias: ResNet's have none; 3×3 padded by 1, or 1×1), one
/// group per copy.
fn conv(c: &Conv, x: Tensor<4>, stride: usize, ops: &Ops) -> Tensor<4> {
    let (w, _) = ops.conv(c);
    let pad = w.dims()[2] / 2;
    let o = ConvOptions::new([stride, stride], [pad, pad], [1, 1], ops.copies);
    conv2d_copies(x, w, None, o, ops.kernels)
}

/// The copies' GroupNorm(2) `n` as one of 2K groups, then a ReLU if `relu`.
fn norm(n: &Norm, x: Tensor<4>, relu: bool, ops: &Ops) -> Tensor<4> {
    let (gamma, beta) = ops.norm(n);
    group_norm_of(
        x,
        gamma,
        beta,
        GROUPS * ops.copies,
        GN_EPS,
        relu,
        ops.kernels,
    )
}
