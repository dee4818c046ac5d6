//! Resource bounds, checked before anything is allocated: every size a spec implies (the data it
//! generates, the model's parameters and their copies, a batch's activations, the per-client
//! state) against what the machine can hold. A size that cannot fit is an error naming the key
//! and its value, never an allocation failure that aborts the process. Sizes are counted in
//! `u128`, so no spec value overflows them.

use crate::config::{Backend, COHORT_AUTO, DataSpec, Dataset, KernelChoice, Spec};
use crate::data::{FedData, Sample};
use crate::error::{Error, Result};
use crate::model::size::{Size, estimate, size_keys};

use super::memory_limit;

/// Bytes a run may use: the smallest of the machine's available memory, what is left under the
/// process's cgroup limit and Slurm's `--mem` ([`memory_limit::limit`]), or None where none can
/// be read (then nothing is refused for size).
pub fn available_memory() -> Option<u64> {
    memory_limit::limit().map(|l| l.bytes)
}

/// Where a budget of `budget` bytes comes from, for a refusal.
fn budget_source(budget: u64) -> String {
    match memory_limit::limit() {
        Some(l) if l.bytes == budget => l.source,
        _ => "the run's memory budget".into(),
    }
}

/// `n` bytes in the largest unit that keeps it above 1.
fn human(n: u128) -> String {
    let units = ["bytes", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Refuse `bytes` over `budget`, naming the keys behind them.
fn fits(bytes: u128, budget: u64, keys: &str, what: &str) -> Result<()> {
    if bytes <= budget as u128 {
        return Ok(());
    }
    Err(Error::Config(format!(
        "{keys}: {what} would take {} of memory; {} is available: {} (lower the key, or ask for more memory)",
        human(bytes),
        human(budget as u128),
        budget_source(budget)
    )))
}

/// The floats of one input sample, and the classes, of a data set (before it is loaded).
fn input_of(d: &DataSpec) -> (u128, u128) {
    let info = crate::data::info(d);
    let features = match info.sample {
        Sample::Image { channels, side } => channels * side * side,
        Sample::Characters => 80,
        // unknown before loading: a CIFAR-sized guess (the real size is checked once loaded)
        Sample::Unknown => 3 * 32 * 32,
    };
    (features as u128, info.classes as u128)
}

/// The bytes the data set of a spec takes in memory before it is loaded, at most (its features
/// as floats, its labels, the clients' index lists), where its size is known (the fixed sets and
/// the generated one); None for a set whose size is known once loaded.
fn data_bytes(spec: &Spec, features: u128) -> Option<u128> {
    let samples = crate::data::info(&spec.data).samples? as u128;
    Some(samples * (features * 4 + 1 + 8))
}

/// The keys behind the data set's bytes, for a refusal.
fn data_keys(spec: &Spec) -> String {
    let d = &spec.data;
    match d.dataset {
        Dataset::Synthetic => format!(
            "key `data.num_clients` = {} (with `data.synthetic_train` = {})",
            d.num_clients, d.synthetic_train
        ),
        _ => format!("key `data.dataset` = \"{}\"", d.dataset),
    }
}

/// The clients trained at once, whose model copies and activations exist together: a cohort's
/// clients (`run.cohort`), else the client workers; with the key that sets it.
fn at_once(spec: &Spec) -> (u128, String) {
    let k = cohort(spec).0;
    match k > 1 {
        true => (k as u128, format!("key `run.cohort` = {k}")),
        false => (
            spec.run.client_workers.max(1) as u128,
            format!("key `run.client_workers` = {}", spec.run.client_workers),
        ),
    }
}

/// The clients a trainer trains as one computation (`run.cohort`, resolving `"auto"` within
/// `run.cohort_mb`), and for `"auto"` the estimate it came from.
pub fn cohort(spec: &Spec) -> (usize, Option<String>) {
    cohort_within(spec, None)
}

/// [`cohort`] for a run on `device`: `"auto"` measured against the device's free memory too,
/// and said in the log.
pub fn cohort_on(spec: &Spec, device: &burn::tensor::Device) -> usize {
    // the device is asked only for "auto" (a fixed K reads nothing)
    let memory = (spec.run.cohort == COHORT_AUTO)
        .then(|| crate::kernels::device_memory(device))
        .flatten()
        .and_then(|(c, r)| Some((c?, r)));
    let (k, why) = cohort_within(spec, memory);
    if let Some(why) = why {
        eprintln!("{why}");
    }
    k
}

/// The share of a GPU's free memory that `run.cohort = "auto"` gives a cohort: the rest is
/// headroom for what the estimate leaves out (the runtime's pools, the data kept there).
pub const DEVICE_SHARE: f64 = 0.9;

/// [`cohort`] on a device whose memory is `device`: its capacity and what the process reserves
/// of it now ([`crate::kernels::device_memory`]); `"auto"` then also keeps within
/// [`DEVICE_SHARE`] of what is free.
pub fn cohort_within(spec: &Spec, device: Option<(u64, u64)>) -> (usize, Option<String>) {
    if spec.run.cohort != COHORT_AUTO {
        return (spec.run.cohort, None);
    }
    if spec.run.backend == Backend::Flex || spec.run.client_workers > 1 {
        let why = "run.cohort = \"auto\": 1 (a CPU trains fastest one client per core)";
        return (1, Some(why.into()));
    }
    let mut budget = (spec.run.cohort_mb * 1e6) as u128;
    let mut within = format!("run.cohort_mb = {}", spec.run.cohort_mb);
    if let Some((capacity, reserved)) = device {
        let free = (capacity.saturating_sub(reserved) as f64 * DEVICE_SHARE) as u128;
        if free < budget {
            budget = free;
            within = format!(
                "{:.0} % of the device's free memory ({} of {} free)",
                DEVICE_SHARE * 100.0,
                human(u128::from(capacity.saturating_sub(reserved))),
                human(u128::from(capacity))
            );
        }
    }
    let at = |k: usize| {
        let mut s = spec.clone();
        s.run.cohort = k;
        memory(&s)
    };
    let fits = |k: usize| {
        let m = at(k);
        m.model + m.train <= budget
    };
    // the largest K that fits (the bytes grow with K): a binary search over 1..=clients
    let (mut lo, mut hi) = (1, spec.fl.clients_per_round.max(1));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    let m = at(lo);
    let why = format!(
        "run.cohort = \"auto\": {lo} clients at once (of {} a round): their model copies {} and a training step's activations {} within {within}",
        spec.fl.clients_per_round,
        human(m.model),
        human(m.train),
    );
    (lo, Some(why))
}

/// What a run holds in memory at most, in bytes, as the run's checks count it (before its data
/// is loaded: a training batch of `local.batch_size`, an evaluation batch of
/// `fl.eval_batch_size`, each at most what the data allows once loaded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// The data set (None: its size is known once loaded, and counted then).
    pub data: Option<u128>,
    /// The model, its gradients and optimiser vectors, a copy set per client trained at once.
    pub model: u128,
    /// A training step's activations, for every client trained at once.
    pub train: u128,
    /// An evaluation batch's activations.
    pub eval: u128,
}

impl Memory {
    /// The peak: the data and the model with a training step's or an evaluation's activations.
    pub fn peak(&self) -> u128 {
        self.data.unwrap_or(0) + self.model + self.train.max(self.eval)
    }

    /// A line for `fedrun check`.
    pub fn line(&self, device: bool) -> String {
        let place = match device {
            true => "on the GPU (and the host)",
            false => "on the host",
        };
        let data = match self.data {
            Some(d) => human(d),
            None => "counted once loaded (its size depends on the files)".into(),
        };
        format!(
            "memory: about {} {place} at its peak: the data set {data}, the model with its copies {}, a training step's activations {}, an evaluation batch's {}",
            human(self.peak()),
            human(self.model),
            human(self.train),
            human(self.eval),
        )
    }
}

/// The model's bytes with `copies` clients' copies (each its parameters, gradient and optimiser
/// vectors), and the run's own (the global model, the evaluation model, the frozen models, the
/// flat vectors).
fn model_bytes(params: u128, copies: u128) -> u128 {
    params * 4 * (6 * copies + 10)
}

/// The floats a training sample keeps through a step, each copy's: the model's activations and,
/// in a GPU cohort (K > 1 on a GPU backend with fedrun's kernels), its batched convolutions'
/// columns with the largest one's backward temporaries ([`crate::kernels::conv2d_batched`]).
fn train_floats(spec: &Spec, size: &Size) -> u128 {
    let batched = spec.run.backend != Backend::Flex
        && spec.run.kernels == KernelChoice::Fedrun
        && cohort(spec).0 > 1;
    match batched {
        true => size
            .activations
            .saturating_add(size.columns)
            .saturating_add(size.columns_transient),
        false => size.activations,
    }
}

/// [`Memory`] of `spec` before its data is loaded: a pure function of the spec.
pub fn memory(spec: &Spec) -> Memory {
    let (features, classes) = input_of(&spec.data);
    let size = estimate(&spec.model, features, classes);
    let (copies, _) = at_once(spec);
    Memory {
        data: data_bytes(spec, features),
        model: model_bytes(size.params, copies),
        train: spec.local.batch_size as u128 * train_floats(spec, &size) * 4 * copies,
        eval: spec.fl.eval_batch_size as u128 * size.eval * 4,
    }
}

/// Check the sizes a spec implies before its data and model exist: the generated data, and
/// the model with its copies (one per client trained at once, the evaluation model, the frozen
/// models, the flat vectors). `fedrun check` runs it as the run does.
pub fn check_spec(spec: &Spec, budget: u64) -> Result<()> {
    let (features, classes) = input_of(&spec.data);
    let data = data_bytes(spec, features).unwrap_or(0);
    fits(data, budget, &data_keys(spec), "the data set")?;
    let size = estimate(&spec.model, features, classes);
    // the model with one client's copies first: a model too large is the model's keys' fault,
    // and only then the other clients' copies are `run.client_workers`' or `run.cohort`'s
    let keys = size_keys(&spec.model);
    let what = format!(
        "a model of about {} parameters, with its copies,",
        size.params
    );
    fits(data + size.params * 4 * 16, budget, &keys, &what)?;
    let (copies, key) = at_once(spec);
    if copies > 1 {
        let what = "a model copy per client trained at once";
        fits(data + model_bytes(size.params, copies), budget, &key, what)?;
    }
    // the whole estimate: with a training step's activations (a batch of `local.batch_size`
    // for every client trained at once) or an evaluation batch's
    let m = memory(spec);
    let keys = format!(
        "keys `local.batch_size` = {}, `fl.eval_batch_size` = {}",
        spec.local.batch_size, spec.fl.eval_batch_size
    );
    fits(
        m.peak(),
        budget,
        &keys,
        "the run's estimated peak (the data set, model copies and a step's activations)",
    )
}

/// Check a batch's activations once the data is loaded, with the batches as they will be: a
/// training batch at most a client's data (for every client trained at once), an evaluation
/// batch at most the test split.
pub fn check_batches(spec: &Spec, data: &FedData, budget: u64) -> Result<()> {
    let (features, classes) = input_of(&spec.data);
    let size = estimate(&spec.model, features, classes);
    let sizes = data.round_sizes(spec.data.deal, spec.fl.clients_per_round);
    let largest = sizes.into_iter().max().unwrap_or(0);
    let train = spec.local.batch_size.min(largest) as u128;
    let eval = spec.fl.eval_batch_size.min(data.test.len()) as u128;
    let (copies, at_once_key) = at_once(spec);
    // the data set as loaded, with the model and its copies
    let held = data.bytes() + model_bytes(size.params, copies);
    let keys = |key: &str, v: usize| format!("key `{key}` = {v} ({})", size_keys(&spec.model));
    let what = "a batch's activations, with the data set and the model";
    let train_acts = train * train_floats(spec, &size) * 4 * copies;
    let mut key = keys("local.batch_size", spec.local.batch_size);
    if copies > 1 {
        key = format!("{key}, with {at_once_key}");
    }
    fits(held + train_acts, budget, &key, what)?;
    let eval_acts = eval * size.eval * 4;
    let key = keys("fl.eval_batch_size", spec.fl.eval_batch_size);
    fits(held + eval_acts, budget, &key, what)
}

/// Check the per-client state of a run before it grows: `vectors` model-sized vectors of `dim`
/// floats for each of `clients` clients (at most, once every client has trained), or the part
/// of it `run.client_state_mb` keeps in memory.
pub fn check_state(
    spec: &Spec,
    clients: usize,
    vectors: usize,
    dim: usize,
    budget: u64,
) -> Result<()> {
    // the state comes on top of the model and its copies (as `check_spec` counts them)
    let model = model_bytes(dim as u128, at_once(spec).0);
    let bytes = clients as u128 * vectors as u128 * dim as u128 * 4;
    // and a round's clients' vectors as they were before it, kept while it runs (so that a
    // round stopped by a signal is undone)
    let undo = spec.fl.clients_per_round.min(clients) as u128 * vectors as u128 * dim as u128 * 4;
    let model = model + undo;
    let cap = (spec.run.client_state_mb * 1e6) as u128;
    if cap > 0 {
        let keys = format!("key `run.client_state_mb` = {}", spec.run.client_state_mb);
        let what = "the per-client state kept in memory, with the model and a round's undo copy,";
        return fits(model + bytes.min(cap), budget, &keys, what);
    }
    let keys = format!(
        "key `data.num_clients` = {} with `fl.algorithm` = \"{}\" (or set `run.client_state_mb` to keep at most that many MB of it in memory and spill the rest to the run folder)",
        spec.data.num_clients, spec.fl.algorithm
    );
    let what = format!(
        "{vectors} per-client vector(s) of {dim} floats for each of {clients} clients, with the model and a round's undo copy,"
    );
    fits(model + bytes, budget, &keys, &what)
}

/// Local steps a run may take in all (rounds × clients a round × steps a client): 10¹¹, over
/// 20,000 times the largest paper setting (FedNAR's CIFAR-10: 1,000 rounds × 20 clients × 250
/// steps = 5·10⁶) and years of work at any rate a model in fedrun steps. A spec beyond it is a
/// slip (a digit too many, one key taken for another), named before anything runs.
pub const MAX_LOCAL_STEPS: u128 = 100_000_000_000;

/// Refuse a spec whose training cannot finish: more than [`MAX_LOCAL_STEPS`] local steps in
/// all, naming the keys that multiply to it. With `local.epochs`, a client's steps depend on its
/// data: the largest client of `data` when it is loaded, the synthetic set's size before; for
/// another data set before loading nothing is said (the run checks again once it has the data).
pub fn check_work(spec: &Spec, data: Option<&FedData>) -> Result<()> {
    let (l, fl) = (&spec.local, &spec.fl);
    let (steps, per_client) = if l.epochs > 0 {
        let largest = match data {
            Some(d) => d.clients.iter().map(Vec::len).max().unwrap_or(0),
            None if spec.data.dataset == Dataset::Synthetic => spec.data.synthetic_train,
            None => return Ok(()),
        };
        let batches = largest.div_ceil(l.batch_size.max(1)) as u128;
        let what = format!(
            "`local.epochs` = {} (of {batches} batches of `local.batch_size` = {} over the largest client's {largest} samples)",
            l.epochs, l.batch_size
        );
        (l.epochs as u128 * batches, what)
    } else {
        (l.steps as u128, format!("`local.steps` = {}", l.steps))
    };
    let total = fl.rounds as u128 * fl.clients_per_round as u128 * steps;
    if total <= MAX_LOCAL_STEPS {
        return Ok(());
    }
    Err(Error::Config(format!(
        "`fl.rounds` = {} × `fl.clients_per_round` = {} × {per_client} is {:.1e} local steps in all; fedrun refuses over {:.0e} (20,000 times the largest paper setting, years of work at any speed): lower one of these keys",
        fl.rounds, fl.clients_per_round, total as f64, MAX_LOCAL_STEPS as f64
    )))
}
