//! Character LSTMs for Shakespeare (§7.3): Embedding(80, 8) → stacked LSTM → Linear on the
//! last output. Hidden 256 × 2 is LEAF's reference (819,920 parameters with PyTorch's two
//! biases per gate); hidden 100 × 2 is FedDyn/FedDC's `shakes_LSTM` (133,520).

use burn::module::Module;
use burn::nn::{
    Embedding, EmbeddingConfig, GateController, Linear, LinearConfig, Lstm, LstmConfig,
};
use burn::tensor::{Device, Int, Tensor};

use crate::kernels::{Kernels, is_flex, lstm_layer, own_lstm, sigmoid, tanh};

/// The largest batch that runs through fedrun's fused layer ([`lstm_layer`]). Its step gemms
/// read the recurrent weight in place, which wins for the local steps' small batches (50 in
/// the papers' code); for an evaluation batch of hundreds of sequences, burn's per-gate
/// products (each packing its weight once for the whole batch) are faster.
pub const FUSED_MAX_BATCH: usize = 128;

#[derive(Module, Debug)]
pub struct CharLstm {
    emb: Embedding,
    pub(crate) layers: Vec<Lstm>,
    out: Linear,
    #[module(skip)]
    pub(crate) kernels: Kernels,
}

impl CharLstm {
    pub fn new(
        d_emb: usize,
        hidden: usize,
        layers: usize,
        vocab: usize,
        kernels: Kernels,
        device: &Device,
    ) -> Self {
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
            kernels,
        }
    }

    /// The logits of the character after each sequence. Burn's `Lstm` equations (gates i, f, o
    /// sigmoid, cell candidate tanh, h = o·tanh(c), zero initial state) over its own parameters,
    /// arranged for less memory traffic: each character's embedding looked up on its own and the
    /// per-character states kept as a list, so neither the forward nor the backward writes or
    /// slices a whole `[batch, length, hidden]` tensor per character (burn's `Lstm::forward`
    /// does both, quadratic in the length).
    pub fn forward(&self, x: Tensor<2, Int>) -> Tensor<2> {
        if own_lstm(&x.device(), x.dims()[0], FUSED_MAX_BATCH, self.kernels) {
            return self.forward_fused(x);
        }
        // elsewhere (a backend without fedrun's layer, or flex's large batches), each step's
        // four gates as two products (`gates_layer`) off flex; `run.kernels = "burn"` keeps
        // burn's gate by gate everywhere
        let run = match self.kernels == Kernels::Fedrun && !is_flex(&x.device()) {
            true => gates_layer,
            false => layer,
        };
        self.stepwise(x, run)
    }

    /// The logits with each layer run step by step by `run` ([`layer`] or [`gates_layer`]).
    fn stepwise(&self, x: Tensor<2, Int>, run: LayerFn) -> Tensor<2> {
        let [b, len] = x.dims();
        let d_emb = self.emb.weight.dims()[1];
        let mut seq: Vec<Tensor<2>> = (0..len)
            .map(|t| {
                let col = x.clone().slice([0..b, t..t + 1]);
                self.emb.forward(col).reshape([b, d_emb])
            })
            .collect();
        let n = self.layers.len();
        for (k, l) in self.layers.iter().enumerate() {
            seq = run(l, seq, k + 1 == n, self.kernels);
        }
        let last = seq.pop().expect("a sequence of at least one character");
        self.out.forward(last)
    }
}

impl CharLstm {
    /// The same equations with each layer's recurrence on fedrun's kernel ([`lstm_layer`]):
    /// the embeddings of all characters looked up at once, each layer's input projection for
    /// all characters as one matmul, then one call through time.
    fn forward_fused(&self, x: Tensor<2, Int>) -> Tensor<2> {
        let [b, len] = x.dims();
        let mut seq: Tensor<3> = self.emb.forward(x);
        for l in &self.layers {
            let d = seq.dims()[2];
            let (wx, wh, bias) = fused(l);
            let xw = seq.reshape([b * len, d]).matmul(wx) + bias.unsqueeze::<2>();
            seq = lstm_layer(xw.reshape([b, len, 4 * l.d_hidden]), wh);
        }
        let h = seq.dims()[2];
        self.out
            .forward(seq.slice([0..b, len - 1..len, 0..h]).reshape([b, h]))
    }
}

