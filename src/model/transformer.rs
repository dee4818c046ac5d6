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

use super::cursor::Cursor;
use super::network::Network;
use super::outputs::Outputs3;
use super::params::Builder;
use crate::config::ModelSpec;
use crate::data::Input;
use crate::data::shakespeare::SEQ_LEN;
use crate::kernels::softmax_last;

/// The ε of the encoder's LayerNorms (PyTorch's and burn's default).
const LN_EPS: f64 = 1e-5;

#[derive(Clone, Debug)]
pub struct Transformer {
    d: usize,
    d_ff: usize,
    heads: usize,
    layers: usize,
    vocab: usize,
    dropout: f64,
}

impl Transformer {
    pub fn new(spec: &ModelSpec, vocab: usize) -> Transformer {
        Transformer {
            d: spec.d_model,
            d_ff: spec.d_ff,
            heads: spec.heads,
            layers: spec.layers,
            vocab,
            dropout: spec.dropout,
        }
    }
}

impl Network for Transformer {
    fn layout(&self) -> Builder {
        let (d, ff) = (self.d, self.d_ff);
        let mut b = Builder::new("Transformer");
        let root = "CharTransformer";
        b.scope("tok", root, |b| {
            b.tensor("weight", "Embedding", &[self.vocab, d])
        });
        b.scope("pos", root, |b| {
            b.tensor("weight", "Embedding", &[SEQ_LEN, d])
        });
        b.scope("encoder", root, |b| {
            b.scope("layers", "TransformerEncoder", |b| {
                for i in 0..self.layers {
                    b.scope(&i.to_string(), "Vec", |b| {
                        let l = "TransformerEncoderLayer";
                        b.scope("mha", l, |b| {
                            for name in ["query", "key", "value", "output"] {
                                b.linear(name, "MultiHeadAttention", d, d);
                            }
                        });
                        b.scope("pwff", l, |b| {
                            b.linear("linear_inner", "PositionWiseFeedForward", d, ff);
                            b.linear("linear_outer", "PositionWiseFeedForward", ff, d);
                        });
                        b.norm("norm_1", l, "LayerNorm", d);
                        b.norm("norm_2", l, "LayerNorm", d);
                    });
                }
            });
        });
        b.linear("out", root, d, self.vocab);
        b
    }

    /// The K copies' logits `[K, b, vocab]` on their batches of character sequences `[K·b, T]`
    /// (the features are the logits).
    fn outputs(&self, input: Input, p: &mut Cursor) -> Outputs3 {
        let Input::Tokens(x) = input else {
            panic!("the transformer reads characters")
        };
        let k = p.copies;
        let [n, len] = x.dims();
        let b = n / k;
        let device = x.device();
        let (tok, [vocab, d]) = p.matrix();
        let (pos, [positions, _]) = p.matrix();
        let copy = crate::kernels::range(k, &device).reshape([k, 1, 1]);
        let tokens: Tensor<3, Int> = x.reshape([k, b, len]) + copy.clone().mul_scalar(vocab as i64);
        let at = crate::kernels::range(len, &device).reshape([1, 1, len]);
        let at: Tensor<3, Int> = at.repeat_dim(1, b) + copy.mul_scalar(positions as i64);
        let scale = (self.d as f32).sqrt();
        let h =
            embedding(tok, tokens.reshape([n, len])) * scale + embedding(pos, at.reshape([n, len]));
        let mut h: Tensor<3> = h.reshape([k, b * len, d]);
        for _ in 0..self.layers {
            h = self.layer(h, len, p);
        }
        let h4: Tensor<4> = h.reshape([k, b, len, d]);
        let last: Tensor<3> = h4.narrow(2, len - 1, 1).reshape([k, b, d]);
        Outputs3::logits_only(p.linear(last))
    }
}

impl Transformer {
    /// One encoder layer of the copies on `x` (`[K, b·T, d]`), its parameters in the layout's
    /// order: the attention's query, key, value and output, the feed-forward's two layers, the
    /// two norms (the first after the attention).
    fn layer(&self, x: Tensor<3>, len: usize, p: &mut Cursor) -> Tensor<3> {
        let k = p.copies;
        let [_, bt, d] = x.dims();
        let (h, dk) = (self.heads, self.d / self.heads);
        // [K, b·T, d] → [K·b, heads, T, d_k]
        let split =
            |t: Tensor<3>| -> Tensor<4> { t.reshape([k * (bt / len), len, h, dk]).swap_dims(1, 2) };
        let (qh, kh, vh) = (
            split(p.linear(x.clone())),
            split(p.linear(x.clone())),
            split(p.linear(x.clone())),
        );
        let scores = qh.matmul(kh.transpose()).div_scalar((dk as f32).sqrt());
        let weights = p.dropout(softmax_last(scores, p.kernels), self.dropout, 0);
        let context = weights.matmul(vh).swap_dims(1, 2).reshape([k, bt, d]);
        let r = p.linear(context);
        let r = p.dropout(r, self.dropout, 0);
        let (inner, outer) = (p.at, p.at + 2);
        p.at += 4;
        let n1 = (p.vector(), p.vector());
        let n2 = (p.vector(), p.vector());
        let after = p.at;
        let x = p.layer_norm(x + r, n1, LN_EPS);
        p.at = inner;
        let f = relu(p.linear(x.clone()));
        let f = p.dropout(f, self.dropout, 0);
        p.at = outer;
        let f = p.linear(f);
        let f = p.dropout(f, self.dropout, 0);
        p.at = after;
        p.layer_norm(x + f, n2, LN_EPS)
    }
}
