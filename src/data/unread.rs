//! Which `[data]` keys a spec's data set and partition read (the others are named, with why).

use crate::config::{Dataset, Partition, Spec, Unread};

use Dataset::*;

/// Keys that only some data sets read: the key, the data sets, and how to say which.
const ONLY: &[(&str, &[Dataset], &str)] = &[
    (
        "data.synthetic_train",
        &[Synthetic],
        "only `synthetic` reads it",
    ),
    (
        "data.synthetic_test",
        &[Synthetic],
        "only `synthetic` reads it",
    ),
    (
        "data.train_fraction",
        &[Shakespeare],
        "only `shakespeare` reads it",
    ),
    (
        "data.min_train_samples",
        &[Shakespeare, Leaf],
        "only `shakespeare` and `leaf` read it",
    ),
    (
        "data.min_test_samples",
        &[Shakespeare, Leaf],
        "only `shakespeare` and `leaf` read it",
    ),
    (
        "data.crop_train",
        &[Shakespeare, Leaf],
        "only `shakespeare` and `leaf` read it",
    ),
    (
        "data.crop_test",
        &[Shakespeare, Leaf],
        "only `shakespeare` and `leaf` read it",
    ),
    (
        "data.augmentation",
        &[Cifar10, Cifar100, TinyImagenet, Synthetic],
        "only `cifar10`, `cifar100`, `tiny-imagenet` and `synthetic` are augmented",
    ),
    (
        "data.cifar100_labels",
        &[Cifar100],
        "only `cifar100` reads it",
    ),
    ("data.mean", &[Idx], "only `idx` reads it"),
    ("data.std", &[Idx], "only `idx` reads it"),
];

/// The partition's keys a spec does not read: a data set with users reads none (its users are
/// the clients); each split reads its own.
fn partition_unread(s: &Spec, out: &mut Vec<Unread>) {
    let d = &s.data;
    let text = super::info(d).users;
    if text && d.partition != Partition::Natural {
        let why = format!(
            "by `data.dataset = \"{}\"`: its users are the clients (`natural`)",
            d.dataset
        );
        out.push(Unread::new("data.partition", why));
    }
    let why = |only: &str| {
        format!(
            "because `data.partition = \"{}\"` (only `{only}` reads it)",
            d.partition
        )
    };
    for (keys, p) in [
        (&["data.alpha", "data.variant"][..], Partition::Dirichlet),
        (&["data.partition_file"][..], Partition::File),
        (
            &["data.shards_per_client", "data.shard_cut"][..],
            Partition::Shards,
        ),
    ] {
        if text || d.partition != p {
            out.extend(keys.iter().map(|k| Unread::new(*k, why(p.as_str()))));
        }
    }
    if text || [Partition::Natural, Partition::File].contains(&d.partition) {
        let why = format!(
            "because `data.partition = \"{}\"` is fixed (only `iid`, `dirichlet` and `shards` are dealt each round)",
            if text {
                "natural"
            } else {
                d.partition.as_str()
            }
        );
        out.push(Unread::new("data.deal", why));
    }
}

/// The `[data]` keys a spec's run does not read.
pub fn unread_keys(s: &Spec) -> Vec<Unread> {
    let d = &s.data;
    let mut out = Vec::new();
    partition_unread(s, &mut out);
    for (key, sets, only) in ONLY {
        if !sets.contains(&d.dataset) {
            let why = format!("by `data.dataset = \"{}\"` ({only})", d.dataset);
            out.push(Unread::new(*key, why));
        }
    }
    out
}
