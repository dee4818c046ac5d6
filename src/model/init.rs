//! PyTorch's default initialisation (§7), computed by fedrun from the run seed on the flat
//! vector, so that the initial model does not depend on the backend:
//! - Conv and Linear: weight and bias U(±1/√fan_in) (kaiming-uniform with a = √5);
//! - GroupNorm / LayerNorm: γ = 1, β = 0;
//! - Embedding: N(0, 1);
//! - multi-head attention: q/k/v weights xavier-uniform over the stacked [3d, d] in-projection,
//!   output weight U(±1/√d), all biases 0;
//! - LSTM: every weight and bias U(±1/√hidden).

use std::collections::HashMap;

use super::params::{Layout, TensorInfo};
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

/// The initial flat parameter vector. `identical_layers` copies the first transformer layer
/// into all others (PyTorch `TransformerEncoder` deep-copies one layer, §7.2).
pub fn init_flat(layout: &Layout, rng: &mut Rng, identical_layers: bool) -> Vec<f32> {
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
    if identical_layers {
        copy_first_layer(layout, &mut x);
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
