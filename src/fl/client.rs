//! Local training of one client: exactly K steps (or E epochs) of mini-batches from a shuffled
//! pass over the client's data, reshuffled when it runs out; the last batch of a pass may be
//! short. One model object and two flat buffers (x, g) are reused for every client.
//!
//! Each step runs on the host (parameters written to the device, the gradient read back, the
//! algorithm's term and the optimizer chain over flat vectors: fastest on the CPU) or, with
//! `device_step`, stays on the training device (`fl/resident.rs`: fewest transfers on a GPU).

use burn::module::Module;
use burn::tensor::Device;

use super::algorithm::{Algorithm, Frozen, LocalRule, LossInput, StepCtx, Uplink};
use super::losses::cross_entropy;
use super::resident::Resident;
use super::schedule::Schedule;
use super::step::LocalOptimizer;
use crate::data::{self, FedData};
use crate::model::params::{Layout, read_grads, read_params, write_params};
use crate::model::{Model, Outputs};
use crate::rng::Rng;

/// Per-client results besides Δ_i (which is left in the trainer's buffer).
#[derive(Clone, Debug, Default)]
pub struct LocalStats {
    /// What the client sends up besides Δ_i (see `Algorithm::client_uplink`).
    pub uplink: Uplink,
    pub loss_sum: f64,
    pub steps: usize,
    pub clipped: usize,
    pub clip_norm_sum: f64,
    pub samples: usize,
    /// First step whose loss was not finite, if any.
    pub diverged_at: Option<usize>,
}

pub struct Trainer {
    model: Option<Model>,
    /// Copies of the model that hold the frozen models an algorithm's loss reads (made when
    /// first needed).
    frozen: Vec<Option<Model>>,
    device: Device,
    x: Vec<f32>,
    g: Vec<f32>,
    /// A copy of the model at the anchor, and its batch gradient, for a term that reads the
    /// anchor's gradient (Mime); made when first needed.
    anchor_model: Option<Model>,
    g_anchor: Vec<f32>,
    pub optimizer: LocalOptimizer,
    /// Keep the parameters on the device during a client's steps (`run.local_step`), for
    /// algorithms without their own update rule.
    device_step: bool,
    /// Where each parameter tensor sits in the flat vectors.
    ranges: Vec<std::ops::Range<usize>>,
}

