//! Local training of one client: exactly K steps (or E epochs) of mini-batches from a shuffled
//! pass over the client's data, reshuffled when it runs out; the last batch of a pass may be
//! short. One model object and two flat buffers (x, g) are reused for every client.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::Device;

use super::algorithm::Algorithm;
use super::step::LocalOptimizer;
use crate::data::{self, FedData};
use crate::model::Model;
use crate::model::params::{read_grads, write_params};
use crate::rng::Rng;

/// Per-client results besides Δ_i (which is left in the trainer's buffer).
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalStats {
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
    device: Device,
    x: Vec<f32>,
    g: Vec<f32>,
    pub optimizer: LocalOptimizer,
}

/// Local steps of a client with `n` samples.
pub fn local_steps(steps: usize, epochs: usize, batch: usize, n: usize) -> usize {
    if epochs > 0 {
        epochs * n.div_ceil(batch)
    } else {
        steps
    }
}

impl Trainer {
    pub fn new(model: Model, device: Device, dim: usize, optimizer: LocalOptimizer) -> Self {
        Trainer {
            model: Some(model),
            device,
            x: vec![0.0; dim],
            g: vec![0.0; dim],
            optimizer,
        }
    }

    /// Train `client` from `anchor` for `steps` steps at rate `lr`. On return
    /// [`Trainer::delta`] holds Δ_i = x_i − anchor.
    #[allow(clippy::too_many_arguments)]
    pub fn train(
        &mut self,
        data: &FedData,
        client: usize,
        anchor: &[f32],
        alg: &dyn Algorithm,
        steps: usize,
        batch_size: usize,
        lr: f64,
        rng: &mut Rng,
    ) -> LocalStats {
        let idx = &data.clients[client];
        let loss_fn = CrossEntropyLossConfig::new().init(&self.device);
        self.x.copy_from_slice(anchor);
        let mut stats = LocalStats::default();
        let mut order: Vec<usize> = Vec::new();
        let mut pos = usize::MAX;
        let mut model = self.model.take().expect("model");
        for step in 0..steps {
            if pos >= order.len() {
                order.clear();
                order.extend_from_slice(idx);
                rng.shuffle(&mut order);
                pos = 0;
            }
            let end = (pos + batch_size).min(order.len());
            let bidx = &order[pos..end];
            pos = end;
            let (input, y) = data::batch(&data.train, bidx, data.augment, Some(rng), &self.device);
            model = write_params(model, &self.x);
            let logits = model.forward(input);
            let loss = loss_fn.forward(logits, y);
            let loss_v = loss.clone().into_scalar::<f32>() as f64;
            let grads = loss.backward();
            read_grads(&model, &grads, &mut self.g);
            drop(grads);
            if !loss_v.is_finite() && stats.diverged_at.is_none() {
                stats.diverged_at = Some(step);
            }
            alg.local_grad(client, anchor, &self.x, &mut self.g);
            let s = self.optimizer.step(lr as f32, &mut self.x, &mut self.g);
            stats.loss_sum += loss_v;
            stats.steps += 1;
            stats.samples += bidx.len();
            stats.clip_norm_sum += s.pre_clip_norm;
            stats.clipped += usize::from(s.clipped);
        }
        self.model = Some(model);
        // Δ_i = x_i − anchor, in place
        self.x.iter_mut().zip(anchor).for_each(|(x, a)| *x -= a);
        stats
    }

    /// Δ_i of the last trained client.
    pub fn delta(&self) -> &[f32] {
        &self.x
    }
}
