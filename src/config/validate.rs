//! Value checks of a spec: numbers in range, the algorithm's name from the schema, and the
//! schema's own checks; the check functions that key tables name. (Closed sets of names are
//! enums, checked by parsing.) Checks that need the data (num_clients against the data set
//! size) happen when the data is loaded.

use super::schema::Schema;
use super::sections::{Augmentation, COHORT_AUTO, Dataset, Deal, ModelSpec, Partition};
use super::spec::Spec;
use crate::error::{Error, Result};

/// `v` in `[0, 1)` (`closed = false`) or `[0, 1]` (`closed = true`).
fn unit_interval(key: &str, v: f64, closed: bool) -> Result<()> {
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

/// `v` in `[0, 1)`.
pub fn unit_open(key: &str, v: f64) -> Result<()> {
    unit_interval(key, v, false)
}

/// `v` in `[0, 1]`.
pub fn unit_closed(key: &str, v: f64) -> Result<()> {
    unit_interval(key, v, true)
}

/// `v ≤ 1` (with [`non_negative`]: in `[0, 1]`).
pub fn at_most_one(key: &str, v: f64) -> Result<()> {
    if v > 1.0 {
        return Err(Error::Config(format!(
            "key `{key}` must be in [0, 1], got {v}"
        )));
    }
    Ok(())
}

pub fn positive(key: &str, v: f64) -> Result<()> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "key `{key}` must be > 0 (and finite), got {v}"
        )))
    }
}

pub fn at_least_one(key: &str, v: usize) -> Result<()> {
    debug_assert!(
        super::keys::AT_LEAST_ONE.contains(&key),
        "{key} is listed in AT_LEAST_ONE"
    );
    if v >= 1 {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{}, got {v}",
            super::keys::count_rule(key)
        )))
    }
}

pub fn non_negative(key: &str, v: f64) -> Result<()> {
    if v >= 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "key `{key}` must be >= 0 (and finite), got {v}"
        )))
    }
}

pub fn validate(s: &Spec, schema: &Schema) -> Result<()> {
    validate_data(s)?;
    validate_model(&s.model)?;
    if !schema.algorithms.contains(&s.fl.algorithm.as_str()) {
        return Err(unknown_algorithm(&s.fl.algorithm, schema));
    }
    validate_fl(s)?;
    validate_local(s)?;
    for check in &schema.checks {
        check(s)?;
    }
    crate::io::path_component("key `run.name`", &s.run.name)?;
    non_negative("run.client_state_mb", s.run.client_state_mb)?;
    non_negative("run.checkpoint_minutes", s.run.checkpoint_minutes)?;
    non_negative("run.device_data_mb", s.run.device_data_mb)?;
    non_negative("run.cohort_mb", s.run.cohort_mb)?;
    if s.run.cohort != COHORT_AUTO {
        at_least_one("run.cohort", s.run.cohort)?;
    }
    if s.run.cohort > 1 && s.run.cohort != COHORT_AUTO && s.run.client_workers > 1 {
        return Err(Error::Config(format!(
            "keys `run.cohort` = {} and `run.client_workers` = {}: a cohort trains its clients as one computation on every core; set one of them to 1 (`run.client_workers` = 0 chooses 1 with a cohort)",
            s.run.cohort, s.run.client_workers
        )));
    }
    if s.run.init_seed < -1 {
        return Err(Error::Config(format!(
            "key `run.init_seed` must be a seed ≥ 0, or −1 to follow `run.seed`, got {}",
            s.run.init_seed
        )));
    }
    Ok(())
}

/// An unknown algorithm, with the closest name and every name (aliases included).
fn unknown_algorithm(name: &str, schema: &Schema) -> Error {
    if name.eq_ignore_ascii_case("fednar") {
        return Error::Config(
            "key `fl.algorithm`: FedNAR is not an algorithm of its own but a change to every algorithm's local step: keep `fl.algorithm` (fedavg, fedprox, scaffold, …) and set `local.nar = true` (configs/cifar_fednar.toml)".into(),
        );
    }
    let names: Vec<&str> = schema
        .algorithms
        .iter()
        .copied()
        .chain(schema.aliases.iter().map(|a| a.name))
        .collect();
    let best = names
        .iter()
        .map(|c| (strsim::levenshtein(name, c), *c))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= 3.max(name.len() / 3));
    let hint = best.map_or(String::new(), |(_, c)| format!("; did you mean \"{c}\"?"));
    Error::Config(format!(
        "key `fl.algorithm`: unknown algorithm \"{name}\"{hint} (expected one of: {})",
        names.join(", ")
    ))
}

