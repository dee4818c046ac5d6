//! A client's local training from its plan.

use std::ops::Range;

use burn::tensor::{Device, Int, Tensor};

use super::batches::Batches;
use super::chain::{ClipDecay, DeviceChain, HostChain};
use super::deferred::Deferred;
use super::device;
use crate::data::{self, FedData, Input};
use crate::fl::losses::cross_entropy;
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput, Uplink};
use crate::fl::schedule::Schedule;
use crate::model::copies::Stacked;
use crate::model::{Model, Outputs};
use crate::optim::{Ctx, Log, Moments};
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
    /// the step and the layer, the same alone and in a cohort, and the same for the forward at
    /// the anchor that a term reads (SVRG's correction then cancels exactly at x = anchor).
    pub dropout_seed: u64,
    /// Set from outside (a signal): the steps end before the next one (the caller discards
    /// the round).
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
}

/// The seed of `w`'s masks at `step` (see [`Work::dropout_seed`]).
pub fn step_masks(w: &Work, step: usize) -> u64 {
    Rng::derive(w.dropout_seed, Stream::Dropout, &[step as u64]).next_u64()
}

/// The flat vectors a trainer reuses: the parameters x, the gradient g and the anchor's
/// gradient on the batch.
struct Buffers {
    x: Vec<f32>,
    g: Vec<f32>,
    g_anchor: Vec<f32>,
}

/// The loss of a step: the plan's objective and the models it reads.
struct Objective<'p> {
    loss: Option<&'p dyn LocalLoss>,
    frozen: Vec<Stacked<'p>>,
    frozen_outputs: bool,
    /// The model at the anchor, for a term that reads the anchor's gradient.
    anchor: Option<Stacked<'p>>,
}

impl Objective<'_> {
    /// The batch loss of `model` (one copy); with an anchor, the anchor's batch gradient lands
    /// in `g_anchor` first. Both forwards draw the step's masks (`mask`).
    fn loss(
        &self,
        model: &Stacked,
        input: Input,
        y: Tensor<1, Int>,
        g_anchor: &mut [f32],
        mask: u64,
    ) -> Tensor<1> {
        let frozen: Vec<Outputs> = match self.frozen_outputs {
            true => self
                .frozen
                .iter()
                .map(|m| m.outputs(input.clone(), None).copy(0).detach())
                .collect(),
            false => Vec::new(),
        };
        if let Some(am) = &self.anchor {
            let logits = am.outputs(input.clone(), Some(&[mask])).copy(0).logits;
            let mut grads = cross_entropy(logits, y.clone()).backward();
            am.read_grads(&mut grads, &mut [g_anchor]);
        }
        let out = model.outputs(input, Some(&[mask])).copy(0);
        match self.loss {
            Some(l) => l.loss(&LossInput {
                out: &out,
                targets: &y,
                frozen: &frozen,
                frozen_models: &self.frozen,
            }),
            None => cross_entropy(out.logits.clone(), y),
        }
    }
}

/// What a client's steps read: its data, its work and the training device.
struct Job<'a> {
    data: &'a FedData,
    w: &'a Work<'a>,
    device: &'a Device,
}

/// How the steps move the parameters.
enum Stepper<'a> {
    Host(HostChain<'a>),
    Device(Box<DeviceChain>),
}

pub struct Trainer {
    model: Model,
    buf: Buffers,
    device: Device,
    /// The chain's clip and weight decay.
    base: ClipDecay,
    /// Keep the parameters on the device during a client's steps (`run.local_step`), for plans
    /// whose rule is SGD.
    device_step: bool,
    /// Where each parameter tensor sits in the flat vectors.
    ranges: Vec<Range<usize>>,
}

impl Trainer {
    pub fn new(model: Model, device: Device, base: ClipDecay, device_step: bool) -> Self {
        let layout = model.layout();
        let ranges = layout.tensors.iter().map(|t| t.range()).collect();
        let dim = layout.total;
        Trainer {
            model,
            buf: Buffers {
                x: vec![0.0; dim],
                g: vec![0.0; dim],
                g_anchor: Vec::new(),
            },
            device,
            base,
            device_step,
            ranges,
        }
    }

