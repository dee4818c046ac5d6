//! Character LSTMs for Shakespeare (§7.3): Embedding(80, 8) → 2 stacked LSTM layers → a linear
//! layer on the last step's state. Hidden 256 is LEAF's reference (819,920 parameters with
//! PyTorch's two biases per gate); hidden 100 is FedDyn/FedDC's `shakes_LSTM` (133,520). The
//! equations are PyTorch's and burn's: gates i, f, o sigmoid, cell candidate tanh, c = f·c +
//! i·g, h = o·tanh(c), zero initial state.
//!
//! One cell's equations ([`cell`]), run two ways, as [`Ops::recurrence`] chooses: fedrun's fused
//! layer (one kernel a layer: on flex each copy alone, [`lstm_layer`], for batches up to
//! [`FUSED_MAX_BATCH`]; on the GPU backends every copy at once, [`lstm_layers`]), or gate by gate
//! (each step's four gates of every copy one batched product of the hidden state, after one of
//! all steps' inputs, with burn's kernels; on flex, for larger batches, each copy's gates as
//! their own products, a copy at a time).

use burn::tensor::module::{embedding, linear};
use burn::tensor::{Int, Tensor};

use super::network::Network;
use super::ops::{Ops, Recurrence};
use super::outputs::Outputs3;
use super::params::{Builder, Layout, Linear, Param, Role};
use crate::data::Input;
use crate::data::shakespeare::SEQ_LEN;
use crate::kernels::{Kernels, lstm_layer, lstm_layers, sigmoid, tanh};

pub use crate::kernels::lstm::FUSED_MAX_BATCH;

const D_EMB: usize = 8;

/// A gate's input and hidden transforms.
#[derive(Clone, Copy, Debug)]
struct Gate {
    input: Linear,
    hidden: Linear,
}

/// A layer's gates in the layout's order: input, forget, output, cell.
type Gates = [Gate; 4];

#[derive(Clone, Debug)]
pub struct Lstm {
    layout: Layout,
    emb: Param,
    layers: Vec<Gates>,
    out: Linear,
}

impl Lstm {
    /// `layers` layers of `hidden` over `vocab` characters, in the order of the burn modules it
    /// was first written as: the embedding, each layer's gates (each an input and a hidden
    /// transform), the classifier.
    pub fn new(hidden: usize, layers: usize, vocab: usize) -> Lstm {
        let h = hidden;
        let mut b = Builder::new("Lstm");
        let emb = b.embedding("emb", "CharLstm", vocab, D_EMB);
        let roles = [false, true].map(|bias| Role::Recurrent { hidden: h, bias });
        let layers = b.scope("layers", "CharLstm", |b| {
            (0..layers)
                .map(|i| {
                    let din = if i == 0 { D_EMB } else { h };
                    // a sample's steps: the gates and states a training step keeps, and the
                    // fused layer's evaluation (batches up to 128; the gate-by-gate path of
                    // larger ones holds a tenth of it)
                    let steps = SEQ_LEN as u128 * h as u128;
                    b.keeps(8 * steps, 9 * steps);
                    b.scope(&i.to_string(), "Vec", |b| {
                        ["input_gate", "forget_gate", "output_gate", "cell_gate"].map(|gate| {
                            b.scope(gate, "Lstm", |b| {
                                let at = |name| (name, "GateController", "Linear");
                                Gate {
                                    input: b.linear_as(at("input_transform"), din, h, roles),
                                    hidden: b.linear_as(at("hidden_transform"), h, h, roles),
                                }
                            })
                        })
                    })
                })
                .collect()
        });
        let out = b.linear("out", "CharLstm", h, vocab);
        Lstm {
            layout: b.finish(),
            emb,
            layers,
            out,
        }
    }
}

impl Network for Lstm {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The K copies' logits `[K, b, vocab]` on their batches of character sequences `[K·b, T]`
    /// (the features are the logits).
    fn outputs(&self, input: Input, p: &mut Ops) -> Outputs3 {
        let x = input.tokens("the LSTM");
        let b = x.dims()[0] / p.copies;
        let h = match p.recurrence(b, &x.device()) {
            Recurrence::FusedAll | Recurrence::GatesAll => self.last_state(x, p),
            each => {
                let last = p.each_copy(|i, one| {
                    let own = x.clone().narrow(0, i * b, b);
                    match each {
                        Recurrence::FusedEach => self.fused(own, one),
                        _ => self.per_gate(own, one),
                    }
                });
                Tensor::stack::<3>(last, 0)
            }
        };
        Outputs3::logits_only(self.out.apply(h, p))
    }
}

