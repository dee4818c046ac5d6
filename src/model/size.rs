//! What a model of a spec will take before it is built: an upper estimate of its parameters and
//! of the floats a training sample keeps alive through forward and backward. The sizes that a
//! spec key sets (the transformer's, the LSTM's and the MLP's widths, MOON's projection) are
//! computed; the fixed architectures are constants measured from the models themselves.
//! `u128` throughout, so no spec value overflows.

use crate::config::{ModelKind, ModelSpec};
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
    // MOON's head: Linear(f, f) → Linear(f, p) → the classifier on p
    let head = |f: u128| {
        if p > 0 {
            f * f + f * p + p * classes
        } else {
            0
        }
    };
    match m.kind {
        ModelKind::Transformer => Size {
            params: 2 * classes * d + seq * d + l * (4 * d * d + 2 * d * ff + 9 * d + ff),
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
                activations: seq * 2 * 12 * hid,
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
            params: 1_100_000 + head(192),
            activations: 300_000 + 4 * p,
        },
        ModelKind::TinyCnn => Size {
            params: 10_000 + head(32),
            activations: 40_000 + 4 * p,
        },
        ModelKind::Resnet18 => Size {
            params: 11_300_000 + 512 * classes + head(512),
            // 4 M at 32×32; the maps grow with the input (Tiny-ImageNet's 64×64: 4×)
            activations: 4_000_000 * (features / 3072).max(1) + 4 * p,
        },
        ModelKind::FemnistCnn => Size {
            params: 6_500_000 + 2049 * classes,
            activations: 250_000,
        },
        ModelKind::CelebaCnn => Size {
            params: 30_000 + 1153 * classes,
            activations: 1_600_000,
        },
        ModelKind::EmnistCnn => Size {
            params: 1_200_000 + 129 * classes,
            activations: 300_000,
        },
        ModelKind::MnistCnn => Size {
            params: 25_000,
            activations: 60_000,
        },
    }
}
