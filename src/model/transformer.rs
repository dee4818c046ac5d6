//! The FedNAR Shakespeare transformer (§7.2): token embedding ×√d plus a learned positional
//! embedding, post-LN encoder layers (ReLU feed-forward, dropout `model.dropout` after the
//! attention weights, on each residual branch and inside the feed-forward, as PyTorch's and
//! burn's encoder layers place it), prediction from the last position. With d = 128, 4 heads,
//! FFN 512 and 6 layers it has 1,220,432 parameters.
//!
//! The K copies: each copy's token and position tables stacked (a copy's indices offset into
//! its own), every linear layer a batched product `[K, b·T, in]·[K, in, out]`, the attention of
//! all copies' sequences one `[K·b, heads, T, T]` product, each LayerNorm normalising per copy
//! before its own γ and β.

use burn::tensor::activation::relu;
use burn::tensor::module::embedding;
use burn::tensor::{Int, Tensor};

use super::network::Network;
use super::ops::Ops;
use super::outputs::Outputs3;
use super::params::{Builder, Layout, Linear, Norm, Param, Role};
use crate::config::ModelSpec;
use crate::data::Input;
use crate::data::shakespeare::SEQ_LEN;
use crate::kernels::softmax_last;

/// The ε of the encoder's LayerNorms (PyTorch's and burn's default).
const LN_EPS: f64 = 1e-5;

/// An encoder layer's leaves: the attention's query, key, value and output, the feed-forward's
/// two layers, the norms after the attention and after the feed-forward.
#[derive(Clone, Debug)]
struct EncoderLayer {
    query: Linear,
    key: Linear,
    value: Linear,
    output: Linear,
    inner: Linear,
    outer: Linear,
    norm_1: Norm,
    norm_2: Norm,
}

#[derive(Clone, Debug)]
pub struct Transformer {
    d: usize,
    heads: usize,
    dropout: f64,
    layout: Layout,
    tok: Param,
    pos: Param,
    layers: Vec<EncoderLayer>,
    out: Linear,
}

impl Transformer {
    /// The transformer of `spec` over `vocab` characters, its parameters in the order of the
    /// burn modules it was first written as.
    pub fn new(spec: &ModelSpec, vocab: usize) -> Transformer {
        let d = spec.d_model;
        let mut b = Builder::new("Transformer");
        let root = "CharTransformer";
        let tok = b.embedding("tok", root, vocab, d);
        let pos = b.embedding("pos", root, SEQ_LEN, d);
        let layers: Vec<EncoderLayer> = b.scope("encoder", root, |b| {
            b.scope("layers", "TransformerEncoder", |b| {
                let layer = |i: usize, b: &mut Builder| {
                    b.scope(&i.to_string(), "Vec", |b| {
                        encoder_layer(b, d, spec.d_ff, spec.heads)
                    })
                };
                (0..spec.layers).map(|i| layer(i, b)).collect()
            })
        });
        let out = b.linear("out", root, d, vocab);
        // model.identical_layers: the first layer's values copied into the others (PyTorch's
        // encoder deep-copies one layer)
        let start = |l: &EncoderLayer| b.offset(l.query.weight);
        if let [first, second, ..] = &layers[..] {
            let first = start(first)..start(second);
            let rest: Vec<usize> = layers[1..].iter().map(start).collect();
            rest.into_iter().for_each(|to| b.repeat(first.clone(), to));
        }
        Transformer {
            d,
            heads: spec.heads,
            dropout: spec.dropout,
            layout: b.finish(),
            tok,
            pos,
            layers,
            out,
        }
    }
}

