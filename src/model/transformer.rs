//! The FedNAR Shakespeare transformer (§7.2): token embedding ×√d plus a learned positional
//! embedding, post-LN encoder layers (ReLU FFN, dropout), prediction from the last position.
//! With d = 128, 4 heads, FFN 512 and 6 layers it has 1,220,432 parameters.

use burn::module::Module;
use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
};
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

use crate::config::ModelSpec;
use crate::data::shakespeare::SEQ_LEN;

#[derive(Module, Debug)]
pub struct CharTransformer {
    tok: Embedding,
    pos: Embedding,
    encoder: TransformerEncoder,
    out: Linear,
    #[module(skip)]
    scale: f32,
}

impl CharTransformer {
    pub fn new(spec: &ModelSpec, vocab: usize, device: &Device) -> Self {
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
        }
    }

    pub fn forward(&self, x: Tensor<2, Int>) -> Tensor<2> {
        let [b, len] = x.dims();
        let device = x.device();
        let positions = Tensor::<1, Int>::arange(0..len as i64, &device)
            .reshape([1, len])
            .repeat_dim(0, b);
        let h = self.tok.forward(x) * self.scale + self.pos.forward(positions);
        let h = self.encoder.forward(TransformerEncoderInput::new(h));
        let [_, _, d] = h.dims();
        let last: Tensor<2> = h.slice([0..b, len - 1..len, 0..d]).reshape([b, d]);
        self.out.forward(last)
    }
}
