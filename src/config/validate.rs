//! Semantic checks of a spec: values in range, names from the known lists. Checks that need
//! the data (num_clients against the data set size) happen when the data is loaded.

use super::Spec;
use crate::error::{Error, Result};

pub const DATASETS: &[&str] = &[
    "cifar10",
    "mnist",
    "fashion-mnist",
    "shakespeare",
    "leaf",
    "synthetic",
];
pub const PARTITIONS: &[&str] = &["iid", "dirichlet", "shards", "natural", "file"];
pub const VARIANTS: &[&str] = &["fedexp-equal", "fedacg-balanced"];
pub const AUGMENTATIONS: &[&str] = &["batch", "sample", "none"];
pub const MODELS: &[&str] = &[
    "cnn",
    "resnet18",
    "transformer",
    "lstm",
    "lstm-small",
    "mlp",
    "linear",
    "tiny-cnn",
    "mnist-cnn",
];
pub const HEADS: &[&str] = &["fednar", "global"];
pub const BACKENDS: &[&str] = &["flex", "wgpu"];
pub const KERNELS: &[&str] = &["fedrun", "burn"];
pub const LOCAL_STEPS: &[&str] = &["auto", "host", "device"];

pub(crate) fn one_of(key: &str, value: &str, valid: &[&str]) -> Result<()> {
    if valid.contains(&value) {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "key `{key}`: unknown value \"{value}\"; expected one of: {}",
            valid.join(", ")
        )))
    }
}

/// `v` in `[0, 1)` (`closed = false`) or `[0, 1]` (`closed = true`).
pub(crate) fn unit_interval(key: &str, v: f64, closed: bool) -> Result<()> {
    let ok = v >= 0.0 && (v < 1.0 || (closed && v == 1.0));
    if ok {
        Ok(())
    } else {
        let end = if closed { "]" } else { ")" };
        Err(Error::Config(format!(
            "key `{key}` must be in [0, 1{end}, got {v}"
        )))
    }
}

pub(crate) fn positive(key: &str, v: f64) -> Result<()> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "key `{key}` must be > 0 (and finite), got {v}"
        )))
    }
}

pub(crate) fn at_least_one(key: &str, v: usize) -> Result<()> {
    if v >= 1 {
        Ok(())
    } else {
        Err(Error::Config(format!("key `{key}` must be >= 1, got {v}")))
    }
}

pub(crate) fn non_negative(key: &str, v: f64) -> Result<()> {
    if v >= 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "key `{key}` must be >= 0 (and finite), got {v}"
        )))
    }
}

pub fn validate(s: &Spec) -> Result<()> {
    one_of("data.dataset", &s.data.dataset, DATASETS)?;
    one_of("data.partition", &s.data.partition, PARTITIONS)?;
    one_of("data.variant", &s.data.variant, VARIANTS)?;
    one_of("data.augmentation", &s.data.augmentation, AUGMENTATIONS)?;
    if s.data.partition == "dirichlet" {
        positive("data.alpha", s.data.alpha)?;
    }
    if s.data.partition == "file" && s.data.partition_file.is_empty() {
        return Err(Error::Config(
            "key `data.partition_file` must name a file when data.partition = \"file\"".into(),
        ));
    }
    at_least_one("data.num_clients", s.data.num_clients)?;
    at_least_one("data.shards_per_client", s.data.shards_per_client)?;
    if !(s.data.train_fraction > 0.0 && s.data.train_fraction < 1.0) {
        return Err(Error::Config(format!(
            "key `data.train_fraction` must be in (0, 1), got {}",
            s.data.train_fraction
        )));
    }
    one_of("model.kind", &s.model.kind, MODELS)?;
    one_of("model.head", &s.model.head, HEADS)?;
    at_least_one("model.layers", s.model.layers)?;
    at_least_one("model.heads", s.model.heads)?;
    if !s.model.d_model.is_multiple_of(s.model.heads) {
        return Err(Error::Config(format!(
            "key `model.d_model` ({}) must be divisible by `model.heads` ({})",
            s.model.d_model, s.model.heads
        )));
    }
    if !(0.0..1.0).contains(&s.model.dropout) {
        return Err(Error::Config(format!(
            "key `model.dropout` must be in [0, 1), got {}",
            s.model.dropout
        )));
    }
    crate::fl::algorithms::check_name(&s.fl.algorithm)?;
    at_least_one("fl.rounds", s.fl.rounds)?;
    at_least_one("fl.clients_per_round", s.fl.clients_per_round)?;
    at_least_one("fl.eval_every", s.fl.eval_every)?;
    at_least_one("fl.eval_batch_size", s.fl.eval_batch_size)?;
    if s.data.partition != "natural" && s.fl.clients_per_round > s.data.num_clients {
        return Err(Error::Config(format!(
            "key `fl.clients_per_round` ({}) exceeds `data.num_clients` ({})",
            s.fl.clients_per_round, s.data.num_clients
        )));
    }
    positive("fl.global_lr", s.fl.global_lr)?;
    one_of("fl.aggregation", &s.fl.aggregation, &["size", "uniform"])?;
    s.algorithms.validate()?;
    if s.local.epochs == 0 {
        at_least_one("local.steps", s.local.steps)?;
    }
    at_least_one("local.batch_size", s.local.batch_size)?;
    positive("local.lr", s.local.lr)?;
    positive("local.lr_decay", s.local.lr_decay)?;
    one_of(
        "local.lr_schedule",
        &s.local.lr_schedule,
        &["round", "epoch", "step"],
    )?;
    positive("local.lr_step_factor", s.local.lr_step_factor)?;
    non_negative("local.weight_decay", s.local.weight_decay)?;
    non_negative("local.max_norm", s.local.max_norm)?;
    one_of("run.backend", &s.run.backend, BACKENDS)?;
    one_of("run.kernels", &s.run.kernels, KERNELS)?;
    one_of("run.local_step", &s.run.local_step, LOCAL_STEPS)?;
    if s.run.client_workers > 1 && crate::model::Model::has_dropout(&s.model) {
        return Err(Error::Config(format!(
            "key `run.client_workers` = {}: parallel clients need `model.dropout` = 0 (dropout draws from the backend's global generator, so parallel clients would not be reproducible)",
            s.run.client_workers
        )));
    }
    if s.run.name.is_empty()
        || s.run.name.contains(['/', '\\'])
        || s.run.name == "."
        || s.run.name == ".."
    {
        return Err(Error::Config(format!(
            "key `run.name` must be a plain folder name, got \"{}\"",
            s.run.name
        )));
    }
    Ok(())
}
