//! ResNet-18's stacked form: the K copies' feature maps side by side in the channels
//! (`[b, K·c, h, w]`), every convolution one grouped convolution (a group per copy), every
//! GroupNorm(2) one GroupNorm(2K) (a copy's two groups are its own channels, so its
//! statistics are its own), the head's pooling per channel, and the classifier a batched
//! product.

use burn::backend::ops::ConvOptions;
use burn::nn::conv::Conv2d;
use burn::nn::{GroupNorm, PaddingConfig2d};
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use super::parts::{Cursor, Outputs3, copies_conv};
use crate::kernels::{Kernels, group_norm_of};
use crate::model::resnet::{Block, Head, ResNet18};

/// A convolution's symmetric padding (ResNet's all have one).
fn padding(c: &Conv2d) -> Option<[usize; 2]> {
    match c.padding {
        PaddingConfig2d::Valid => Some([0, 0]),
        PaddingConfig2d::Explicit(t, l, b, r) if t == b && l == r => Some([t, l]),
        _ => None,
    }
}

/// The K copies' outputs (the pooled features and the logits) on `x`, the copies' batches side by side in the
/// channels (`[b, K·3, h, w]`).
pub fn outputs(m: &ResNet18, x: Tensor<4>, p: &mut Cursor) -> Outputs3 {
    let k = m.kernels;
    let mut h = conv(&m.stem, x, p, k);
    h = norm(&m.stem_gn, h, p, true, k);
    for b in &m.blocks {
        h = block(b, h, p, k);
    }
    let h = match &m.head {
        Head::FedNar(pool) => pool.forward(h),
        Head::Global(pool) => pool.forward(h),
    };
    let [b, kc, ..] = h.dims();
    let copies = p.copies;
    let f: Tensor<3> = h.reshape([b, copies, kc / copies]).swap_dims(0, 1);
    let (w, bias) = p.linear();
    Outputs3 {
        logits: f.clone().matmul(w) + bias,
        features: f,
    }
}

/// A BasicBlock of the K copies: its parameters in the model's order (conv1, gn1, conv2, gn2,
/// the shortcut's conv and norm).
fn block(b: &Block, x: Tensor<4>, p: &mut Cursor, k: Kernels) -> Tensor<4> {
    let y = conv(&b.conv1, x.clone(), p, k);
    let y = norm(&b.gn1, y, p, true, k);
    let y = conv(&b.conv2, y, p, k);
    let y = norm(&b.gn2, y, p, false, k);
    let idt = match &b.shortcut {
        Some((c, n)) => {
            let s = conv(c, x, p, k);
            norm(n, s, p, false, k)
        }
        None => x,
    };
    relu(y + idt)
}

/// The copies' convolution `c` (no bias: ResNet's have none), one group per copy.
fn conv(c: &Conv2d, x: Tensor<4>, p: &mut Cursor, k: Kernels) -> Tensor<4> {
    let w = p.conv();
    let pad = padding(c).expect("ResNet-18's convolutions are padded symmetrically");
    let o = ConvOptions::new(c.stride, pad, [1, 1], p.copies);
    copies_conv(x, w, o, k)
}

/// The copies' GroupNorm `n` as one with K times its groups, then a ReLU if `relu`.
fn norm(n: &GroupNorm, x: Tensor<4>, p: &mut Cursor, relu: bool, k: Kernels) -> Tensor<4> {
    let (gamma, beta) = (p.vector(), p.vector());
    group_norm_of(x, gamma, beta, n.num_groups * p.copies, n.epsilon, relu, k)
}
