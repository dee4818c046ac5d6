//! What an FL algorithm is to the engine: a set of hooks around a fixed round loop, in the
//! spirit of Flower's split between strategy (server) and client. A new algorithm is one new
//! file implementing [`Algorithm`], registered in `algorithms/mod.rs`; the engine never names
//! an algorithm.
//!
//! Round t, as the engine runs it:
//! 1. `begin_round` (e.g. SCAFFOLD's c = Σ p_j c_j);
//! 2. `broadcast`: the model clients start from (default: the global model; FedACG: θ + λm);
//! 3. each sampled client i: local steps on its data; in each, after the loss gradient g,
//!    `local_grad` adds the algorithm's own term (FedProx, SCAFFOLD), then the local
//!    optimizer chain (clip, weight decay / FedNAR) and SGD; then `client_done` with Δ_i;
//! 4. `server_update` with the weighted mean Δ̄ and mean ‖Δ_i‖²;
//! 5. evaluation of `eval_params` (default: the global model; FedExP: the last two iterates'
//!    average).

use crate::error::Result;

/// Facts about the round, shared by all hooks.
#[derive(Clone, Debug)]
pub struct RoundInfo {
    /// Round index t, from 0.
    pub round: usize,
    /// Local learning rate l_t of the round.
    pub lr: f64,
    /// Sampled clients in sampling order.
    pub sampled: Vec<usize>,
}

/// What a client's local training produced, besides Δ_i.
#[derive(Clone, Copy, Debug)]
pub struct ClientInfo {
    pub steps: usize,
    pub lr: f64,
    pub samples: usize,
}

/// The aggregate of the round's client updates (§1 step 5).
#[derive(Clone, Debug)]
pub struct Aggregate {
    /// Δ̄ = Σ p_i Δ_i / Σ p_i over the sampled clients.
    pub mean_delta: Vec<f32>,
    /// G = Σ p_i ‖Δ_i‖² / Σ p_i.
    pub mean_sq_norm: f64,
    pub clients: usize,
}

/// Server-side quantities logged in the CSV.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerLog {
    /// The global step η_g actually used.
    pub server_lr: f64,
    /// Norm of the server state (momentum), where the algorithm has one.
    pub state_norm: Option<f64>,
}

pub trait Algorithm: Send + Sync {
    fn begin_round(&mut self, _info: &RoundInfo, _global: &[f32]) {}

    /// The model the clients start from and are anchored to. None = the global model.
    fn broadcast(&self) -> Option<&[f32]> {
        None
    }

    /// Add the gradient of the algorithm's local term at `x` to `g` (`anchor` = the model the
    /// client started from).
    fn local_grad(&self, _client: usize, _anchor: &[f32], _x: &[f32], _g: &mut [f32]) {}

    /// Called after client `client` trained, with Δ_i = x_i − anchor.
    fn client_done(&mut self, _client: usize, _delta: &[f32], _info: &ClientInfo) {}

    /// Update the global model in place.
    fn server_update(&mut self, info: &RoundInfo, global: &mut [f32], agg: &Aggregate)
    -> ServerLog;

    /// The parameters to evaluate. None = the global model.
    fn eval_params(&self) -> Option<&[f32]> {
        None
    }

    /// Named state vectors for checkpoints (momentum, control variates, …).
    fn state(&self) -> Vec<(String, Vec<f32>)> {
        Vec::new()
    }

    /// Restore what `state` returned.
    fn load_state(&mut self, _state: Vec<(String, Vec<f32>)>) -> Result<()> {
        Ok(())
    }
}

/// `x ← x + η·u`.
pub fn axpy(x: &mut [f32], eta: f64, u: &[f32]) {
    let eta = eta as f32;
    x.iter_mut().zip(u).for_each(|(x, u)| *x += eta * u);
}

/// Pick a named vector out of a checkpointed state.
pub fn take_state(state: &mut Vec<(String, Vec<f32>)>, name: &str, len: usize) -> Result<Vec<f32>> {
    let i = state.iter().position(|(n, _)| n == name).ok_or_else(|| {
        crate::error::Error::Run(format!("checkpoint has no algorithm state `{name}`"))
    })?;
    let v = state.swap_remove(i).1;
    if v.len() != len {
        return Err(crate::error::Error::Run(format!(
            "checkpoint state `{name}` has {} values, expected {len}",
            v.len()
        )));
    }
    Ok(v)
}