/// A layer's gates side by side in the order i, f, g, o: the input weights `[d, 4·hidden]`,
/// the recurrent weights `[hidden, 4·hidden]` and the two biases summed `[4·hidden]`.
fn fused(l: &Lstm) -> (Tensor<2>, Tensor<2>, Tensor<1>) {
    let forget = l.forget_gate.as_ref().expect("an LSTM with a forget gate");
    let gates = [&l.input_gate, forget, &l.cell_gate, &l.output_gate];
    let cat = |f: &dyn Fn(&GateController) -> Tensor<2>| {
        Tensor::cat(gates.iter().map(|g| f(g)).collect(), 1)
    };
    let bias = |lin: &Linear| lin.bias.as_ref().expect("an LSTM with biases").val();
    let b = gates
        .iter()
        .map(|g| bias(&g.input_transform) + bias(&g.hidden_transform))
        .collect();
    (
        cat(&|g| g.input_transform.weight.val()),
        cat(&|g| g.hidden_transform.weight.val()),
        Tensor::cat(b, 0),
    )
}

/// A layer's step-by-step form: the layer, the sequence, whether only the last state is kept,
/// the kernels.
type LayerFn = fn(&Lstm, Vec<Tensor<2>>, bool, Kernels) -> Vec<Tensor<2>>;

/// One layer over the sequence `xs` (one `[batch, d]` tensor per character): the hidden state
/// after each character, or after the last one only. Each gate is burn's own `gate_product`;
/// σ and tanh run on fedrun's kernels where they apply.
fn layer(l: &Lstm, xs: Vec<Tensor<2>>, last_only: bool, k: Kernels) -> Vec<Tensor<2>> {
    let forget = l.forget_gate.as_ref().expect("an LSTM with a forget gate");
    let b = xs.first().map_or(0, |x| x.dims()[0]);
    let device = l.input_gate.input_transform.weight.device();
    let mut h: Tensor<2> = Tensor::zeros([b, l.d_hidden], &device);
    let mut c: Tensor<2> = Tensor::zeros([b, l.d_hidden], &device);
    let mut out = Vec::with_capacity(if last_only { 1 } else { xs.len() });
    for x in xs {
        let gate = |g: &GateController| g.gate_product(x.clone(), h.clone());
        let (i, f) = (sigmoid(gate(&l.input_gate), k), sigmoid(gate(forget), k));
        let (o, g) = (
            sigmoid(gate(&l.output_gate), k),
            tanh(gate(&l.cell_gate), k),
        );
        c = f * c + i * g;
        h = o * tanh(c.clone(), k);
        if !last_only {
            out.push(h.clone());
        }
    }
    if last_only {
        out.push(h);
    }
    out
}

