//! The character LSTM's stacked form: each copy's embedding table stacked (`[K·vocab, d]`, a
//! copy's tokens offset into its own), every layer's four gates as one batched product per
//! step (`[K, b, in]·[K, in, 4H]` for the inputs of all steps at once, `[K, b, H]·[K, H, 4H]`
//! for the hidden state), the classifier on the last step's state a batched product. On flex
//! with fedrun's kernels each copy runs on fedrun's fused LSTM kernel instead, as it does alone
//! (the step-by-step ops are ten times slower there).

use burn::tensor::module::embedding;
use burn::tensor::{Int, Tensor};

use super::parts::Cursor;
use crate::kernels::{Kernels, is_flex, lstm_layer, lstm_layers, on_cube, sigmoid, tanh};
use crate::model::lstm::{CharLstm, FUSED_MAX_BATCH};

/// The K copies' logits `[K, b, vocab]` on their batches of character sequences `[K·b, T]`.
pub fn logits(m: &CharLstm, x: Tensor<2, Int>, p: &mut Cursor) -> Tensor<3> {
    let k = p.copies;
    let [n, len] = x.dims();
    let b = n / k;
    if m.kernels == Kernels::Fedrun && is_flex(&x.device()) && b <= FUSED_MAX_BATCH {
        // the embedding and each layer's four gates of two transforms of two tensors
        let own = 1 + 16 * m.layers.len();
        let last: Vec<Tensor<2>> = (0..k)
            .map(|i| {
                let mine = p.copy(i, own);
                let mut one = Cursor::new(&mine, p.shapes, 1);
                fused(x.clone().narrow(0, i * b, b), m.layers.len(), &mut one)
            })
            .collect();
        p.at = own;
        let (w, bias) = p.linear();
        return Tensor::stack::<3>(last, 0).matmul(w) + bias;
    }
    let (table, [vocab, d]) = p.matrix();
    let offsets = Tensor::<1, Int>::arange(0..k as i64, &x.device())
        .mul_scalar(vocab as i64)
        .reshape([k, 1, 1]);
    let idx: Tensor<3, Int> = x.reshape([k, b, len]) + offsets;
    let mut seq: Tensor<3> = embedding(table, idx.reshape([n, len])).reshape([k, b * len, d]);
    let layers = m.layers.len();
    let mut h = None;
    for l in 0..layers {
        let (states, last) = layer(seq.clone(), b, len, p, m.kernels, l + 1 == layers);
        h = Some(last);
        if let Some(states) = states {
            seq = states;
        }
    }
    let h = h.expect("an LSTM of at least one layer");
    let (w, bias) = p.linear();
    h.matmul(w) + bias
}

/// One LSTM layer of the copies on `seq` (`[K, b·T, in]`): the states of every step
/// (`[K, b·T, H]`; None for the `last` layer) and the last step's (`[K, b, H]`). Its parameters in the
/// model's order: the input, forget, output and cell gates, each its input and hidden
/// transforms' weight and bias.
fn layer(
    seq: Tensor<3>,
    b: usize,
    len: usize,
    p: &mut Cursor,
    kern: Kernels,
    last: bool,
) -> (Option<Tensor<3>>, Tensor<3>) {
    let k = p.copies;
    let mut gate = || {
        let (wx, bx) = p.linear();
        let (wh, bh) = p.linear();
        (wx, wh, bx + bh)
    };
    // [input, forget, output, cell] → one product each for the inputs and the hidden state
    let gates = [gate(), gate(), gate(), gate()];
    let wx = Tensor::cat(gates.iter().map(|g| g.0.clone()).collect(), 2);
    let wh = Tensor::cat(gates.iter().map(|g| g.1.clone()).collect(), 2);
    let bias = Tensor::cat(gates.iter().map(|g| g.2.clone()).collect(), 2);
    let hidden = wh.dims()[1];
    if kern == Kernels::Fedrun && on_cube(&seq.device()) {
        // a GPU backend: fedrun's layer over every copy at once, gates in its order i, f, g, o
        let order = |w: &Tensor<3>| -> Tensor<3> {
            let part = |i: usize| w.clone().narrow(2, i * hidden, hidden);
            Tensor::cat(vec![part(0), part(1), part(3), part(2)], 2)
        };
        let xw = (seq.matmul(order(&wx)) + order(&bias)).reshape([k, b, len, 4 * hidden]);
        let hs = lstm_layers(xw, order(&wh));
        let h = hs.clone().narrow(2, len - 1, 1).reshape([k, b, hidden]);
        return ((!last).then(|| hs.reshape([k, b * len, hidden])), h);
    }
    let xw: Tensor<4> = (seq.matmul(wx) + bias).reshape([k, b, len, 4 * hidden]);
    let device = xw.device();
    let mut h: Tensor<3> = Tensor::zeros([k, b, hidden], &device);
    let mut c: Tensor<3> = Tensor::zeros([k, b, hidden], &device);
    let mut states = Vec::with_capacity(if last { 0 } else { len });
    for t in 0..len {
        let g: Tensor<3> =
            xw.clone().narrow(2, t, 1).reshape([k, b, 4 * hidden]) + h.matmul(wh.clone());
        let part = |i: usize| g.clone().narrow(2, i * hidden, hidden);
        let (i, f) = (sigmoid(part(0), kern), sigmoid(part(1), kern));
        let (o, cell) = (sigmoid(part(2), kern), tanh(part(3), kern));
        c = f * c + i * cell;
        h = o * tanh(c.clone(), kern);
        if !last {
            states.push(h.clone().unsqueeze_dim::<4>(2));
        }
    }
    let seq = (!last).then(|| Tensor::cat(states, 2).reshape([k, b * len, hidden]));
    (seq, h)
}

/// One copy's last hidden state `[b, H]` on `x` (`[b, T]`) on fedrun's fused LSTM kernel, its
/// `layers` layers' parameters from `one` (a cursor of one copy), as the model computes it
/// alone (`CharLstm::forward_fused`: the gates in the kernel's order i, f, g, o).
fn fused(x: Tensor<2, Int>, layers: usize, one: &mut Cursor) -> Tensor<2> {
    let [b, len] = x.dims();
    let (table, _) = one.matrix();
    let mut seq: Tensor<3> = embedding(table, x);
    for _ in 0..layers {
        let d = seq.dims()[2];
        let mut gate = || {
            let (wx, bx) = one.linear();
            let (wh, bh) = one.linear();
            let flat = |t: Tensor<3>| -> Tensor<2> { t.squeeze_dim(0) };
            (flat(wx), flat(wh), flat(bx) + flat(bh))
        };
        // the model's order: input, forget, output, cell; the kernel's: input, forget, cell, output
        let [i, f, o, g] = [gate(), gate(), gate(), gate()];
        let order = [&i, &f, &g, &o];
        let wx = Tensor::cat(order.iter().map(|q| q.0.clone()).collect(), 1);
        let wh = Tensor::cat(order.iter().map(|q| q.1.clone()).collect(), 1);
        let bias = Tensor::cat(order.iter().map(|q| q.2.clone()).collect(), 1);
        let hidden = wh.dims()[0];
        let xw = seq.reshape([b * len, d]).matmul(wx) + bias;
        seq = lstm_layer(xw.reshape([b, len, 4 * hidden]), wh);
    }
    let h = seq.dims()[2];
    seq.narrow(1, len - 1, 1).reshape([b, h])
}
