//! Character LSTMs for Shakespeare (§7.3): Embedding(80, 8) → stacked LSTM → Linear on the
//! last output. Hidden 256 × 2 is LEAF's reference (819,920 parameters with PyTorch's two
//! biases per gate); hidden 100 × 2 is FedDyn/FedDC's `shakes_LSTM` (133,520).

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig, Lstm, LstmConfig};
use burn::tensor::{Device, Int, Tensor};

#[derive(Module, Debug)]
pub struct CharLstm {
    emb: Embedding,
    layers: Vec<Lstm>,
    out: Linear,
}

impl CharLstm {
    pub fn new(d_emb: usize, hidden: usize, layers: usize, vocab: usize, device: &Device) -> Self {
        let mut ls = Vec::new();
        for i in 0..layers {
            ls.push(
                LstmConfig::new(if i == 0 { d_emb } else { hidden }, hidden, true).init(device),
            );
        }
        CharLstm {
            emb: EmbeddingConfig::new(vocab, d_emb).init(device),
            layers: ls,
            out: LinearConfig::new(hidden, vocab).init(device),
        }
    }

    pub fn forward(&self, x: Tensor<2, Int>) -> Tensor<2> {
        let mut h = self.emb.forward(x);
        for l in &self.layers {
            h = l.forward(h, None).0;
        }
        let [b, len, d] = h.dims();
        self.out
            .forward(h.slice([0..b, len - 1..len, 0..d]).reshape([b, d]))
    }
}