/// [`layer`] with the four gates side by side ([`fused`]): a step is one product of its input
/// and one of the hidden state (none at the first step, whose state is zero), the gates sliced
/// from their sum. Burn's `gate_product` makes eight products and eight bias additions a
/// step; on a GPU, where each is a kernel launch, this form launches a fraction of them. Each
/// step's input is its own tensor, so the backward pass slices no tensor of the whole sequence.
fn gates_layer(l: &Lstm, xs: Vec<Tensor<2>>, last_only: bool, k: Kernels) -> Vec<Tensor<2>> {
    let (wx, wh, bias) = fused(l);
    let (bias, hidden) = (bias.unsqueeze::<2>(), l.d_hidden);
    let b = xs.first().map_or(0, |x| x.dims()[0]);
    let mut h: Option<Tensor<2>> = None;
    let mut c: Tensor<2> = Tensor::zeros([b, hidden], &wx.device());
    let mut out = Vec::with_capacity(if last_only { 1 } else { xs.len() });
    for x in xs {
        let mut g = x.matmul(wx.clone()) + bias.clone();
        if let Some(h) = &h {
            g = g + h.clone().matmul(wh.clone());
        }
        let part = |i: usize| g.clone().narrow(1, i * hidden, hidden);
        let (i, f) = (sigmoid(part(0), k), sigmoid(part(1), k));
        let (cell, o) = (tanh(part(2), k), sigmoid(part(3), k));
        c = f * c + i * cell;
        let ht = o * tanh(c.clone(), k);
        if !last_only {
            out.push(ht.clone());
        }
        h = Some(ht);
    }
    if last_only {
        out.extend(h);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Distribution, Int};

    /// Burn's own `Lstm::forward` over the same parameters, the reference.
    fn reference(m: &CharLstm, x: Tensor<2, Int>) -> Tensor<2> {
        let mut h = m.emb.forward(x);
        for l in &m.layers {
            h = l.forward(h, None).0;
        }
        let [b, len, d] = h.dims();
        m.out
            .forward(h.slice([0..b, len - 1..len, 0..d]).reshape([b, d]))
    }

    #[test]
    fn forward_is_burns_lstm_and_fedruns_kernels_agree() {
        let device = Device::flex().autodiff();
        let mut m = CharLstm::new(8, 24, 2, 80, Kernels::Burn, &device);
        let x = Tensor::<2>::random([5, 11], Distribution::Uniform(0.0, 80.0), &device).int();
        let (a, r) = (m.forward(x.clone()), reference(&m, x.clone()));
        let diff = |a: Tensor<2>, b: Tensor<2>| (a - b).abs().max().into_scalar::<f32>();
        // the same ops in the same order: the same logits, bit for bit
        let bits = |t: &Tensor<2>| t.to_data().try_to_vec::<f32>().unwrap();
        assert_eq!(bits(&a), bits(&r), "logits");
        let (ga, gr) = (
            (a.clone() * a).sum().backward(),
            (r.clone() * r.clone()).sum().backward(),
        );
        let w = &m.layers[0]
            .forget_gate
            .as_ref()
            .unwrap()
            .hidden_transform
            .weight;
        let (wa, wr) = (w.grad(&ga).unwrap(), w.grad(&gr).unwrap());
        let scale = wr.clone().abs().max().into_scalar::<f32>();
        assert!(scale > 0.0);
        assert!(diff(wa, wr) < 1e-4 * scale, "a weight's gradient");
        let e = &m.emb.weight;
        let (ea, er) = (e.grad(&ga).unwrap(), e.grad(&gr).unwrap());
        let escale = er.clone().abs().max().into_scalar::<f32>();
        assert!(diff(ea, er) < 1e-4 * escale, "the embedding's gradient");
        // fedrun's σ and tanh: the same to float rounding, gradients too
        m.kernels = Kernels::Fedrun;
        let f = m.forward(x);
        assert!(
            diff(f.clone(), r.clone()) < 1e-5,
            "logits with fedrun's kernels"
        );
        let gf = (f.clone() * f).sum().backward();
        let wf = w.grad(&gf).unwrap();
        assert!(
            diff(wf, w.grad(&gr).unwrap()) < 1e-4 * scale,
            "its weight gradient"
        );
        // the fused layer's input projections, biases and embeddings get burn's gradients
        let ef = e.grad(&gf).unwrap();
        assert!(
            diff(ef, e.grad(&gr).unwrap()) < 1e-4 * escale,
            "its embedding gradient"
        );
        for l in &m.layers {
            let lin = &l.cell_gate.input_transform;
            let (wi, bi) = (&lin.weight, lin.bias.as_ref().unwrap());
            let ws = wi.grad(&gr).unwrap().abs().max().into_scalar::<f32>();
            let bs = bi.grad(&gr).unwrap().abs().max().into_scalar::<f32>();
            assert!(diff(wi.grad(&gf).unwrap(), wi.grad(&gr).unwrap()) < 1e-4 * ws);
            let db = bi.grad(&gf).unwrap() - bi.grad(&gr).unwrap();
            assert!(db.abs().max().into_scalar::<f32>() < 1e-4 * bs);
        }
    }

    #[test]
    fn the_gpu_form_two_products_a_step_is_the_gate_by_gate_form() {
        let device = Device::flex().autodiff();
        let m = CharLstm::new(8, 24, 2, 80, Kernels::Burn, &device);
        let x = Tensor::<2>::random([5, 11], Distribution::Uniform(0.0, 80.0), &device).int();
        let (a, r) = (m.stepwise(x.clone(), gates_layer), m.stepwise(x, layer));
        let diff = |a: Tensor<2>, b: Tensor<2>| (a - b).abs().max().into_scalar::<f32>();
        assert!(diff(a.clone(), r.clone()) < 1e-6, "logits");
        let (ga, gr) = (
            (a.clone() * a).sum().backward(),
            (r.clone() * r.clone()).sum().backward(),
        );
        for l in &m.layers {
            let gates = [
                &l.input_gate,
                l.forget_gate.as_ref().unwrap(),
                &l.cell_gate,
                &l.output_gate,
            ];
            for g in gates {
                for lin in [&g.input_transform, &g.hidden_transform] {
                    let w = &lin.weight;
                    let s = w.grad(&gr).unwrap().abs().max().into_scalar::<f32>();
                    assert!(s > 0.0);
                    assert!(diff(w.grad(&ga).unwrap(), w.grad(&gr).unwrap()) < 1e-5 * s);
                }
            }
        }
        let e = &m.emb.weight;
        let s = e.grad(&gr).unwrap().abs().max().into_scalar::<f32>();
        assert!(diff(e.grad(&ga).unwrap(), e.grad(&gr).unwrap()) < 1e-5 * s);
    }
}
