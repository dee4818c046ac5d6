//! What a model of a spec will take before it is built: its parameters and an estimate of the
//! floats a training sample keeps alive through forward and backward. The fixed architectures'
//! per-sample activations are measured (`tests/memory.rs`: a step's peak on flex at batch 10
//! and 50, K = 1 and 8, the growth per sample with the batch's own copy; docs/PERFORMANCE.md
//! has the table); the character models' and the MLP's are formulas in their widths. Every
//! model's parameters are counted from the tree it declares, in `u128` and saturating, so that no
//! spec value overflows them (a test holds every count equal to the built model's layout).

use crate::config::{ModelKind, ModelSpec};
use crate::data::shakespeare::SEQ_LEN;

/// A model's size, estimated from its spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub params: u128,
    /// Floats a training sample keeps through forward and backward.
    pub activations: u128,
    /// Floats an evaluation sample keeps at the forward's peak (no autodiff: each layer's
    /// output freed once the next has read it).
    pub eval: u128,
}

/// The keys of `model` that set a model's size, with their values, for error messages.
pub fn size_keys(m: &ModelSpec) -> String {
    match m.kind {
        ModelKind::Transformer => format!(
            "model.layers = {}, model.d_model = {}, model.d_ff = {}, model.heads = {}",
            m.layers, m.d_model, m.d_ff, m.heads
        ),
        ModelKind::Lstm => format!("model.hidden = {}", m.hidden),
        ModelKind::Mlp => format!("model.mlp_hidden = {}", m.mlp_hidden),
        _ if m.projection > 0 => format!("model.projection = {}", m.projection),
        _ => format!("model.kind = \"{}\"", m.kind),
    }
}

/// The size of the model `m` for inputs of `features` floats (images) and `classes` classes.
pub fn estimate(m: &ModelSpec, features: u128, classes: u128) -> Size {
    let (activations, eval) = per_sample(m, features, classes);
    Size {
        params: params_of(m, features, classes),
        activations,
        eval,
    }
}

/// The parameters of `m`, counted from its tree in `u128` ([`super::params::Layout::count`]): a
/// transformer of L layers as one of none plus L times one layer's, so that no number of layers
/// is ever built.
fn params_of(m: &ModelSpec, features: u128, classes: u128) -> u128 {
    let n = usize::try_from(classes).unwrap_or(usize::MAX);
    let flat = usize::try_from(features).unwrap_or(usize::MAX);
    let count = |m: &ModelSpec| super::network(m, flat, n).layout().count;
    match m.kind {
        ModelKind::Transformer => {
            let with = |layers| {
                count(&ModelSpec {
                    layers,
                    ..m.clone()
                })
            };
            let (none, one) = (with(0), with(1));
            let per_layer = one.saturating_sub(none);
            none.saturating_add((m.layers as u128).saturating_mul(per_layer))
        }
        _ => count(m),
    }
}

/// The LSTM's hidden width (FedDyn's small LSTM: 100).
fn lstm_hidden(m: &ModelSpec) -> u128 {
    match m.kind {
        ModelKind::Lstm => m.hidden as u128,
        _ => 100,
    }
}

/// The floats a sample keeps in a training step and at an evaluation's peak. The fixed
/// architectures' are measured on flex (`tests/memory.rs`), the others' formulas in their
/// widths, fitted to the same measurement. The LSTM's evaluation is its fused layer's (batches
/// up to 128; the gate-by-gate path of larger batches keeps a tenth of it).
fn per_sample(m: &ModelSpec, features: u128, classes: u128) -> (u128, u128) {
    let (l, d, ff, h) = (
        m.layers as u128,
        m.d_model as u128,
        m.d_ff as u128,
        m.heads as u128,
    );
    let (seq, p) = (SEQ_LEN as u128, m.projection as u128);
    // Tiny-ImageNet's 64×64 maps hold 4× CIFAR's
    let scale = (features / 3072).max(1);
    match m.kind {
        ModelKind::Transformer => (
            l * (seq * (12 * d + 2 * ff) + 3 * h * seq * seq),
            seq * (ff + 3 * d) + h * seq * seq,
        ),
        ModelKind::Lstm | ModelKind::LstmSmall => {
            let hid = lstm_hidden(m);
            (seq * 2 * 8 * hid, seq * 9 * hid)
        }
        ModelKind::Mlp => {
            let hid = m.mlp_hidden as u128;
            (features + 4 * hid, features + 2 * hid)
        }
        ModelKind::Linear => (features + classes, features + classes),
        ModelKind::Cnn => (49_000 + 4 * p, 32_000 + 4 * p),
        ModelKind::TinyCnn => (9_000 + 4 * p, 6_500 + 4 * p),
        ModelKind::Resnet18 => (1_300_000 * scale + 4 * p, 270_000 * scale + 4 * p),
        ModelKind::FemnistCnn => (60_000, 32_000),
        ModelKind::CelebaCnn => (1_000_000, 460_000),
        ModelKind::EmnistCnn => (127_000, 60_000),
        ModelKind::MnistCnn => (12_000, 7_500),
    }
}
