//! What one client's local training is asked to do, and what it reports besides Δ_i.

use crate::fl::plan::Uplink;
use crate::fl::schedule::Schedule;
use crate::optim::Log;
use crate::rng::{Rng, Stream};

/// Per-client results besides Δ_i (which is left in the trainer's buffer).
#[derive(Clone, Debug, Default)]
pub struct LocalStats {
    /// What the client sends up besides Δ_i, as its plan asked.
    pub uplink: Uplink,
    pub loss_sum: f64,
    pub steps: usize,
    pub clipped: usize,
    pub clip_norm_sum: f64,
    pub samples: usize,
    /// First step whose loss was not finite, if any.
    pub diverged_at: Option<usize>,
}

impl LocalStats {
    pub(super) fn record(&mut self, step: usize, loss: f64, samples: usize, log: &Log) {
        if !loss.is_finite() && self.diverged_at.is_none() {
            self.diverged_at = Some(step);
        }
        self.loss_sum += loss;
        self.steps += 1;
        self.samples += samples;
        self.clip_norm_sum += log.pre_clip_norm;
        self.clipped += usize::from(log.clipped);
    }
}

/// Local steps of a client with `n` samples.
pub fn local_steps(steps: usize, epochs: usize, batch: usize, n: usize) -> usize {
    if epochs > 0 {
        epochs.saturating_mul(n.div_ceil(batch))
    } else {
        steps
    }
}

/// What one client's local training is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Work<'a> {
    pub client: usize,
    pub round: usize,
    /// The model the client starts from.
    pub anchor: &'a [f32],
    pub steps: usize,
    pub batch_size: usize,
    pub schedule: &'a Schedule,
    /// The client's dropout stream in this round: a step's masks are a pure function of it,
    /// the step and the layer ([`step_masks`]), the same alone and in a cohort, and the same
    /// for the forward at the anchor that a term reads (SVRG's correction then cancels exactly
    /// at x = anchor).
    pub dropout_seed: u64,
    /// Set from outside (a signal): the steps end before the next one (the caller discards
    /// the round).
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
}

/// The seed of `w`'s dropout masks at `step`.
pub fn step_masks(w: &Work, step: usize) -> u64 {
    Rng::derive(w.dropout_seed, Stream::Dropout, &[step as u64]).next_u64()
}
