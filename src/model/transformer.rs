//! The FedNAR Shakespeare transformer (§7.2): token embedding ×√d plus a learned positional
//! embedding, post-LN encoder layers (ReLU FFN, dropout), prediction from the last position.
//! With d = 128, 4 heads, FFN 512 and 6 layers it has 1,220,432 parameters.

use burn::module::Module;
use burn::nn::attention::MultiHeadAttention;
use burn::nn::transformer::{
    PositionWiseFeedForward, TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
    TransformerEncoderLayer,
};
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

use crate::config::ModelSpec;
use crate::data::shakespeare::SEQ_LEN;
use crate::kernels::{Kernels, dropout, softmax_last};

#[derive(Module, Debug)]
pub struct CharTransformer {
    tok: Embedding,
    pos: Embedding,
    pub(crate) encoder: TransformerEncoder,
    out: Linear,
    #[module(skip)]
    pub(crate) scale: f32,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl CharTransformer {
    pub fn new(spec: &ModelSpec, vocab: usize, kernels: Kernels, device: &Device) -> Self {
        let d = spec.d_model;
        let encoder = TransformerEncoderConfig::new(d, spec.d_ff, spec.heads, spec.layers)
            .with_dropout(spec.dropout)
            .with_norm_first(false)
            .with_activation(burn::nn::activation::ActivationConfig::Relu)
            .init(device);
        CharTransformer {
            tok: EmbeddingConfig::new(vocab, d).init(device),
            pos: EmbeddingConfig::new(SEQ_LEN, d).init(device),
            encoder,
            out: LinearConfig::new(d, vocab).init(device),
            scale: (d as f32).sqrt(),
            kernels,
        }
    }

    pub fn forward(&self, x: Tensor<2, Int>) -> Tensor<2> {
        let h = self.embed(x);
        let h = if self.kernels == Kernels::Burn {
            self.encoder.forward(TransformerEncoderInput::new(h))
        } else {
            self.layers(h, self.kernels)
        };
        self.last(h)
    }

    /// Token embedding ×√d plus the learned positional embedding.
    fn embed(&self, x: Tensor<2, Int>) -> Tensor<3> {
        let [b, len] = x.dims();
        let positions = Tensor::<1, Int>::arange(0..len as i64, &x.device())
            .reshape([1, len])
            .repeat_dim(0, b);
        self.tok.forward(x) * self.scale + self.pos.forward(positions)
    }

    /// The encoder layers through [`encoder_layer`].
    fn layers(&self, h: Tensor<3>, kernels: Kernels) -> Tensor<3> {
        let layers = self.encoder.layers.iter();
        layers.fold(h, |h, l| encoder_layer(l, h, kernels))
    }

    /// The logits from the last position.
    fn last(&self, h: Tensor<3>) -> Tensor<2> {
        let [b, len, d] = h.dims();
        self.out
            .forward(h.slice([0..b, len - 1..len, 0..d]).reshape([b, d]))
    }
}

/// burn's `TransformerEncoderLayer::forward` without masks, the same ops in the same order (with
/// `run.kernels = "burn"` the same dropout masks too), with the attention softmax and the
/// dropouts on fedrun's kernels.
fn encoder_layer(l: &TransformerEncoderLayer, x: Tensor<3>, kernels: Kernels) -> Tensor<3> {
    if l.norm_first || l.mha.quiet_softmax {
        return l.forward(x, None, None);
    }
    let r = dropout(&l.dropout, attention(&l.mha, x.clone(), kernels), kernels);
    let x = l.norm_1.forward(x + r);
    let r = dropout(
        &l.dropout,
        feed_forward(&l.pwff, x.clone(), kernels),
        kernels,
    );
    l.norm_2.forward(x + r)
}

/// burn's `PositionWiseFeedForward::forward`, with its dropout on fedrun's kernel.
fn feed_forward(f: &PositionWiseFeedForward, x: Tensor<3>, kernels: Kernels) -> Tensor<3> {
    let h = f.activation.forward(f.linear_inner.forward(x));
    f.linear_outer.forward(dropout(&f.dropout, h, kernels))
}

/// burn's `MultiHeadAttention::forward` for self-attention without masks: the context.
fn attention(mha: &MultiHeadAttention, x: Tensor<3>, kernels: Kernels) -> Tensor<3> {
    let [b, t, d] = x.dims();
    let heads = |lin: &Linear| {
        lin.forward(x.clone())
            .reshape([b, t, mha.n_heads, mha.d_k])
            .swap_dims(1, 2)
    };
    let (q, k, v) = (heads(&mha.query), heads(&mha.key), heads(&mha.value));
    let scores = q.matmul(k.transpose()).div_scalar((mha.d_k as f32).sqrt());
    let weights = dropout(&mha.dropout, softmax_last(scores, kernels), kernels);
    let context = weights.matmul(v).swap_dims(1, 2).reshape([b, t, d]);
    mha.output.forward(context)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    fn model(kernels: Kernels, dropout: f64, device: &Device) -> CharTransformer {
        let spec = ModelSpec {
            layers: 2,
            d_model: 32,
            heads: 4,
            d_ff: 64,
            dropout,
            ..ModelSpec::default()
        };
        CharTransformer::new(&spec, 80, kernels, device)
    }

    fn max_diff(a: Tensor<2>, b: Tensor<2>) -> f32 {
        (a - b).abs().max().into_scalar::<f32>()
    }

    /// With burn's kernels the layer loop is burn's encoder bit for bit; with fedrun's softmax
    /// it agrees to float rounding, gradients too.
    #[test]
    fn encoder_is_burns() {
        let device = Device::flex().autodiff();
        let x = Tensor::<2>::random([6, SEQ_LEN], Distribution::Uniform(0.0, 80.0), &device).int();
        let burn_model = model(Kernels::Burn, 0.0, &device);
        let bits = |t: &Tensor<2>| t.to_data().try_to_vec::<f32>().unwrap();
        let r = burn_model.forward(x.clone());
        let m = &burn_model;
        let loop_burn = m.last(m.layers(m.embed(x.clone()), Kernels::Burn));
        assert_eq!(
            bits(&loop_burn),
            bits(&r),
            "the layer loop with burn's softmax"
        );
        let mut ours = burn_model.clone();
        ours.kernels = Kernels::Fedrun;
        let o = ours.forward(x);
        assert!(max_diff(o.clone(), r.clone()) < 1e-4, "fedrun's softmax");
        let (go, gr) = (
            (o.clone() * o).sum().backward(),
            (r.clone() * r).sum().backward(),
        );
        let w = &burn_model.encoder.layers[0].mha.query.weight;
        let (a, b) = (w.grad(&go).unwrap(), w.grad(&gr).unwrap());
        let scale = b.clone().abs().max().into_scalar::<f32>();
        assert!(
            scale > 0.0 && max_diff(a, b) < 1e-3 * scale,
            "a query weight's gradient"
        );
    }
}
