//! What an FL algorithm is to the engine: a set of hooks around a fixed round loop, in the
//! spirit of Flower's split between strategy (server) and client. A new algorithm is one new
//! file implementing [`Algorithm`], registered in `algorithms/mod.rs`; the engine never names
//! an algorithm.
//!
//! Round t, as the engine runs it:
//! 1. `begin_round` (e.g. SCAFFOLD's c = Σ p_j c_j);
//! 2. `broadcast`: the model clients start from (default: the global model; FedACG: θ + λm);
//! 3. each sampled client i: the models `frozen` names are loaded once (the anchor, the
//!    client's previous model); then local steps on its data. In each step the model's
//!    [`Outputs`] (logits and features) and the frozen models' outputs on the same batch go to
//!    `local_loss` (default: cross-entropy; FedLC, FedNTD, FedDecorr), its gradient g is
//!    taken, `local_term` adds the algorithm's term over the parameter vector (FedProx,
//!    SCAFFOLD, FedDyn, FedACG) or rescales g (FedCM), then the local optimizer chain (clip,
//!    weight decay / FedNAR) and SGD (or the algorithm's `local_rule`); then `client_done`
//!    with Δ_i;
//! 4. `server_update` with the mean Δ̄ (`fl.aggregation`: size-weighted or uniform) and mean
//!    ‖Δ_i‖²;
//! 5. evaluation of `eval_params` (default: the global model; FedExP: the last two iterates'
//!    average).

use burn::tensor::{Int, Tensor};

use crate::config::Spec;
use crate::error::Result;
use crate::model::{Model, Outputs};

/// What an algorithm is built from.
pub struct Setup<'a> {
    pub spec: &'a Spec,
    /// Parameters of the model (length of every flat vector).
    pub dim: usize,
    /// Where each parameter tensor sits in the flat vector (layer-wise rules: Fed-LAMB).
    pub tensors: &'a [std::ops::Range<usize>],
    /// Training samples of each client.
    pub client_sizes: &'a [usize],
    /// Training samples of each client per class.
    pub class_counts: &'a [Vec<usize>],
}

/// Where a local step is: the round, the local epoch and step, the client's step count K, and
/// the step's learning rate (which the per-epoch schedule may change within a round).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepCtx {
    pub round: usize,
    pub epoch: usize,
    pub step: usize,
    pub steps: usize,
    pub lr: f64,
}

/// An algorithm's term in the local gradient, in the one affine form that every algorithm
/// here needs:
///
/// `g ← scale·g + prox·(x − anchor) + Σ_k a_k·v_k + anchor_grad·∇f(anchor; batch)`
///
/// (FedProx and FedACG: `prox`; SCAFFOLD: `c − c_i` as two shifts; FedDyn: `prox` and `−g_i`;
/// FedDC; FedCM: `scale` and a shift whose factor depends on the step's learning rate). The
/// vectors `v_k` must be the same ones, in the same order, at every step of one client's
/// training (the device-resident step uploads them once per client); the factors may change
/// from step to step. The last term (Mime's SVRG correction) is the loss gradient of the
/// client's starting model on the step's batch: a second forward and backward per step, on the
/// host step only (a term with it keeps the client on the host step).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalTerm<'a> {
    pub scale: f32,
    pub prox: f32,
    pub shifts: Vec<(f32, &'a [f32])>,
    pub anchor_grad: f32,
}

impl<'a> LocalTerm<'a> {
    /// No term: `g` unchanged.
    pub fn none() -> Self {
        LocalTerm {
            scale: 1.0,
            prox: 0.0,
            shifts: Vec::new(),
            anchor_grad: 0.0,
        }
    }

    /// `prox·(x − anchor)`, the gradient of `½·prox·‖x − anchor‖²`.
    pub fn prox(prox: f32) -> Self {
        LocalTerm {
            prox,
            ..Self::none()
        }
    }

    /// Add `a·v`.
    pub fn shift(mut self, a: f32, v: &'a [f32]) -> Self {
        self.shifts.push((a, v));
        self
    }

    pub fn is_none(&self) -> bool {
        self.scale == 1.0 && self.prox == 0.0 && self.shifts.is_empty() && self.anchor_grad == 0.0
    }

    /// Apply the term to the flat gradient `g` at `x` (host step); `g_anchor` is the loss
    /// gradient of the anchor on the batch when `anchor_grad ≠ 0` (else ignored). The term
    /// `t = prox·(x − anchor) + Σ a_k·v_k + anchor_grad·g_anchor` is summed first, in that
    /// order, then `g ← scale·g + t`; the work goes in blocks that stay in cache.
    pub fn apply(&self, anchor: &[f32], x: &[f32], g_anchor: &[f32], g: &mut [f32]) {
        if self.is_none() {
            return;
        }
        const B: usize = 1024;
        let mut t = [0f32; B];
        for (start, gb) in (0..g.len()).step_by(B).zip(g.chunks_mut(B)) {
            let t = &mut t[..gb.len()];
            let r = start..start + gb.len();
            if self.prox != 0.0 {
                let p = self.prox;
                t.iter_mut()
                    .zip(x[r.clone()].iter().zip(&anchor[r.clone()]))
                    .for_each(|(t, (x, a))| *t = p * (x - a));
            } else {
                t.fill(0.0);
            }
            for &(a, v) in &self.shifts {
                t.iter_mut()
                    .zip(&v[r.clone()])
                    .for_each(|(t, v)| *t += a * v);
            }
            if self.anchor_grad != 0.0 {
                let a = self.anchor_grad;
                t.iter_mut()
                    .zip(&g_anchor[r.clone()])
                    .for_each(|(t, v)| *t += a * v);
            }
            if self.scale == 1.0 {
                gb.iter_mut().zip(t.iter()).for_each(|(g, t)| *g += t);
            } else {
                let s = self.scale;
                gb.iter_mut()
                    .zip(t.iter())
                    .for_each(|(g, t)| *g = s * *g + t);
            }
        }
    }
}