fn validate_data(s: &Spec) -> Result<()> {
    if s.data.partition == Partition::Dirichlet {
        positive("data.alpha", s.data.alpha)?;
    }
    if s.data.partition == Partition::File && s.data.partition_file.is_empty() {
        return Err(Error::Config(
            "key `data.partition_file` must name a file when data.partition = \"file\"".into(),
        ));
    }
    let images = [Dataset::Cifar10, Dataset::Cifar100, Dataset::TinyImagenet];
    if s.data.augmentation == Augmentation::Fedacg && !images.contains(&s.data.dataset) {
        return Err(Error::Config(format!(
            "key `data.augmentation`: \"fedacg\" is the FedACG code's transform of CIFAR-10, CIFAR-100 and Tiny-ImageNet images, not of `data.dataset = \"{}\"`",
            s.data.dataset
        )));
    }
    at_least_one("data.num_clients", s.data.num_clients)?;
    at_least_one("data.shards_per_client", s.data.shards_per_client)?;
    let dealt = [Partition::Iid, Partition::Dirichlet, Partition::Shards];
    if s.data.deal == Deal::Round && !dealt.contains(&s.data.partition) {
        return Err(Error::Config(format!(
            "key `data.deal` = \"round\" partitions the training split anew each round among the round's clients, which needs `data.partition` = \"iid\", \"dirichlet\" or \"shards\", not \"{}\" (a published split or the users' own data stay fixed: `data.deal = \"once\"`)",
            s.data.partition
        )));
    }
    if !(s.data.train_fraction > 0.0 && s.data.train_fraction < 1.0) {
        return Err(Error::Config(format!(
            "key `data.train_fraction` must be in (0, 1), got {}",
            s.data.train_fraction
        )));
    }
    if !(s.data.std > 0.0 && s.data.std.is_finite()) {
        return Err(Error::Config(format!(
            "key `data.std` must be a positive number (pixels are divided by it), got {}",
            s.data.std
        )));
    }
    Ok(())
}

fn validate_model(m: &ModelSpec) -> Result<()> {
    at_least_one("model.layers", m.layers)?;
    at_least_one("model.heads", m.heads)?;
    if !m.d_model.is_multiple_of(m.heads) {
        return Err(Error::Config(format!(
            "key `model.d_model` ({}) must be divisible by `model.heads` ({})",
            m.d_model, m.heads
        )));
    }
    if !(0.0..1.0).contains(&m.dropout) {
        return Err(Error::Config(format!(
            "key `model.dropout` must be in [0, 1), got {}",
            m.dropout
        )));
    }
    Ok(())
}

fn validate_fl(s: &Spec) -> Result<()> {
    at_least_one("fl.rounds", s.fl.rounds)?;
    at_least_one("fl.clients_per_round", s.fl.clients_per_round)?;
    at_least_one("fl.eval_every", s.fl.eval_every)?;
    at_least_one("fl.eval_batch_size", s.fl.eval_batch_size)?;
    if s.data.partition != Partition::Natural && s.fl.clients_per_round > s.data.num_clients {
        return Err(Error::Config(format!(
            "key `fl.clients_per_round` ({}) exceeds `data.num_clients` ({})",
            s.fl.clients_per_round, s.data.num_clients
        )));
    }
    validate_membership(s)?;
    non_negative("fl.acg_lambda", s.fl.acg_lambda)?;
    positive("fl.global_lr", s.fl.global_lr)
}

/// The dynamic client set's keys: an active set that fits the pool and holds a round's clients.
fn validate_membership(s: &Spec) -> Result<()> {
    let fl = &s.fl;
    unit_closed("fl.replace_prob", fl.replace_prob)?;
    if fl.active_clients > 0 && fl.clients_per_round > fl.active_clients {
        return Err(Error::Config(format!(
            "key `fl.clients_per_round` ({}) exceeds `fl.active_clients` ({})",
            fl.clients_per_round, fl.active_clients
        )));
    }
    if s.data.partition != Partition::Natural && fl.active_clients > s.data.num_clients {
        return Err(Error::Config(format!(
            "key `fl.active_clients` ({}) exceeds `data.num_clients` ({}), the pool it is drawn from",
            fl.active_clients, s.data.num_clients
        )));
    }
    Ok(())
}

fn validate_local(s: &Spec) -> Result<()> {
    if s.local.epochs == 0 {
        at_least_one("local.steps", s.local.steps)?;
    }
    at_least_one("local.batch_size", s.local.batch_size)?;
    positive("local.lr", s.local.lr)?;
    positive("local.lr_decay", s.local.lr_decay)?;
    positive("local.lr_step_factor", s.local.lr_step_factor)?;
    non_negative("local.weight_decay", s.local.weight_decay)?;
    non_negative("local.max_norm", s.local.max_norm)?;
    unit_open("local.momentum", s.local.momentum)
}
