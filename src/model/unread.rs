//! Which `[model]` keys a spec's model reads (the others are named, with why).

use crate::config::{ModelKind, Spec, Unread};

/// The `[model]` keys a spec's run does not read.
pub fn unread_keys(s: &Spec) -> Vec<Unread> {
    use ModelKind::*;
    let k = s.model.kind;
    let readers: &[(&str, &[ModelKind])] = &[
        ("head", &[Resnet18]),
        ("layers", &[Transformer]),
        ("d_model", &[Transformer]),
        ("heads", &[Transformer]),
        ("d_ff", &[Transformer]),
        ("identical_layers", &[Transformer]),
        ("dropout", &[Transformer, MnistCnn]),
        ("hidden", &[Lstm]),
        ("mlp_hidden", &[Mlp]),
        ("projection", &[Cnn, TinyCnn, Resnet18]),
    ];
    readers
        .iter()
        .filter(|(_, kinds)| !kinds.contains(&k))
        .map(|(key, kinds)| {
            let names: Vec<String> = kinds.iter().map(|m| format!("`{m}`")).collect();
            Unread::new(
                format!("model.{key}"),
                format!(
                    "by `model.kind = \"{k}\"` (only {} read it)",
                    names.join(", ")
                ),
            )
        })
        .collect()
}
