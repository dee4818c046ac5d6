//! PyTorch's default initialisation (§7), computed by fedrun from the run seed on the flat
//! vector, so that the initial model does not depend on the backend:
//! - Conv and Linear: weight and bias U(±1/√fan_in) (kaiming-uniform with a = √5);
//! - GroupNorm / LayerNorm: γ = 1, β = 0;
//! - Embedding: N(0, 1);
//! - multi-head attention: q/k/v weights xavier-uniform over the stacked [3d, d] in-projection,
//!   output weight U(±1/√d), all biases 0;
//! - LSTM: every weight and bias U(±1/√hidden).
//!
//! Each tensor's role ([`Role`]) is set by the layer that declares it, not read from a name.
//!
//! `model.init = "leaf"` is TensorFlow's default instead, as the LEAF code's models get it
//! (`tf.layers.conv2d`, `tf.layers.dense`, `tf.get_variable`): every weight Glorot-uniform,
//! U(±√(6/(fan_in + fan_out))), every bias 0, norms γ = 1, β = 0. The fans are TensorFlow's for
//! dense and convolution kernels (a convolution's times its window); an LSTM's weights are
//! taken per matrix as burn stores them (TensorFlow's cell holds the four gates in one kernel).

use super::params::{Layout, Role, TensorInfo};
use crate::config::Init;
use crate::rng::Rng;

fn uniform(rng: &mut Rng, out: &mut [f32], bound: f64) {
    for v in out {
        *v = ((rng.uniform() * 2.0 - 1.0) * bound) as f32;
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

/// The initial flat parameter vector of `init`, each tensor by its role in the layout's order.
/// `identical_layers` copies each of the layout's repeated ranges (the transformer's first
/// encoder layer into the others: PyTorch's `TransformerEncoder` deep-copies one layer, §7.2).
pub fn init_flat(layout: &Layout, rng: &mut Rng, identical_layers: bool, init: Init) -> Vec<f32> {
    let mut x = vec![0f32; layout.total];
    for t in &layout.tensors {
        let out = &mut x[t.range()];
        match init {
            Init::Pytorch => pytorch(t.role, rng, out),
            Init::Leaf => leaf(t, rng, out),
        }
    }
    if identical_layers {
        for (from, to) in &layout.repeats {
            x.copy_within(from.clone(), *to);
        }
    }
    x
}

/// TensorFlow's (LEAF's) values of tensor `t`: Glorot-uniform weights, zero biases, γ = 1, β = 0.
fn leaf(t: &TensorInfo, rng: &mut Rng, out: &mut [f32]) {
    match t.role {
        Role::Gamma => out.fill(1.0),
        r if r.is_shift() => out.fill(0.0),
        _ => {
            let (fi, fo) = glorot_fans(t);
            uniform(rng, out, (6.0 / (fi + fo).max(1) as f64).sqrt());
        }
    }
}

/// PyTorch's layer defaults (the module comment) for a tensor of `role`.
fn pytorch(role: Role, rng: &mut Rng, out: &mut [f32]) {
    let bound = |n: usize| 1.0 / (n as f64).sqrt();
    match role {
        Role::Gamma => out.fill(1.0),
        Role::Beta | Role::AttentionBias => out.fill(0.0),
        Role::Embedding => out.iter_mut().for_each(|v| *v = rng.normal() as f32),
        Role::Recurrent { hidden, .. } => uniform(rng, out, bound(hidden)),
        Role::Attention { d, output: true } => uniform(rng, out, bound(d)),
        Role::Attention { d, output: false } => {
            let d = d as f64;
            uniform(rng, out, (6.0 / (d + 3.0 * d)).sqrt());
        }
        Role::Weight { fan_in } | Role::Bias { fan_in } => uniform(rng, out, bound(fan_in)),
    }
}
