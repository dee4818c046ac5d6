//! What a model of a spec will take before it is built: its parameters and an estimate of the
//! floats a training sample keeps alive through forward and backward. The fixed architectures'
//! per-sample activations are measured (`tests/memory.rs`: a step's peak on flex at batch 10
//! and 50, K = 1 and 8, the growth per sample with the batch's own copy; docs/PERFORMANCE.md
//! has the table); the character models' and the MLP's are formulas in their widths. The fixed
//! architectures' parameters are counted from their layouts (the parameter tree each model
//! declares); the sizes that a spec key sets (the transformer's, the LSTM's and the MLP's
//! widths, MOON's projection head) are computed in `u128`, so that no spec value overflows them
//! (a test holds every count equal to the built model's layout).

use super::convnet::ConvNet;
use super::network::Network;
use super::resnet::ResNet;
use crate::config::{Head, ModelKind, ModelSpec};
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

/// The parameters of `m`: the key-sized models' in closed form, the fixed architectures'
/// counted from their layouts.
fn params_of(m: &ModelSpec, features: u128, classes: u128) -> u128 {
    let (l, d, ff) = (m.layers as u128, m.d_model as u128, m.d_ff as u128);
    let seq = SEQ_LEN as u128;
    match m.kind {
        ModelKind::Transformer => {
            2 * classes * d + classes + seq * d + l * (4 * d * d + 2 * d * ff + 9 * d + ff)
        }
        ModelKind::Lstm | ModelKind::LstmSmall => {
            let hid = lstm_hidden(m);
            8 * classes
                + 4 * hid * (8 + hid)
                + 4 * hid * 2 * hid
                + 16 * hid
                + hid * classes
                + classes
        }
        ModelKind::Mlp => {
            let hid = m.mlp_hidden as u128;
            features * hid + hid * (classes + 1) + classes
        }
        ModelKind::Linear => features * classes + classes,
        _ => counted(m, features, classes),
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

/// The parameters of a fixed architecture, counted from its layout without MOON's head, and the
/// head added (its width `model.projection`, unbounded, in `u128`): Linear(f, f) → Linear(f, p),
/// the classifier reading p features instead of the f it reads without the head.
fn counted(m: &ModelSpec, features: u128, classes: u128) -> u128 {
    let n = usize::try_from(classes).unwrap_or(usize::MAX);
    let base = match m.kind {
        ModelKind::Resnet18 => ResNet::new(n, m.head == Head::Fednar, 0).layout().clone(),
        _ => {
            let plain = ModelSpec {
                projection: 0,
                ..m.clone()
            };
            let flat = usize::try_from(features).unwrap_or(usize::MAX);
            ConvNet::of(&plain, flat, n).layout().clone()
        }
    };
    let (total, p) = (base.total as u128, m.projection as u128);
    if p == 0 {
        return total;
    }
    // the classifier's input width: the last matrix of the layout is its weight `[f, classes]`
    let f = (base.tensors.iter().rev())
        .find(|t| t.shape.len() == 2)
        .map_or(0, |t| t.shape[0] as u128);
    total + f * f + f + f * p + p + p * classes - f * classes
}
