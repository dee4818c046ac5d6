//! The clients' batches at a step: every client's batch drawn from its own stream as when it
//! trains alone, grouped by size; and each client's context at the steps of a window.

use burn::tensor::{Device, Int, Tensor};

use super::batches::Batches;
use super::chain::StepPlan;
use super::work::Work;
use crate::data::{self, FedData, Input};
use crate::model::copies::RowMask;
use crate::optim::Ctx;
use crate::rng::Rng;

/// One client's batch at a step: the k-th client's `len` samples.
pub struct Drawn {
    pub k: usize,
    pub len: usize,
    pub input: Input,
    pub y: Tensor<1, Int>,
}

/// Each client's batches, and the cohort's step count (its clients' most).
pub fn batches_of<'a>(data: &'a FedData, works: &[Work]) -> (Vec<Batches<'a>>, usize) {
    let batches = works
        .iter()
        .map(|w| Batches::new(&data.clients[w.client], w.batch_size))
        .collect();
    (batches, works.iter().map(|w| w.steps).max().unwrap_or(0))
}

/// Whether the run was told to stop (a signal): the cohort stops before its next step.
pub fn stopped(works: &[Work]) -> bool {
    works
        .first()
        .and_then(|w| w.stop)
        .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
}

/// The batch of every client that takes part in `step`, drawn as it would be alone.
pub fn draw(
    data: &FedData,
    works: &[Work],
    batches: &mut [Batches],
    rngs: &mut [Rng],
    step: usize,
    device: &Device,
) -> Vec<Drawn> {
    let mut out = Vec::new();
    for (k, (w, (b, rng))) in works
        .iter()
        .zip(batches.iter_mut().zip(rngs.iter_mut()))
        .enumerate()
    {
        if step >= w.steps {
            continue;
        }
        let idx = b.next_batch(rng);
        let len = idx.len();
        let (input, y) = data::batch(&data.train, idx, data.augment, Some(rng), device);
        out.push(Drawn { k, len, input, y });
    }
    out
}

/// The context of a client's `step`: its round, step count and learning rate (the schedule's
/// at the step's epoch).
pub fn ctx_at(data: &FedData, w: &Work, step: usize) -> Ctx {
    let per_epoch = data.clients[w.client].len().div_ceil(w.batch_size).max(1);
    Ctx {
        round: w.round,
        lr: w.schedule.lr(w.round, step / per_epoch),
        steps: w.steps,
        ..Ctx::default()
    }
}

/// The most steps whose numbers (each client's learning rate, whether it steps) a training's
/// tables hold at once by default: a longer training rewrites them every window of steps, so
/// that what it holds does not grow with its steps ([`crate::fl::client::Trainer::with_window`]).
pub const WINDOW: usize = 4096;

/// Each client's context at each of the cohort's steps from `first` (at most `window`), and
/// whether it takes part (a client past its last step does not).
pub fn step_plan(data: &FedData, works: &[Work], first: usize, window: usize) -> StepPlan {
    let steps = works.iter().map(|w| w.steps).max().unwrap_or(0);
    let window = first..steps.min(first + window).max(first);
    StepPlan {
        ctx: (window.clone())
            .map(|s| works.iter().map(|w| ctx_at(data, w, s)).collect())
            .collect(),
        active: window
            .map(|s| works.iter().map(|w| s < w.steps).collect())
            .collect(),
    }
}

/// A step's clients of one batch size with their batches side by side: client `ks[i]`'s `len`
/// samples are rows `i·len..(i+1)·len` of `input` and `y`; `mask`: which rows count, for a group
/// padded to `len` rows a client ([`RowMask`]; None: every row).
pub struct Group {
    pub ks: Vec<usize>,
    pub len: usize,
    pub input: Input,
    pub y: Tensor<1, Int>,
    pub mask: Option<RowMask>,
}

/// The drawn batches in groups of one size, in client order within each group, each group's
/// inputs and targets one client's after another (`[K·b, …]`).
pub fn groups(drawn: Vec<Drawn>) -> Vec<Group> {
    let mut out: Vec<Vec<Drawn>> = Vec::new();
    for d in drawn {
        match out.iter_mut().find(|g| g[0].len == d.len) {
            Some(g) => g.push(d),
            None => out.push(vec![d]),
        }
    }
    (out.iter())
        .map(|g| Group {
            ks: g.iter().map(|d| d.k).collect(),
            len: g[0].len,
            input: Input::cat(g.iter().map(|d| &d.input).collect()),
            y: Tensor::cat(g.iter().map(|d| d.y.clone()).collect(), 0),
            mask: None,
        })
        .collect()
}
