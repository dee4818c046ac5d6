//! One round: sample, train each client from the broadcast model as its plan says, aggregate,
//! update the server.

use super::local_trainer::LocalTrainer;
use crate::error::Error;
use crate::fl::client::LocalStats;
use crate::fl::plan::{ClientInfo, ClientPlan, Report};
use crate::fl::strategy::{Aggregate, RoundInfo, ServerLog, ServerStep, Strategy, Traffic};
use crate::optim::global_norm;
use crate::optim::quantize::{bits, quantize_parts};
use crate::rng::{Rng, Stream};

/// Why a round did not finish.
#[derive(Debug)]
pub enum Stop {
    /// A non-finite loss or model: the round (counted from 1, as in the CSV), the client if one
    /// is to blame, and what.
    Diverged {
        round: usize,
        client: Option<usize>,
        message: String,
    },
    /// The algorithm refused what a client sent, or the device failed on the training.
    Failed(Error),
}

impl From<Stop> for Error {
    fn from(s: Stop) -> Error {
        match s {
            Stop::Diverged { message, .. } => Error::Run(message),
            Stop::Failed(e) => e,
        }
    }
}

/// What a round needs besides the algorithm and the trainer.
pub struct RoundConfig {
    pub seed: u64,
    pub clients_per_round: usize,
    /// The round's learning rate (of its first local epoch).
    pub lr: f64,
    /// The server learning rate η_g.
    pub server_lr: f64,
    /// Weigh clients equally in Δ̄ (`fl.aggregation = "uniform"`) instead of by size.
    pub uniform: bool,
    /// The uplink's quantizer, if the updates are quantized.
    pub uplink: Option<QuantizedUplink>,
    /// The clients in the federation this round, when they are not all of them
    /// (`fl.active_clients`): the round samples among these.
    pub active: Option<Vec<usize>>,
}

/// FedPAQ's uplink: each client's update quantized with `levels` levels, one norm per range of
/// `parts` (the whole vector, each parameter tensor, or each convolution weight); what no part
/// covers is sent exact.
pub struct QuantizedUplink {
    pub levels: usize,
    pub parts: Vec<std::ops::Range<usize>>,
}

impl QuantizedUplink {
    /// Client c's update of round t as the server receives it (its own stream of roundings).
    fn send(&self, seed: u64, t: usize, c: usize, delta: &[f32]) -> Vec<f32> {
        let mut rng = Rng::derive(seed, Stream::Quantize, &[t as u64, c as u64]);
        let mut out = delta.to_vec();
        quantize_parts(delta, self.levels, &self.parts, &mut rng, &mut out);
        out
    }

    /// Bytes of one update of `dim` values: the quantized parts' bits, rounded up to whole
    /// bytes, and 4 a value sent exact.
    fn bytes(&self, dim: usize) -> u64 {
        let quantized: usize = self.parts.iter().map(|r| r.len()).sum();
        bits(quantized, self.parts.len(), self.levels).div_ceil(8) + floats(1, dim - quantized)
    }
}

/// Bytes of `vectors` model-sized f32 vectors of `dim` values.
fn floats(vectors: usize, dim: usize) -> u64 {
    4 * (vectors * dim) as u64
}

/// What a round reports.
#[derive(Clone, Debug, Default)]
pub struct RoundStats {
    pub loss_sum: f64,
    pub steps: usize,
    pub clipped: usize,
    pub clip_norm_sum: f64,
    /// Training samples processed (short batches counted as they are).
    pub samples: usize,
    pub update_norm: f64,
    pub server: ServerLog,
    /// Bytes sent to the round's clients and by them (`Strategy::traffic`, the model, the
    /// update as the uplink sends it).
    pub down_bytes: u64,
    pub up_bytes: u64,
}

impl RoundStats {
    fn add(&mut self, ls: &LocalStats) {
        self.loss_sum += ls.loss_sum;
        self.steps += ls.steps;
        self.clipped += ls.clipped;
        self.clip_norm_sum += ls.clip_norm_sum;
        self.samples += ls.samples;
    }

    /// One client's traffic: the model and `t.down` more vectors down; its update (`update`
    /// bytes) and `t.up` more vectors up.
    fn count(&mut self, t: Traffic, dim: usize, update: u64) {
        self.down_bytes += floats(1 + t.down, dim);
        self.up_bytes += update + floats(t.up, dim);
    }
}

/// Clients sampled in round t: `clients_per_round` distinct of `n`, from the round's stream.
pub fn sample_clients(seed: u64, t: usize, n: usize, k: usize) -> Vec<usize> {
    Rng::derive(seed, Stream::Sampling, &[t as u64]).choose_distinct(n, k)
}

/// Clients sampled in round t among `active` (all `n` when None): the same draw, over positions
/// in the active set.
pub fn sample_active(cfg: &RoundConfig, t: usize, n: usize) -> Vec<usize> {
    let k = cfg.clients_per_round;
    match &cfg.active {
        None => sample_clients(cfg.seed, t, n, k),
        Some(a) => sample_clients(cfg.seed, t, a.len(), k)
            .into_iter()
            .map(|i| a[i])
            .collect(),
    }
}

/// Σ p_i Δ_i, Σ p_i ‖Δ_i‖² and Σ p_i over the round's clients, in f64, in sampling order.
struct Sums {
    acc: Vec<f64>,
    sq: f64,
    wsum: f64,
}

impl Sums {
    fn add(&mut self, p: f64, delta: &[f32]) {
        self.wsum += p;
        self.sq += p * global_norm(delta).powi(2);
        self.acc
            .iter_mut()
            .zip(delta)
            .for_each(|(a, d)| *a += p * *d as f64);
    }