    /// Train `w.client` from `w.anchor` as `plan` says. On return [`Trainer::delta`] holds
    /// Δ_i = x_i − anchor.
    pub fn train(
        &mut self,
        data: &FedData,
        plan: ClientPlan,
        w: &Work,
        rng: &mut Rng,
    ) -> LocalStats {
        let idx = &data.clients[w.client];
        let mut stats = LocalStats::default();
        if plan.full_gradient {
            let g = self.full_gradient(data, idx, w.anchor, w.batch_size);
            stats.uplink.full_gradient = Some(g);
        }
        self.buf.x.copy_from_slice(w.anchor);
        let (model, device) = (&self.model, &self.device);
        let anchor = (plan.term.anchor_grad != 0.0).then(|| {
            self.buf.g_anchor.resize(self.buf.g.len(), 0.0);
            Stacked::new(model, &[w.anchor], device)
        });
        let frozen = plan.frozen.iter().map(|f| {
            let params = match f {
                Frozen::Anchor => w.anchor,
                Frozen::Params(p) => p,
            };
            Stacked::frozen(model, &[params], device)
        });
        let device_chain = self
            .device_step
            .then(|| {
                let plans = [(&plan.term, &plan.rule)];
                DeviceChain::new(&plans, &[w.anchor], self.base, &self.ranges, device)
            })
            .flatten();
        let stepper = match device_chain {
            Some(d) => Stepper::Device(Box::new(d)),
            None => Stepper::Host(HostChain::new(plan.term, w.anchor, self.base, plan.rule)),
        };
        let objective = Objective {
            loss: plan.loss,
            frozen: frozen.collect(),
            frozen_outputs: plan.frozen_outputs,
            anchor,
        };
        let job = Job { data, w, device };
        let moments = run_steps(
            model,
            stepper,
            &objective,
            &mut self.buf,
            &mut stats,
            &job,
            rng,
        );
        stats.uplink.moments = moments;
        // Δ_i = x_i − anchor, in place
        self.buf
            .x
            .iter_mut()
            .zip(w.anchor)
            .for_each(|(x, a)| *x -= a);
        stats
    }

    /// The mean loss gradient over the client's whole data at `at`, without dropout (the
    /// gradient of the point, not of random masks), in batches of `batch_size` in data order
    /// without augmentation, each batch weighted by its size (so the short last batch counts for
    /// what it holds): the gradient of the whole data set in one batch, up to float rounding.
    pub fn full_gradient(
        &mut self,
        data: &FedData,
        idx: &[usize],
        at: &[f32],
        batch_size: usize,
    ) -> Vec<f32> {
        let model = Stacked::new(&self.model, &[at], &self.device);
        let mut acc = vec![0f64; self.buf.g.len()];
        for chunk in idx.chunks(batch_size.max(1)) {
            let (input, y) =
                data::batch(&data.train, chunk, data::Augment::None, None, &self.device);
            let logits = model.outputs(input, None).copy(0).logits;
            let mut grads = cross_entropy(logits, y).backward();
            model.read_grads(&mut grads, &mut [&mut self.buf.g]);
            let wgt = chunk.len() as f64 / idx.len() as f64;
            acc.iter_mut()
                .zip(&self.buf.g)
                .for_each(|(a, g)| *a += wgt * *g as f64);
        }
        acc.into_iter().map(|a| a as f32).collect()
    }

    /// Δ_i of the last trained client.
    pub fn delta(&self) -> &[f32] {
        &self.buf.x
    }
}

/// The client's steps; returns the moments its rule ended with.
fn run_steps(
    model: &Model,
    mut stepper: Stepper,
    objective: &Objective,
    buf: &mut Buffers,
    stats: &mut LocalStats,
    job: &Job,
    rng: &mut Rng,
) -> Option<Moments> {
    let (data, w) = (job.data, job.w);
    let idx = &data.clients[w.client];
    let per_epoch = idx.len().div_ceil(w.batch_size).max(1);
    let mut batches = Batches::new(idx, w.batch_size);
    let mut rows = match stepper {
        Stepper::Device(_) => device::upload(model, w.anchor, job.device),
        Stepper::Host(_) => Vec::new(),
    };
    let (mut pending, mut samples) = (Deferred::default(), Vec::new());
    for step in 0..w.steps {
        if w.stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        {
            break;
        }
        let bidx = batches.next_batch(rng);
        let lr = w.schedule.lr(w.round, step / per_epoch);
        let (input, y) = data::batch(&data.train, bidx, data.augment, Some(rng), job.device);
        let mask = step_masks(w, step);
        let (stacked, leaves) = match &stepper {
            Stepper::Device(_) => {
                let leaves = device::leaves(&rows);
                (Stacked::of(model, leaves.clone(), 1), leaves)
            }
            Stepper::Host(_) => (Stacked::new(model, &[&buf.x], job.device), Vec::new()),
        };
        let loss = objective.loss(&stacked, input, y, &mut buf.g_anchor, mask);
        let ctx = Ctx {
            round: w.round,
            lr,
            steps: w.steps,
            aux_grad: &buf.g_anchor,
            ..Ctx::default()
        };
        match &mut stepper {
            Stepper::Device(chain) => {
                let numbers;
                (rows, numbers) = device::step(chain, rows, &leaves, loss, &ctx);
                pending.push(numbers);
                samples.push(bidx.len());
            }
            Stepper::Host(chain) => {
                let loss_v = loss.clone().into_scalar::<f32>() as f64;
                let mut grads = loss.backward();
                stacked.read_grads(&mut grads, &mut [&mut buf.g]);
                drop(grads);
                let log = chain.step(&mut buf.x, &mut buf.g, &ctx);
                stats.record(step, loss_v, bidx.len(), &log);
            }
        }
    }
    match stepper {
        Stepper::Device(chain) => {
            // the steps' numbers in one read, recorded as a read per step would have
            for (step, (numbers, n)) in pending.read().iter().zip(samples).enumerate() {
                let (loss_v, log) = device::read(&chain, numbers);
                stats.record(step, loss_v, n, &log);
            }
            device::read_params(rows, &mut buf.x);
            None
        }
        Stepper::Host(chain) => chain.into_moments(),
    }
}
