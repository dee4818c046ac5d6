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
    let (l, d, ff, h) = (
        m.layers as u128,
        m.d_model as u128,
        m.d_ff as u128,
        m.heads as u128,
    );
    let seq = SEQ_LEN as u128;
    let p = m.projection as u128;
    match m.kind {
        ModelKind::Transformer => Size {
            params: 2 * classes * d + classes + seq * d + l * (4 * d * d + 2 * d * ff + 9 * d + ff),
            activations: l * (seq * (12 * d + 2 * ff) + 3 * h * seq * seq),
        },
        ModelKind::Lstm | ModelKind::LstmSmall => {
            let hid = if m.kind == ModelKind::Lstm {
                m.hidden as u128
            } else {
                100
            };
            Size {
                params: 8 * classes
                    + 4 * hid * (8 + hid)
                    + 4 * hid * 2 * hid
                    + 16 * hid
                    + hid * classes
                    + classes,
                activations: seq * 2 * 8 * hid,
            }
        }
        ModelKind::Mlp => {
            let hid = m.mlp_hidden as u128;
            Size {
                params: features * hid + hid * (classes + 1) + classes,
                activations: features + 4 * hid,
            }
        }
        ModelKind::Linear => Size {
            params: features * classes + classes,
            activations: features + classes,
        },
        ModelKind::Cnn => Size {
            params: counted(m, features, classes),
            activations: 49_000 + 4 * p,
        },
        ModelKind::TinyCnn => Size {
            params: counted(m, features, classes),
            activations: 9_000 + 4 * p,
        },
        ModelKind::Resnet18 => Size {
            params: counted(m, features, classes),
            // 1.3 M at 32×32; the maps grow with the input (Tiny-ImageNet's 64×64: 4×)
            activations: 1_300_000 * (features / 3072).max(1) + 4 * p,
        },
        ModelKind::FemnistCnn => Size {
            params: counted(m, features, classes),
            activations: 60_000,
        },
        ModelKind::CelebaCnn => Size {
            params: counted(m, features, classes),
            activations: 1_000_000,
        },
        ModelKind::EmnistCnn => Size {
            params: counted(m, features, classes),
            activations: 127_000,
        },
        ModelKind::MnistCnn => Size {
            params: counted(m, features, classes),
            activations: 13_000,
        },
    }
}

/// The parameters of a fixed architecture, counted from its layout without MOON's head, and the
/// head added (its width `model.projection`, unbounded, in `u128`): Linear(f, f) → Linear(f, p),
/// the classifier reading p features instead of the f it reads without the head.
fn counted(m: &ModelSpec, features: u128, classes: u128) -> u128 {
    let n = usize::try_from(classes).unwrap_or(usize::MAX);
    let base = match m.kind {
        ModelKind::Resnet18 => ResNet::new(n, m.head == Head::Fednar, 0).layout(),
        _ => {
            let plain = ModelSpec {
                projection: 0,
                ..m.clone()
            };
            let flat = usize::try_from(features).unwrap_or(usize::MAX);
            ConvNet::of(&plain, flat, n).layout()
        }
    }
    .finish();
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