    fn aggregate(&self, clients: usize) -> Aggregate {
        Aggregate {
            mean_delta: self.acc.iter().map(|a| (a / self.wsum) as f32).collect(),
            mean_sq_norm: self.sq / self.wsum,
            clients,
        }
    }
}

/// The uniform mean of the sampled clients' full-data gradients at `at` (Mime's ∇f(x)).
fn mean_full_gradient(trainer: &mut dyn LocalTrainer, sampled: &[usize], at: &[f32]) -> Vec<f32> {
    let mut mean = vec![0f64; at.len()];
    for &c in sampled {
        let g = trainer.full_gradient(c, at);
        mean.iter_mut().zip(&g).for_each(|(m, g)| *m += *g as f64);
    }
    let n = sampled.len().max(1) as f64;
    mean.into_iter().map(|m| (m / n) as f32).collect()
}

/// One round: sample, train each client from the broadcast model, aggregate
/// Δ̄ = Σ p_i Δ_i / Σ p_i and G = Σ p_i ‖Δ_i‖² / Σ p_i (p_i = n_i / Σ n, or 1 with
/// `uniform`) in sampling order, and let the algorithm update the global model.
pub fn run_round(
    t: usize,
    cfg: &RoundConfig,
    client_sizes: &[usize],
    global: &mut [f32],
    alg: &mut dyn Strategy,
    trainer: &mut dyn LocalTrainer,
) -> Result<RoundStats, Stop> {
    let sampled = sample_active(cfg, t, client_sizes.len());
    let info = RoundInfo {
        round: t,
        lr: cfg.lr,
        server_lr: cfg.server_lr,
        sampled: sampled.clone(),
    };
    let needs = alg.begin_round(&info, global).map_err(Stop::Failed)?;
    let anchor: Vec<f32> = alg
        .broadcast()
        .map(|b| b.to_vec())
        .unwrap_or_else(|| global.to_vec());
    if needs.mean_full_gradient {
        alg.round_gradient(&mean_full_gradient(trainer, &sampled, &anchor));
    }
    let total: usize = client_sizes.iter().sum();
    let weight = |c: usize| {
        if cfg.uniform {
            1.0
        } else {
            client_sizes[c] as f64 / total as f64
        }
    };
    let mut sums = Sums {
        acc: vec![0f64; global.len()],
        sq: 0.0,
        wsum: 0.0,
    };
    let mut st = RoundStats::default();
    let traffic = alg.traffic(&info);
    // Clients are trained `width` at a time and aggregated strictly in sampling order, so the
    // result does not depend on the width.
    for chunk in sampled.chunks(trainer.width().max(1)) {
        for store in alg.state().stores() {
            store.stage(chunk).map_err(Stop::Failed)?;
        }
        let plans: Vec<ClientPlan> = chunk.iter().map(|&c| alg.plan(c)).collect();
        let stats = trainer
            .train_many(t, chunk, &anchor, plans)
            .map_err(Stop::Failed)?;
        for (k, (&c, ls)) in chunk.iter().zip(stats).enumerate() {
            diverged(t, c, &ls)?;
            let sent = cfg
                .uplink
                .as_ref()
                .map(|u| u.send(cfg.seed, t, c, trainer.delta(k)));
            let delta = sent.as_deref().unwrap_or(trainer.delta(k));
            sums.add(weight(c), delta);
            st.add(&ls);
            let update = cfg
                .uplink
                .as_ref()
                .map_or(floats(1, delta.len()), |u| u.bytes(delta.len()));
            st.count(traffic, delta.len(), update);
            let info = ClientInfo {
                steps: ls.steps,
                lr: cfg.lr,
                samples: ls.samples,
            };
            let report = Report {
                delta,
                info,
                uplink: ls.uplink,
            };
            alg.receive(c, report).map_err(Stop::Failed)?;
        }
    }
    server_step(t, &info, global, alg, sums.aggregate(sampled.len()), st)
}

/// Why the round stops when client c's training diverged (its first non-finite step).
fn diverged(t: usize, c: usize, ls: &LocalStats) -> Result<(), Stop> {
    match ls.diverged_at {
        Some(s) => Err(Stop::Diverged {
            round: t + 1,
            client: Some(c),
            message: format!(
                "non-finite training loss in round {}, client {c}, local step {s}",
                t + 1
            ),
        }),
        None => Ok(()),
    }
}

/// ‖a − b‖, in f64.
fn distance(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// Why the round stops when the server step left a non-finite global model.
fn finite(t: usize, global: &[f32]) -> Result<(), Stop> {
    match global.iter().all(|v| v.is_finite()) {
        true => Ok(()),
        false => Err(Stop::Diverged {
            round: t + 1,
            client: None,
            message: format!("the global model became non-finite in round {}", t + 1),
        }),
    }
}

/// The server update of round t: the strategy's step, its check, the update's norm, and
/// `stepped` with the model before and after it (the one copy of the model both read).
fn server_step(
    t: usize,
    info: &RoundInfo,
    global: &mut [f32],
    alg: &mut dyn Strategy,
    mut agg: Aggregate,
    mut st: RoundStats,
) -> Result<RoundStats, Stop> {
    let before = global.to_vec();
    st.server = alg.server_update(ServerStep {
        info,
        global,
        agg: &mut agg,
    });
    finite(t, global)?;
    st.update_norm = distance(global, &before);
    alg.stepped(info, &before, global);
    Ok(st)
}
