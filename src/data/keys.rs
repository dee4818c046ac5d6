//! Which `[data]` keys a spec's data set and partition read (the others are named, with why).

use crate::config::{Dataset, Partition, Spec, Unread};

/// The `[data]` keys a spec's run does not read.
pub fn unread_keys(s: &Spec) -> Vec<Unread> {
    let d = &s.data;
    let set = format!("by `data.dataset = \"{}\"`", d.dataset);
    let mut out = Vec::new();
    let mut not = |key: &str, why: &str| out.push(Unread::new(key, why.to_string()));
    let text = matches!(d.dataset, Dataset::Shakespeare | Dataset::Leaf);
    if text && d.partition != Partition::Natural {
        not(
            "data.partition",
            &format!("{set}: its users are the clients (`natural`)"),
        );
    }
    let partition = format!("because `data.partition = \"{}\"`", d.partition);
    let split = |p: Partition| !text && d.partition == p;
    if !split(Partition::Dirichlet) {
        not(
            "data.alpha",
            &format!("{partition} (only `dirichlet` reads it)"),
        );
        not(
            "data.variant",
            &format!("{partition} (only `dirichlet` reads it)"),
        );
    }
    if !split(Partition::File) {
        not(
            "data.partition_file",
            &format!("{partition} (only `file` reads it)"),
        );
    }
    if !split(Partition::Shards) {
        not(
            "data.shards_per_client",
            &format!("{partition} (only `shards` reads it)"),
        );
    }
    if d.dataset != Dataset::Synthetic {
        not(
            "data.synthetic_train",
            &format!("{set} (only `synthetic` reads it)"),
        );
        not(
            "data.synthetic_test",
            &format!("{set} (only `synthetic` reads it)"),
        );
    }
    if d.dataset != Dataset::Idx {
        for k in ["data.mean", "data.std"] {
            not(k, &format!("{set} (only `idx` reads it)"));
        }
    }
    if d.dataset != Dataset::Shakespeare {
        not(
            "data.train_fraction",
            &format!("{set} (only `shakespeare` reads it)"),
        );
    }
    if !text {
        for k in [
            "min_train_samples",
            "min_test_samples",
            "crop_train",
            "crop_test",
        ] {
            not(
                &format!("data.{k}"),
                &format!("{set} (only `shakespeare` and `leaf` read it)"),
            );
        }
    }
    if !matches!(d.dataset, Dataset::Cifar10 | Dataset::Synthetic) {
        not(
            "data.augmentation",
            &format!("{set} (only `cifar10` and `synthetic` are augmented)"),
        );
    }
    out
}
