//! What a model of a spec will take before it is built: its parameters and the floats a sample
//! keeps through a training step and at an evaluation's peak, both counted from the tree the
//! model declares, in `u128` and saturating, so that no spec value overflows them. Each layer
//! declares what a sample keeps at it as it declares its parameters (`Builder::keeps`: what
//! flex's backward reads of its output maps); `tests/memory.rs` holds every model's estimate
//! within a quarter of the peak measured on flex (docs/PERFORMANCE.md has the table), and a
//! test holds every parameter count equal to the built model's layout.

use super::params::Kept;
use crate::config::{ModelKind, ModelSpec};

/// A model's size, estimated from its spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub params: u128,
    /// Floats a training sample keeps through forward and backward.
    pub activations: u128,
    /// Floats an evaluation sample keeps at the forward's peak (no autodiff: each layer's
    /// output freed once the next has read it).
    pub eval: u128,
    /// Floats a copy's training sample keeps more in a GPU cohort, whose convolutions are
    /// batched products: their columns through the step ([`super::params::Kept::columns`]).
    pub columns: u128,
    /// Floats the backward of one such convolution holds at once besides, a copy's sample.
    pub columns_transient: u128,
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

/// The size of the model `m` for inputs of `features` floats (images) and `classes` classes,
/// counted from the tree it declares ([`super::params::Layout`]: its parameters and the floats
/// a sample keeps, both in `u128`, saturating): a transformer of L layers as one of none plus L
/// times one layer's, so that no number of layers is ever built.
pub fn estimate(m: &ModelSpec, features: u128, classes: u128) -> Size {
    let n = usize::try_from(classes).unwrap_or(usize::MAX);
    let flat = usize::try_from(features).unwrap_or(usize::MAX);
    let count = |m: &ModelSpec| {
        let net = super::network(m, flat, n);
        (net.layout().count, net.layout().kept)
    };
    let (params, kept) = match m.kind {
        ModelKind::Transformer => {
            let with = |layers| {
                count(&ModelSpec {
                    layers,
                    ..m.clone()
                })
            };
            let ((p0, k0), (p1, k1)) = (with(0), with(1));
            let l = m.layers as u128;
            let times = |none: u128, one: u128| {
                none.saturating_add(l.saturating_mul(one.saturating_sub(none)))
            };
            let train = times(k0.train, k1.train);
            let eval = if l == 0 { k0.eval } else { k1.eval };
            // a transformer has no convolution, so no columns (k1's are 0)
            let kept = Kept { train, eval, ..k1 };
            (times(p0, p1), kept)
        }
        _ => count(m),
    };
    Size {
        params,
        activations: kept.train,
        eval: kept.eval,
        columns: kept.columns,
        columns_transient: kept.columns_transient,
    }
}