/// Named vectors a client sends up besides Δ_i (Fed-LAMB's v_i, Mime's full-data gradient).
pub type Uplink = Vec<(String, Vec<f32>)>;

/// A stateful local update rule, made by the algorithm for one client's local training: it
/// replaces the plain SGD step `x ← x − l·u` after the gradient chain (so FedNAR's clip and
/// the weight decay act on the gradient before the rule's moments, as optax chains do).
pub trait LocalRule: Send {
    /// Update `x` with the chain's output `u` at learning rate `lr`.
    fn step(&mut self, lr: f32, x: &mut [f32], u: &[f32]);
    /// The rule's state after the client's last step, sent up (`client_uplink`).
    fn finish(self: Box<Self>) -> Uplink;
}

/// A model that a client's loss reads without training it.
pub enum Frozen<'a> {
    /// The model the client started from (the broadcast global model).
    Anchor,
    /// Any other parameter vector (the client's previous local model, for MOON).
    Params(&'a [f32]),
}

/// What the local objective sees at one step.
pub struct LossInput<'a> {
    pub client: usize,
    pub ctx: &'a StepCtx,
    /// The trained model's outputs on the batch (with gradient).
    pub out: &'a Outputs,
    /// The batch's labels.
    pub targets: &'a Tensor<1, Int>,
    /// The outputs of the models [`Algorithm::frozen`] named, in that order (no gradient;
    /// empty when [`Algorithm::frozen_forward`] is false).
    pub frozen: &'a [Outputs],
    /// The frozen models themselves (their parameters take no gradient; a forward through
    /// them from the trained model's activations passes the gradient to those: FedMLB).
    pub frozen_models: &'a [&'a Model],
}

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

    /// Models the client's loss reads besides the trained one (default: none).
    fn frozen(&self, _client: usize) -> Vec<Frozen<'_>> {
        Vec::new()
    }

    /// Whether the frozen models' outputs on each batch are needed (default true; FedMLB only
    /// runs parts of the frozen model itself).
    fn frozen_forward(&self) -> bool {
        true
    }

    /// The local loss of one batch; None = cross-entropy of the logits.
    fn local_loss(&self, _input: &LossInput) -> Option<Tensor<1>> {
        None
    }

    /// The algorithm's term in the local gradient of `client` at this step (default: none),
    /// applied before the optimizer chain, so it is clipped with the loss gradient (and is
    /// inside FedNAR's clip). One affine form serves every algorithm, so that the host step and
    /// the device-resident step (`run.local_step`) apply the same declaration.
    fn local_term(&self, _client: usize, _ctx: &StepCtx) -> LocalTerm<'_> {
        LocalTerm::none()
    }

    /// The local update rule of `client` (default: None, plain SGD).
    fn local_rule(&self, _client: usize) -> Option<Box<dyn LocalRule>> {
        None
    }

    /// Whether clients also send the gradient of their whole local data at the model they
    /// start from (Mime-LAMB), as `("full_grad", g)` in the uplink.
    fn wants_full_gradient(&self) -> bool {
        false
    }

    /// Whether the round begins with a phase in which every sampled client computes the
    /// gradient of its whole local data at the broadcast model, before any of them trains;
    /// their uniform mean goes to `round_gradient` (Mime's `∇f(x)`).
    fn wants_round_gradient(&self) -> bool {
        false
    }

    /// The mean full-data gradient of the round's clients (see `wants_round_gradient`).
    fn round_gradient(&mut self, _mean: &[f32]) {}

    /// What client `client` sent up besides Δ_i (its rule's state, its full-data gradient);
    /// called before `client_done`.
    fn client_uplink(&mut self, _client: usize, _uplink: Uplink) {}

    /// Called after client `client` trained, with Δ_i = x_i − anchor.
    fn client_done(&mut self, _client: usize, _delta: &[f32], _info: &ClientInfo) {}

    /// Update the global model in place.
    fn server_update(&mut self, info: &RoundInfo, global: &mut [f32], agg: &Aggregate)
    -> ServerLog;

    /// The parameters to evaluate. None = the global model.
    fn eval_params(&self) -> Option<&[f32]> {
        None
    }

    /// Named state vectors for checkpoints (momentum, control variates, …), borrowed: a
    /// checkpoint streams them to disk without a copy.
    fn state(&self) -> Vec<(String, &[f32])> {
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