impl Lstm {
    /// The copies' last hidden state `[K, b, H]` on their sequences `x` (`[K·b, T]`): each
    /// copy's indices offset into its own rows of the stacked table, then the layers.
    fn last_state(&self, x: Tensor<2, Int>, p: &Ops) -> Tensor<3> {
        let k = p.copies;
        let [n, len] = x.dims();
        let b = n / k;
        let (table, [vocab, d]) = p.matrix(self.emb);
        let offsets = crate::kernels::range(k, &x.device())
            .mul_scalar(vocab as i64)
            .reshape([k, 1, 1]);
        let idx: Tensor<3, Int> = x.reshape([k, b, len]) + offsets;
        let mut seq: Tensor<3> = embedding(table, idx.reshape([n, len])).reshape([k, b * len, d]);
        let fused = p.recurrence(b, &seq.device()) == Recurrence::FusedAll;
        let mut h = None;
        for (l, gates) in self.layers.iter().enumerate() {
            let last = l + 1 == self.layers.len();
            let (states, end) = layer(gates, seq.clone(), b, len, p, last, fused);
            h = Some(end);
            if let Some(states) = states {
                seq = states;
            }
        }
        h.expect("an LSTM of at least one layer")
    }
}

/// A layer's gates in the layout's order (input, forget, output, cell), each the input
/// weights `[K, in, H]`, the hidden weights `[K, H, H]` and the two biases summed `[K, 1, H]`.
fn gates(gates: &Gates, p: &Ops) -> [(Tensor<3>, Tensor<3>, Tensor<3>); 4] {
    gates.map(|g| {
        let (wx, bx) = p.weights(&g.input);
        let (wh, bh) = p.weights(&g.hidden);
        (wx, wh, bx + bh)
    })
}

/// The gates side by side in `order` (indices into the layout's input, forget, output, cell):
/// the input weights, the hidden weights and the biases, each along the last axis.
fn side_by_side(
    g: &[(Tensor<3>, Tensor<3>, Tensor<3>); 4],
    order: [usize; 4],
) -> (Tensor<3>, Tensor<3>, Tensor<3>) {
    type Gate = (Tensor<3>, Tensor<3>, Tensor<3>);
    let cat = |f: fn(&Gate) -> &Tensor<3>| {
        Tensor::cat(order.iter().map(|&i| f(&g[i]).clone()).collect(), 2)
    };
    (cat(|t| &t.0), cat(|t| &t.1), cat(|t| &t.2))
}

/// One LSTM layer of the copies on `seq` (`[K, b·T, in]`): the states of every step
/// (`[K, b·T, H]`; None for the `last` layer) and the last step's (`[K, b, H]`).
fn layer(
    gs: &Gates,
    seq: Tensor<3>,
    b: usize,
    len: usize,
    p: &Ops,
    last: bool,
    fused: bool,
) -> (Option<Tensor<3>>, Tensor<3>) {
    let (k, kern) = (p.copies, p.kernels);
    let g = gates(gs, p);
    if fused {
        // a GPU backend: fedrun's layer over every copy at once, gates in its order i, f, g, o
        let (wx, wh, bias) = side_by_side(&g, [0, 1, 3, 2]);
        let hidden = wh.dims()[1];
        let xw = (seq.matmul(wx) + bias).reshape([k, b, len, 4 * hidden]);
        let hs = lstm_layers(xw, wh);
        let h = hs.clone().narrow(2, len - 1, 1).reshape([k, b, hidden]);
        return ((!last).then(|| hs.reshape([k, b * len, hidden])), h);
    }
    let (wx, wh, bias) = side_by_side(&g, [0, 1, 2, 3]);
    let hidden = wh.dims()[1];
    let xw: Tensor<4> = (seq.matmul(wx) + bias).reshape([k, b, len, 4 * hidden]);
    let device = xw.device();
    let mut h: Tensor<3> = Tensor::zeros([k, b, hidden], &device);
    let mut c: Tensor<3> = Tensor::zeros([k, b, hidden], &device);
    let mut states = Vec::with_capacity(if last { 0 } else { len });
    for t in 0..len {
        let g: Tensor<3> =
            xw.clone().narrow(2, t, 1).reshape([k, b, 4 * hidden]) + h.matmul(wh.clone());
        let part = |i: usize| g.clone().narrow(2, i * hidden, hidden);
        (h, c) = cell([part(0), part(1), part(2), part(3)], c, kern);
        if !last {
            states.push(h.clone().unsqueeze_dim::<4>(2));
        }
    }
    let seq = (!last).then(|| Tensor::cat(states, 2).reshape([k, b * len, hidden]));
    (seq, h)
}

