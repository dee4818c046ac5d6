//! One round (§1): sample, train from the broadcast model, aggregate, update the server.

use super::workers::LocalTrainer;
use crate::fl::algorithm::{Aggregate, Algorithm, ClientInfo, RoundInfo, ServerLog};
use crate::fl::step::global_norm;
use crate::rng::{Rng, Stream};

/// Where and why a run diverged: (round, client if known, message).
pub type Divergence = (usize, Option<usize>, String);

/// What a round needs besides the algorithm and the trainer.
pub struct RoundConfig {
    pub seed: u64,
    pub clients_per_round: usize,
    /// The round's learning rate (of its first local epoch).
    pub lr: f64,
    /// Weigh clients equally in Δ̄ (`fl.aggregation = "uniform"`) instead of by size.
    pub uniform: bool,
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
}

/// Clients sampled in round t: `clients_per_round` distinct of `n`, from the round's stream.
pub fn sample_clients(seed: u64, t: usize, n: usize, k: usize) -> Vec<usize> {
    Rng::derive(seed, Stream::Sampling, &[t as u64]).choose_distinct(n, k)
}

/// One round (§1): sample, train each client from the broadcast model, aggregate
/// Δ̄ = Σ p_i Δ_i / Σ p_i and G = Σ p_i ‖Δ_i‖² / Σ p_i (p_i = n_i / Σ n, or 1 with
/// `uniform`) in sampling order,
/// and let the algorithm update the global model.
pub fn run_round(
    t: usize,
    cfg: &RoundConfig,
    client_sizes: &[usize],
    global: &mut [f32],
    alg: &mut dyn Algorithm,
    trainer: &mut dyn LocalTrainer,
) -> std::result::Result<RoundStats, Divergence> {
    let sampled = sample_clients(cfg.seed, t, client_sizes.len(), cfg.clients_per_round);
    let info = RoundInfo {
        round: t,
        lr: cfg.lr,
        sampled: sampled.clone(),
    };
    alg.begin_round(&info, global);
    let anchor: Vec<f32> = alg
        .broadcast()
        .map(|b| b.to_vec())
        .unwrap_or_else(|| global.to_vec());
    if alg.wants_round_gradient() {
        let mut mean = vec![0f64; anchor.len()];
        for &c in &sampled {
            let g = trainer.full_gradient(c, &anchor);
            mean.iter_mut().zip(&g).for_each(|(m, g)| *m += *g as f64);
        }
        let n = sampled.len().max(1) as f64;
        let mean: Vec<f32> = mean.into_iter().map(|m| (m / n) as f32).collect();
        alg.round_gradient(&mean);
    }
    let total: usize = client_sizes.iter().sum();
    let mut acc = vec![0f64; global.len()];
    let (mut wsum, mut sq) = (0f64, 0f64);
    let mut st = RoundStats::default();
    // Clients are trained `width` at a time and aggregated strictly in sampling order, so the
    // result does not depend on the width.
    for chunk in sampled.chunks(trainer.width().max(1)) {
        let stats = trainer.train_many(t, chunk, &anchor, &*alg, cfg.lr);
        for (k, (&c, mut ls)) in chunk.iter().zip(stats).enumerate() {
            if let Some(s) = ls.diverged_at {
                return Err((
                    t,
                    Some(c),
                    format!("non-finite training loss in round {t}, client {c}, local step {s}"),
                ));
            }
            let delta = trainer.delta(k);
            let p = if cfg.uniform {
                1.0
            } else {
                client_sizes[c] as f64 / total as f64
            };
            wsum += p;
            sq += p * global_norm(delta).powi(2);
            acc.iter_mut()
                .zip(delta)
                .for_each(|(a, d)| *a += p * *d as f64);
            if !ls.uplink.is_empty() {
                alg.client_uplink(c, std::mem::take(&mut ls.uplink));
            }
            alg.client_done(
                c,
                delta,
                &ClientInfo {
                    steps: ls.steps,
                    lr: cfg.lr,
                    samples: ls.samples,
                },
            );
            st.loss_sum += ls.loss_sum;
            st.steps += ls.steps;
            st.clipped += ls.clipped;
            st.clip_norm_sum += ls.clip_norm_sum;
            st.samples += ls.samples;
        }
    }
    let agg = Aggregate {
        mean_delta: acc.iter().map(|a| (a / wsum) as f32).collect(),
        mean_sq_norm: sq / wsum,
        clients: sampled.len(),
    };
    let before = global.to_vec();
    st.server = alg.server_update(&info, global, &agg);
    if global.iter().any(|v| !v.is_finite()) {
        return Err((
            t,
            None,
            format!("the global model became non-finite in round {t}"),
        ));
    }
    st.update_norm = global
        .iter()
        .zip(&before)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    Ok(st)
}
