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

use super::cursor::{Cursor, from_channels, to_channels};
use super::network::Network;
use super::outputs::Outputs3;
use super::params::Builder;
use crate::data::Input;
use crate::kernels::{conv2d_copies, group_norm_of};

pub const GROUPS: usize = 2;
const GN_EPS: f64 = 1e-5;

/// A BasicBlock's sizes.
#[derive(Clone, Copy, Debug)]
struct Block {
    cin: usize,
    cout: usize,
    stride: usize,
}

impl Block {
    fn shortcut(&self) -> bool {
        self.stride != 1 || self.cin != self.cout
    }
}

#[derive(Clone, Debug)]
pub struct ResNet {
    blocks: Vec<Block>,
    fednar_head: bool,
    projection: usize,
    classes: usize,
    /// The index of each block's first tensor in the layout, and of the head's.
    starts: Vec<usize>,
    head_at: usize,
}

impl ResNet {
    pub fn new(classes: usize, fednar_head: bool, projection: usize) -> ResNet {
        let mut blocks = Vec::new();
        let mut cin = 64;
        for (i, &w) in [64usize, 128, 256, 512].iter().enumerate() {
            blocks.push(Block {
                cin,
                cout: w,
                stride: if i == 0 { 1 } else { 2 },
            });
            blocks.push(Block {
                cin: w,
                cout: w,
                stride: 1,
            });
            cin = w;
        }
        let mut starts = Vec::new();
        let mut at = 3;
        for b in &blocks {
            starts.push(at);
            at += if b.shortcut() { 9 } else { 6 };
        }
        ResNet {
            blocks,
            fednar_head,
            projection,
            classes,
            starts,
            head_at: at,
        }
    }
}

impl Network for ResNet {
    fn layout(&self) -> Builder {
        let mut b = Builder::new("ResNet");
        let r = "ResNet18";
        b.conv("stem", r, [64, 3, 3, 3], false);
        b.norm("stem_gn", r, "GroupNorm", 64);
        b.scope("blocks", r, |b| {
            for (i, k) in self.blocks.iter().enumerate() {
                b.scope(&i.to_string(), "Vec", |b| {
                    let c = k.cout;
                    b.conv("conv1", "Block", [c, k.cin, 3, 3], false);
                    b.norm("gn1", "Block", "GroupNorm", c);
                    b.conv("conv2", "Block", [c, c, 3, 3], false);
                    b.norm("gn2", "Block", "GroupNorm", c);
                    if k.shortcut() {
                        b.scope("shortcut", "Block", |b| {
                            b.conv("0", "Tuple", [c, k.cin, 1, 1], false);
                            b.norm("1", "Tuple", "GroupNorm", c);
                        });
                    }
                });
            }
        });
        if self.projection > 0 {
            b.scope("proj", r, |b| {
                b.linear("l1", "Projection", 512, 512);
                b.linear("l2", "Projection", 512, self.projection);
            });
        }
        let d = match self.projection {
            0 => 512,
            p => p,
        };
        b.linear("fc", r, d, self.classes);
        b
    }

    /// The K copies' outputs on their batches `[K·b, 3, h, w]`: the logits, the features the
    /// classifier reads and the activations after the stem and after each stage (FedMLB), the
    /// copies side by side in the channels.
    fn outputs(&self, input: Input, c: &mut Cursor) -> Outputs3 {
        let Input::Images(x) = input else {
            panic!("ResNet-18 reads images")
        };
        let mut h = norm(conv(to_channels(x, c.copies), 1, c), true, c);
        let mut levels = vec![h.clone()];
        for pair in self.blocks.chunks(2) {
            for b in pair {
                h = block(b, h, c);
            }
            levels.push(h.clone());
        }
        let (logits, features) = self.head(h, c);
        Outputs3 {
            logits,
            features,
            levels,
        }
    }

    /// The logits from an activation at `level` (0: after the stem, 1–4: after that stage),
    /// the copies side by side in the channels: the stages after it, the pool and the
    /// classifier (FedMLB's hybrid branches).
    fn forward_from(&self, level: usize, x: Tensor<4>, c: &mut Cursor) -> Option<Tensor<3>> {
        let first = 2 * level.min(4);
        c.at = self.starts.get(first).copied().unwrap_or(self.head_at);
        let mut h = x;
        for b in &self.blocks[first..] {
            h = block(b, h, c);
        }
        Some(self.head(h, c).0)
    }
}

impl ResNet {
    /// The pool, MOON's projection and the classifier: the logits and the features.
    fn head(&self, h: Tensor<4>, c: &mut Cursor) -> (Tensor<3>, Tensor<3>) {
        let pooled = if self.fednar_head {
            let pool = AvgPool2dConfig::new([3, 3]).with_strides([3, 3]).init();
            pool.forward(h)
        } else {
            AdaptiveAvgPool2dConfig::new([1, 1]).init().forward(h)
        };
        let mut f = from_channels(pooled, c.copies);
        if self.projection > 0 {
            let z = relu(c.linear(f));
            f = c.linear(z);
        }
        (c.linear(f.clone()), f)
    }
}

/// A BasicBlock of the K copies: its parameters in the layout's order (conv1, gn1, conv2, gn2,
/// the shortcut's conv and norm).
fn block(b: &Block, x: Tensor<4>, c: &mut Cursor) -> Tensor<4> {
    let y = norm(conv(x.clone(), b.stride, c), true, c);
    let y = norm(conv(y, 1, c), false, c);
    let idt = match b.shortcut() {
        true => norm(conv(x, b.stride, c), false, c),
        false => x,
    };
    relu(y + idt)
}

/// The copies' next convolution (no bias: ResNet's have none; 3×3 padded by 1, or 1×1), one
/// group per copy.
fn conv(x: Tensor<4>, stride: usize, c: &mut Cursor) -> Tensor<4> {
    let w = c.conv();
    let pad = w.dims()[2] / 2;
    let o = ConvOptions::new([stride, stride], [pad, pad], [1, 1], c.copies);
    conv2d_copies(x, w, None, o, c.kernels)
}

/// The copies' next GroupNorm(2) as one of 2K groups, then a ReLU if `relu`.
fn norm(x: Tensor<4>, relu: bool, c: &mut Cursor) -> Tensor<4> {
    let (gamma, beta) = (c.vector(), c.vector());
    group_norm_of(x, gamma, beta, GROUPS * c.copies, GN_EPS, relu, c.kernels)
}