/// One LSTM cell: the new hidden state and cell state from the gates' pre-activations (input,
/// forget, output, cell, the layout's order) and the cell state `c`. The gate-by-gate paths run
/// it; fedrun's fused layer kernel (`kernels::lstm`) computes the same equations in one launch.
fn cell<const D: usize>(
    gates: [Tensor<D>; 4],
    c: Tensor<D>,
    kern: Kernels,
) -> (Tensor<D>, Tensor<D>) {
    let [i, f, o, g] = gates;
    let (i, f) = (sigmoid(i, kern), sigmoid(f, kern));
    let (o, g) = (sigmoid(o, kern), tanh(g, kern));
    let c = f * c + i * g;
    (o * tanh(c.clone(), kern), c)
}

impl Lstm {
    /// One copy's last hidden state `[b, H]` on `x` (`[b, T]`) on fedrun's fused LSTM layer, its
    /// parameters from `one` (a view of one copy; the gates in the kernel's order i, f, g, o).
    fn fused(&self, x: Tensor<2, Int>, one: &Ops) -> Tensor<2> {
        let [b, len] = x.dims();
        let (table, _) = one.matrix(self.emb);
        let mut seq: Tensor<3> = embedding(table, x);
        for gs in &self.layers {
            let d = seq.dims()[2];
            let (wx, wh, bias) = side_by_side(&gates(gs, one), [0, 1, 3, 2]);
            let squeeze = |t: Tensor<3>| -> Tensor<2> { t.squeeze_dim(0) };
            let (wx, wh, bias) = (squeeze(wx), squeeze(wh), squeeze(bias));
            let hidden = wh.dims()[0];
            let xw = seq.reshape([b * len, d]).matmul(wx) + bias;
            seq = lstm_layer(xw.reshape([b, len, 4 * hidden]), wh);
        }
        let h = seq.dims()[2];
        seq.narrow(1, len - 1, 1).reshape([b, h])
    }

    /// One copy's last hidden state `[b, H]` on `x` (`[b, T]`) for a batch past
    /// [`FUSED_MAX_BATCH`] on flex (an evaluation's): each step's gates as their own products,
    /// as burn's LSTM has them (on flex 1.6–1.8× faster than [`Lstm::last_state`]'s batched
    /// products over one copy, measured with scripts/bench/fedrun_ab.py on the evaluation).
    fn per_gate(&self, x: Tensor<2, Int>, one: &Ops) -> Tensor<2> {
        let [b, len] = x.dims();
        let (table, [_, d]) = one.matrix(self.emb);
        let mut seq: Vec<Tensor<2>> = (0..len)
            .map(|t| embedding(table.clone(), x.clone().narrow(1, t, 1)).reshape([b, d]))
            .collect();
        let (kern, dev) = (one.kernels, x.device());
        // one copy's linear layer as burn's `linear` takes it: `[in, out]` and `[out]`
        let plain = |l: &Linear| {
            let (w, bias) = one.weights(l);
            let [_, din, dout] = w.dims();
            (w.reshape([din, dout]), bias.reshape([dout]))
        };
        for gs in &self.layers {
            let g: Vec<_> = gs
                .iter()
                .map(|g| (plain(&g.input), plain(&g.hidden)))
                .collect();
            let mut h = Tensor::zeros([b, g[0].1.0.dims()[0]], &dev);
            let mut c = h.clone();
            for xt in seq.iter_mut() {
                let gate = |i: usize| {
                    let ((wx, bx), (wh, bh)) = g[i].clone();
                    linear(xt.clone(), wx, Some(bx)) + linear(h.clone(), wh, Some(bh))
                };
                (h, c) = cell([gate(0), gate(1), gate(2), gate(3)], c, kern);
                *xt = h.clone();
            }
        }
        seq.pop().expect("a sequence of at least one character")
    }
}
