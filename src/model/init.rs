//! PyTorch's default initialisation (§7), computed by fedrun from the run seed on the flat
//! vector, so that the initial model does not depend on the backend:
//! - Conv and Linear: weight and bias U(±1/√fan_in) (kaiming-uniform with a = √5);
//! - GroupNorm / LayerNorm: γ = 1, β = 0;
//! - Embedding: N(0, 1);
//! - multi-head attention: q/k/v weights xavier-uniform over the stacked [3d, d] in-projection,
//!   output weight U(±1/√d), all biases 0;
//! - LSTM: every weight and bias U(±1/√hidden).
//!
//! `model.init = "leaf"` is TensorFlow's default instead, as the LEAF code's models get it
//! (`tf.layers.conv2d`, `tf.layers.dense`, `tf.get_variable`): every weight Glorot-uniform,
//! U(±√(6/(fan_in + fan_out))), every bias 0, norms γ = 1, β = 0. The fans are TensorFlow's for
//! dense and convolution kernels (a convolution's times its window); an LSTM's weights are
//! taken per matrix as burn stores them (TensorFlow's cell holds the four gates in one kernel).

use std::collections::HashMap;

use super::params::{Layout, TensorInfo};
use crate::config::Init;
use crate::rng::Rng;

fn uniform(rng: &mut Rng, out: &mut [f32], bound: f64) {
    for v in out {
        *v = ((rng.uniform() * 2.0 - 1.0) * bound) as f32;
    }
}

/// fan_in of a weight tensor: Linear weights are `[in, out]` in burn; conv weights are
/// `[out, in/groups, k, k]`.
fn fan_in(w: &TensorInfo) -> usize {
    match w.owner() {
        "Linear" => w.shape[0],
        _ => w.shape[1..].iter().product(),
    }
}

/// Glorot's (fan_in, fan_out) of a weight tensor as TensorFlow counts them: Linear `[in, out]`;
/// a convolution `[out, in/groups, k, k]` times its window; any other matrix `[a, b]` as (a, b).
fn glorot_fans(w: &TensorInfo) -> (usize, usize) {
    let s = &w.shape;
    match s.len() {
        0 => (1, 1),
        1 => (s[0], s[0]),
        2 => (s[0], s[1]),
        _ => {
            let window: usize = s[2..].iter().product();
            (s[1] * window, s[0] * window)
        }
    }
}

/// TensorFlow's (LEAF's) initial vector: Glorot-uniform weights, zero biases, γ = 1, β = 0.
fn init_leaf(layout: &Layout, rng: &mut Rng) -> Vec<f32> {
    let mut x = vec![0f32; layout.total];
    for t in &layout.tensors {
        let out = &mut x[t.range()];
        match t.name() {
            "gamma" => out.fill(1.0),
            "beta" | "bias" => out.fill(0.0),
            _ => {
                let (fi, fo) = glorot_fans(t);
                uniform(rng, out, (6.0 / (fi + fo).max(1) as f64).sqrt());
            }
        }
    }
    x
}

/// The initial flat parameter vector of `init`. `identical_layers` copies the first
/// transformer layer into all others (PyTorch `TransformerEncoder` deep-copies one layer, §7.2).
pub fn init_flat(layout: &Layout, rng: &mut Rng, identical_layers: bool, init: Init) -> Vec<f32> {
    let mut x = match init {
        Init::Pytorch => init_pytorch(layout, rng),
        Init::Leaf => init_leaf(layout, rng),
    };
    if identical_layers {
        copy_first_layer(layout, &mut x);
    }
    x
}

/// PyTorch's layer defaults (the module comment).
fn init_pytorch(layout: &Layout, rng: &mut Rng) -> Vec<f32> {
    let mut x = vec![0f32; layout.total];
    let prefix = |t: &TensorInfo| t.names[..t.names.len() - 1].join(".");
    let weights: HashMap<String, &TensorInfo> = layout
        .tensors
        .iter()
        .filter(|t| t.name() == "weight")
        .map(|t| (prefix(t), t))
        .collect();
    for t in &layout.tensors {
        let out = &mut x[t.range()];
        let in_lstm = t.containers.iter().any(|c| c == "Struct:Lstm");
        let mha_role = t
            .containers
            .iter()
            .position(|c| c == "Struct:MultiHeadAttention")
            .map(|i| t.names[i].as_str());
        match (t.owner(), t.name()) {
            (_, "gamma") => out.fill(1.0),
            (_, "beta") => out.fill(0.0),
            ("Embedding", _) => out.iter_mut().for_each(|v| *v = rng.normal() as f32),
            _ if in_lstm => {
                let hidden = if t.name() == "weight" {
                    t.shape[1]
                } else {
                    t.shape[0]
                };
                uniform(rng, out, 1.0 / (hidden as f64).sqrt());
            }
            (_, "bias") if mha_role.is_some() => out.fill(0.0),
            (_, "weight") if mha_role.is_some() => {
                let d = t.shape[0] as f64;
                let bound = if mha_role == Some("output") {
                    1.0 / d.sqrt()
                } else {
                    (6.0 / (d + 3.0 * d)).sqrt()
                };
                uniform(rng, out, bound);
            }
            (_, "weight") => uniform(rng, out, 1.0 / (fan_in(t) as f64).sqrt()),
            (_, "bias") => {
                let fi = weights.get(&prefix(t)).map(|w| fan_in(w)).unwrap_or(t.len);
                uniform(rng, out, 1.0 / (fi as f64).sqrt());
            }
            _ => uniform(rng, out, 1.0 / (t.len as f64).sqrt()),
        }
    }
    x
}

/// Copy `…encoder.layers.0.<rest>` into every `…encoder.layers.<i>.<rest>`.
fn copy_first_layer(layout: &Layout, x: &mut [f32]) {
    let key = |t: &TensorInfo| -> Option<(usize, String)> {
        let i = t.names.iter().position(|n| n == "layers")?;
        if t.containers.get(i + 1).map(|c| c.as_str()) != Some("Vec")
            || !t
                .containers
                .iter()
                .any(|c| c.contains("TransformerEncoder"))
        {
            return None;
        }
        let idx: usize = t.names.get(i + 1)?.parse().ok()?;
        Some((idx, t.names[i + 2..].join(".")))
    };
    let firsts: HashMap<String, std::ops::Range<usize>> = layout
        .tensors
        .iter()
        .filter_map(|t| key(t).filter(|k| k.0 == 0).map(|k| (k.1, t.range())))
        .collect();
    for t in &layout.tensors {
        if let Some((i, rest)) = key(t)
            && i > 0
            && let Some(src) = firsts.get(&rest)
        {
            let src = src.clone();
            x.copy_within(src, t.offset);
        }
    }
}