/// An encoder layer's leaves of width `d`, feed-forward width `ff` and `heads` heads, in the
/// layout's order, and what a sample's sequence keeps: a training step its projections,
/// feed-forward, norms and dropout masks, and each head's attention weights; an evaluation its
/// feed-forward and one head's weights at the peak.
fn encoder_layer(b: &mut Builder, d: usize, ff: usize, heads: usize) -> EncoderLayer {
    let (t, dm, f, h) = (SEQ_LEN as u128, d as u128, ff as u128, heads as u128);
    let train = (t * (12 * dm + 2 * f)).saturating_add(3 * h * t * t);
    b.keeps(train, (t * (f + 3 * dm)).saturating_add(h * t * t));
    let l = "TransformerEncoderLayer";
    let mha = "MultiHeadAttention";
    let [query, key, value, output] = b.scope("mha", l, |b| {
        ["query", "key", "value", "output"].map(|name| {
            let weight = Role::Attention {
                d,
                output: name == "output",
            };
            b.linear_as((name, mha, "Linear"), d, d, [weight, Role::AttentionBias])
        })
    });
    let pw = "PositionWiseFeedForward";
    let (inner, outer) = b.scope("pwff", l, |b| {
        (
            b.linear("linear_inner", pw, d, ff),
            b.linear("linear_outer", pw, ff, d),
        )
    });
    EncoderLayer {
        query,
        key,
        value,
        output,
        inner,
        outer,
        norm_1: b.norm("norm_1", l, "LayerNorm", d),
        norm_2: b.norm("norm_2", l, "LayerNorm", d),
    }
}

impl Network for Transformer {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The K copies' logits `[K, b, vocab]` on their batches of character sequences `[K·b, T]`
    /// (the features are the logits).
    fn outputs(&self, input: Input, p: &mut Ops) -> Outputs3 {
        let x = input.tokens("the transformer");
        let k = p.copies;
        let [n, len] = x.dims();
        let b = n / k;
        let device = x.device();
        let (tok, [vocab, d]) = p.matrix(self.tok);
        let (pos, [positions, _]) = p.matrix(self.pos);
        let copy = crate::kernels::range(k, &device).reshape([k, 1, 1]);
        let tokens: Tensor<3, Int> = x.reshape([k, b, len]) + copy.clone().mul_scalar(vocab as i64);
        let at = crate::kernels::range(len, &device).reshape([1, 1, len]);
        let at: Tensor<3, Int> = at.repeat_dim(1, b) + copy.mul_scalar(positions as i64);
        let scale = (self.d as f32).sqrt();
        let h =
            embedding(tok, tokens.reshape([n, len])) * scale + embedding(pos, at.reshape([n, len]));
        let mut h: Tensor<3> = h.reshape([k, b * len, d]);
        for l in &self.layers {
            h = self.layer(l, h, len, p);
        }
        let h4: Tensor<4> = h.reshape([k, b, len, d]);
        let last: Tensor<3> = h4.narrow(2, len - 1, 1).reshape([k, b, d]);
        Outputs3::logits_only(self.out.apply(last, p))
    }
}

impl Transformer {
    /// The encoder layer `l` of the copies on `x` (`[K, b·T, d]`).
    fn layer(&self, l: &EncoderLayer, x: Tensor<3>, len: usize, p: &mut Ops) -> Tensor<3> {
        let k = p.copies;
        let [_, bt, d] = x.dims();
        let (h, dk) = (self.heads, self.d / self.heads);
        // [K, b·T, d] → [K·b, heads, T, d_k]
        let split =
            |t: Tensor<3>| -> Tensor<4> { t.reshape([k * (bt / len), len, h, dk]).swap_dims(1, 2) };
        let (qh, kh, vh) = (
            split(l.query.apply(x.clone(), p)),
            split(l.key.apply(x.clone(), p)),
            split(l.value.apply(x.clone(), p)),
        );
        let scores = qh.matmul(kh.transpose()).div_scalar((dk as f32).sqrt());
        let weights = p.dropout(softmax_last(scores, p.kernels), self.dropout, 0);
        let context = weights.matmul(vh).swap_dims(1, 2).reshape([k, bt, d]);
        let r = l.output.apply(context, p);
        let r = p.dropout(r, self.dropout, 0);
        let x = p.layer_norm(x + r, &l.norm_1, LN_EPS);
        let f = relu(l.inner.apply(x.clone(), p));
        let f = p.dropout(f, self.dropout, 0);
        let f = l.outer.apply(f, p);
        let f = p.dropout(f, self.dropout, 0);
        p.layer_norm(x + f, &l.norm_2, LN_EPS)
    }
}