/// Local steps of a client with `n` samples.
pub fn local_steps(steps: usize, epochs: usize, batch: usize, n: usize) -> usize {
    if epochs > 0 {
        epochs * n.div_ceil(batch)
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
}

impl Trainer {
    pub fn new(
        model: Model,
        device: Device,
        dim: usize,
        optimizer: LocalOptimizer,
        device_step: bool,
    ) -> Self {
        let ranges = Layout::of(&model)
            .tensors
            .iter()
            .map(|t| t.range())
            .collect();
        Trainer {
            model: Some(model),
            frozen: Vec::new(),
            device,
            x: vec![0.0; dim],
            g: vec![0.0; dim],
            anchor_model: None,
            g_anchor: Vec::new(),
            optimizer,
            device_step,
            ranges,
        }
    }

    /// Load the frozen models `alg` names for `client`.
    fn load_frozen(&mut self, alg: &dyn Algorithm, client: usize, anchor: &[f32]) -> usize {
        let frozen = alg.frozen(client);
        for (k, f) in frozen.iter().enumerate() {
            if self.frozen.len() <= k {
                self.frozen.push(None);
            }
            let m = self.frozen[k]
                .take()
                .unwrap_or_else(|| self.model.as_ref().expect("model").clone());
            let params = match f {
                Frozen::Anchor => anchor,
                Frozen::Params(p) => p,
            };
            self.frozen[k] = Some(write_params(m, params).no_grad());
        }
        frozen.len()
    }

    /// Train `w.client` from `w.anchor` for `w.steps` steps. On return [`Trainer::delta`]
    /// holds Δ_i = x_i − anchor.
    pub fn train(
        &mut self,
        data: &FedData,
        alg: &dyn Algorithm,
        w: &Work,
        rng: &mut Rng,
    ) -> LocalStats {
        let (client, anchor) = (w.client, w.anchor);
        let idx = &data.clients[client];
        let per_epoch = idx.len().div_ceil(w.batch_size).max(1);
        let n_frozen = self.load_frozen(alg, client, anchor);
        self.x.copy_from_slice(anchor);
        let mut stats = LocalStats::default();
        if alg.wants_full_gradient() {
            let g = self.full_gradient(data, idx, anchor, w.batch_size);
            stats.uplink.push(("full_grad".into(), g));
        }
        let mut rule: Option<Box<dyn LocalRule>> = alg.local_rule(client);
        let mut order: Vec<usize> = Vec::new();
        let mut pos = usize::MAX;
        let mut model = self.model.take().expect("model");
        let ctx0 = StepCtx {
            round: w.round,
            epoch: 0,
            step: 0,
            steps: w.steps,
            lr: w.schedule.lr(w.round, 0),
        };
        let term0 = alg.local_term(client, &ctx0);
        let anchor_model = if term0.anchor_grad != 0.0 {
            self.g_anchor.resize(self.g.len(), 0.0);
            let m = self.anchor_model.take().unwrap_or_else(|| model.clone());
            Some(write_params(m, anchor))
        } else {
            None
        };
        let resident = if self.device_step && rule.is_none() && anchor_model.is_none() {
            model = write_params(model, anchor);
            Some(Resident::begin(&self.ranges, anchor, &term0, &self.device))
        } else {
            None
        };
        drop(term0);
        for step in 0..w.steps {
            if pos >= order.len() {
                order.clear();
                order.extend_from_slice(idx);
                rng.shuffle(&mut order);
                pos = 0;
            }
            let end = (pos + w.batch_size).min(order.len());
            let bidx = &order[pos..end];
            pos = end;
            let epoch = step / per_epoch;
            let ctx = StepCtx {
                round: w.round,
                epoch,
                step,
                steps: w.steps,
                lr: w.schedule.lr(w.round, epoch),
            };
            let (input, y) = data::batch(&data.train, bidx, data.augment, Some(rng), &self.device);
            if resident.is_none() {
                model = write_params(model, &self.x);
            }
            let frozen_models: Vec<&Model> = self.frozen[..n_frozen]
                .iter()
                .map(|m| m.as_ref().expect("frozen"))
                .collect();
            let frozen: Vec<Outputs> = if alg.frozen_forward() {
                frozen_models
                    .iter()
                    .map(|m| m.outputs(input.clone()).detach())
                    .collect()
            } else {
                Vec::new()
            };
            if let Some(am) = &anchor_model {
                let la = cross_entropy(am.forward(input.clone()), y.clone());
                let grads = la.backward();
                read_grads(am, &grads, &mut self.g_anchor);
            }
            let out = model.outputs(input);
            let loss = alg
                .local_loss(&LossInput {
                    client,
                    ctx: &ctx,
                    out: &out,
                    targets: &y,
                    frozen: &frozen,
                    frozen_models: &frozen_models,
                })
                .unwrap_or_else(|| cross_entropy(out.logits.clone(), y));
            drop((out, frozen, frozen_models));
            let term = alg.local_term(client, &ctx);
            let (loss_v, s) = match &resident {
                Some(r) => {
                    let (m, loss_v, s) = r.step(model, loss, &term, &self.optimizer, ctx.lr as f32);
                    model = m;
                    (loss_v, s)
                }
                None => {
                    let loss_v = loss.clone().into_scalar::<f32>() as f64;
                    let grads = loss.backward();
                    read_grads(&model, &grads, &mut self.g);
                    drop(grads);
                    term.apply(anchor, &self.x, &self.g_anchor, &mut self.g);
                    let s = match rule.as_mut() {
                        Some(r) => {
                            let s = self.optimizer.transform(&self.x, &mut self.g);
                            r.step(ctx.lr as f32, &mut self.x, &self.g);
                            s
                        }
                        None => self.optimizer.step(ctx.lr as f32, &mut self.x, &mut self.g),
                    };
                    (loss_v, s)
                }
            };
            drop(term);
            if !loss_v.is_finite() && stats.diverged_at.is_none() {
                stats.diverged_at = Some(step);
            }
            stats.loss_sum += loss_v;
            stats.steps += 1;
            stats.samples += bidx.len();
            stats.clip_norm_sum += s.pre_clip_norm;
            stats.clipped += usize::from(s.clipped);
        }
        if resident.is_some() {
            read_params(&model, &mut self.x);
        }
        self.model = Some(model);
        self.anchor_model = anchor_model;
        if let Some(r) = rule {
            stats.uplink.extend(r.finish());
        }
        // Δ_i = x_i − anchor, in place
        self.x.iter_mut().zip(anchor).for_each(|(x, a)| *x -= a);
        stats
    }

    /// The mean loss gradient over the client's whole data at `at`, in batches of
    /// `batch_size` in data order without augmentation, each batch weighted by its size (so
    /// the short last batch counts for what it holds): the gradient of the whole data set in
    /// one batch, up to float rounding.
    pub fn full_gradient(
        &mut self,
        data: &FedData,
        idx: &[usize],
        at: &[f32],
        batch_size: usize,
    ) -> Vec<f32> {
        let mut model = self.model.take().expect("model");
        model = write_params(model, at);
        let mut acc = vec![0f64; self.g.len()];
        for chunk in idx.chunks(batch_size.max(1)) {
            let (input, y) =
                data::batch(&data.train, chunk, data::Augment::None, None, &self.device);
            let loss = cross_entropy(model.forward(input), y);
            let grads = loss.backward();
            read_grads(&model, &grads, &mut self.g);
            let wgt = chunk.len() as f64 / idx.len() as f64;
            acc.iter_mut()
                .zip(&self.g)
                .for_each(|(a, g)| *a += wgt * *g as f64);
        }
        self.model = Some(model);
        acc.into_iter().map(|a| a as f32).collect()
    }

    /// Δ_i of the last trained client.
    pub fn delta(&self) -> &[f32] {
        &self.x
    }
}
