//! Which `[model]` keys a spec's model reads (the others are named, with why).

use crate::config::{ModelKind, Spec, Unread};

/// The `[model]` keys that set model `k` (each read by some models only) (a new model names its own: the match has no default).
fn reads(k: ModelKind) -> &'static [&'static str] {
    use ModelKind::*;
    match k {
        Resnet18 => &["head", "projection"],
        Cnn | TinyCnn => &["projection"],
        Transformer => &[
            "layers",
            "d_model",
            "heads",
            "d_ff",
            "identical_layers",
            "dropout",
        ],
        MnistCnn => &["dropout"],
        Lstm => &["hidden"],
        Mlp => &["mlp_hidden"],
        EmnistCnn | FemnistCnn | CelebaCnn | Linear | LstmSmall => &[],
    }
}

/// The `[model]` keys a spec's run does not read.
pub fn unread_keys(s: &Spec) -> Vec<Unread> {
    let k = s.model.kind;
    let kinds = || {
        ModelKind::NAMES
            .iter()
            .filter_map(|n| ModelKind::from_name(n))
    };
    // every key some model reads, once, in the order the models name them
    let mut keys: Vec<&str> = Vec::new();
    kinds().flat_map(reads).for_each(|key| {
        if !keys.contains(key) {
            keys.push(key);
        }
    });
    (keys.into_iter())
        .filter(|key| !reads(k).contains(key))
        .map(|key| {
            let names: Vec<String> = (kinds().filter(|m| reads(*m).contains(&key)))
                .map(|m| format!("`{m}`"))
                .collect();
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
