//! The character transformer's stacked form (post-norm encoder layers, ReLU feed-forward, no
//! dropout): each copy's token and position tables stacked (a copy's indices offset into its
//! own), every linear layer a batched product `[K, b·T, in]·[K, in, out]`, the attention of all
//! copies' sequences as one `[K·b, heads, T, T]` product, each LayerNorm normalising per copy
//! before its own γ and β.

use burn::tensor::activation::relu;
use burn::tensor::module::{embedding, layer_norm};
use burn::tensor::{Int, Tensor};

use super::parts::Cursor;
use crate::kernels::{Kernels, softmax_last};
use crate::model::transformer::CharTransformer;
use burn::nn::transformer::TransformerEncoderLayer;

/// The ε of the encoder's LayerNorms (burn's `TransformerEncoderConfig` default).
const LN_EPS: f64 = 1e-5;

/// The K copies' logits `[K, b, vocab]` on their batches of character sequences `[K·b, T]`.
pub fn logits(m: &CharTransformer, x: Tensor<2, Int>, p: &mut Cursor) -> Tensor<3> {
    let k = p.copies;
    let [n, len] = x.dims();
    let b = n / k;
    let device = x.device();
    let (tok, [vocab, d]) = p.matrix();
    let (pos, [positions, _]) = p.matrix();
    let copy = Tensor::<1, Int>::arange(0..k as i64, &device).reshape([k, 1, 1]);
    let tokens: Tensor<3, Int> = x.reshape([k, b, len]) + copy.clone().mul_scalar(vocab as i64);
    let at = Tensor::<1, Int>::arange(0..len as i64, &device).reshape([1, 1, len]);
    let at: Tensor<3, Int> = at.repeat_dim(1, b) + copy.mul_scalar(positions as i64);
    let h =
        embedding(tok, tokens.reshape([n, len])) * m.scale + embedding(pos, at.reshape([n, len]));
    let mut h: Tensor<3> = h.reshape([k, b * len, d]);
    for l in &m.encoder.layers {
        h = layer(l, h, len, m.kernels, p);
    }
    let h4: Tensor<4> = h.reshape([k, b, len, d]);
    let last: Tensor<3> = h4.narrow(2, len - 1, 1).reshape([k, b, d]);
    let (w, bias) = p.linear();
    last.matmul(w) + bias
}

/// One encoder layer `l` of the copies on `x` (`[K, b·T, d]`), its parameters in the model's
/// order: the attention's query, key, value and output, the feed-forward's two layers, then
/// the two norms (the first after the attention, as the model applies them).
fn layer(
    l: &TransformerEncoderLayer,
    x: Tensor<3>,
    len: usize,
    kern: Kernels,
    p: &mut Cursor,
) -> Tensor<3> {
    let k = p.copies;
    let (q, kk, v, o) = (p.linear(), p.linear(), p.linear(), p.linear());
    let (inner, outer) = (p.linear(), p.linear());
    let (n1, n2) = ((p.vector(), p.vector()), (p.vector(), p.vector()));
    let proj =
        |x: Tensor<3>, (w, bias): &(Tensor<3>, Tensor<3>)| x.matmul(w.clone()) + bias.clone();
    let [_, bt, d] = x.dims();
    let (h, dk) = (l.mha.n_heads, l.mha.d_k);
    // [K, b·T, d] → [K·b, heads, T, d_k]
    let split =
        |t: Tensor<3>| -> Tensor<4> { t.reshape([k * (bt / len), len, h, dk]).swap_dims(1, 2) };
    let (qh, kh, vh) = (
        split(proj(x.clone(), &q)),
        split(proj(x.clone(), &kk)),
        split(proj(x.clone(), &v)),
    );
    let scores = qh.matmul(kh.transpose()).div_scalar((dk as f32).sqrt());
    let context = softmax_last(scores, kern)
        .matmul(vh)
        .swap_dims(1, 2)
        .reshape([k, bt, d]);
    let x = norm(x + proj(context, &o), n1, k);
    let f = proj(relu(proj(x.clone(), &inner)), &outer);
    norm(x + f, n2, k)
}

/// LayerNorm over the last axis of each copy's rows, then the copy's own γ and β (`[K·d]`).
fn norm(x: Tensor<3>, (gamma, beta): (Tensor<1>, Tensor<1>), k: usize) -> Tensor<3> {
    let d = x.dims()[2];
    let ones = Tensor::<1>::ones([d], &x.device());
    let y = layer_norm(x, ones, None, LN_EPS);
    y * gamma.reshape([k, 1, d]) + beta.reshape([k, 1, d])
}
