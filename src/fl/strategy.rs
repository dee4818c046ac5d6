//! The server's side of an algorithm, in the spirit of Flower's `Strategy`: a fixed round loop
//! calls its hooks, and per sampled client it gives a [`ClientPlan`] (`plan.rs`), the client's
//! side as a value. A new algorithm is one file implementing [`Strategy`], registered in
//! `algorithms/mod.rs`; the engine never names an algorithm.
//!
//! Round t, as the engine runs it:
//! 1. `begin_round` (SCAFFOLD's c = Σ p_j c_j; FedACG's lookahead); it may ask for the
//!    round's mean full-data gradient first (Mime), given to `round_gradient`;
//! 2. `broadcast`: the model clients start from (default: the global model);
//! 3. each sampled client i: `plan(i)`, then local training from the broadcast model, then
//!    `receive(i, report)` with Δ_i and what the plan asked it to send;
//! 4. `server_update` with the global model and the aggregate: the mean Δ̄ (`fl.aggregation`:
//!    size-weighted or uniform) and the mean ‖Δ_i‖² (default: plain averaging, `x ← x + η_g·Δ̄`);
//! 5. evaluation of `eval_params` (default: the global model; FedExP: the last two iterates'
//!    average).

use super::per_client::PerClient;
use super::plan::{ClientPlan, Report};
use crate::config::{Keys, Spec, Unread};
use crate::error::Result;
use crate::optim::Momentum;

/// What an algorithm is built from.
pub struct Setup<'a> {
    pub spec: &'a Spec,
    /// Parameters of the model (length of every flat vector).
    pub dim: usize,
    /// Where each parameter tensor sits in the flat vector (layer-wise rules: Fed-LAMB).
    pub tensors: &'a [std::ops::Range<usize>],
    /// Training samples of each client (of the whole pool, when clients come and go).
    pub client_sizes: &'a [usize],
    /// Clients in the federation at any time: all of them, or the active set's size
    /// (`fl.active_clients`). FedDyn's and FedDC's N.
    pub federation: usize,
    /// Training samples of each client per class.
    pub class_counts: &'a [Vec<usize>],
}

impl Setup<'_> {
    /// The algorithm's keys (its table in the spec).
    pub fn keys<K: Keys>(&self) -> Result<K> {
        self.spec.keys()
    }
}

/// A strategy built from a [`Setup`] alone: the registry's `alg::<A>` builds it.
pub trait FromSetup: Strategy + Sized + 'static {
    /// Keys of the five sections it reads besides those every run reads (for the check that a
    /// key set by the user takes effect).
    const READS: &'static [&'static str] = &[];

    /// Whether its server step is plain averaging and it broadcasts the global model, so that
    /// `fl.acg` may put the ACG server rule around it (default: no).
    const AVERAGES: bool = false;

    /// What it needs of the rest of the spec, checked before anything loads (default: nothing).
    fn check(_spec: &Spec) -> Result<()> {
        Ok(())
    }

    /// The keys of its own tables that `spec` leaves unread, with why (default: none; a key
    /// another of its keys switches off is named here, so that setting it is refused or warned
    /// about like any key the run does not read).
    fn unread(_spec: &Spec) -> Vec<Unread> {
        Vec::new()
    }

    fn from_setup(s: &Setup) -> Result<Self>;
}

/// Facts about the round, shared by all hooks.
#[derive(Clone, Debug)]
pub struct RoundInfo {
    /// Round index t, from 0.
    pub round: usize,
    /// Local learning rate l_t of the round (of its first local epoch).
    pub lr: f64,
    /// The server learning rate η_g (`fl.global_lr`).
    pub server_lr: f64,
    /// Sampled clients in sampling order.
    pub sampled: Vec<usize>,
}

/// What a round needs before its clients train.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RoundNeeds {
    /// Every sampled client's gradient of its whole data at the broadcast model, averaged
    /// uniformly, before any of them trains (Mime's ∇f(x)), for `round_gradient`.
    pub mean_full_gradient: bool,
}

/// The aggregate of the round's client updates.
#[derive(Clone, Debug)]
pub struct Aggregate {
    /// Δ̄ = Σ p_i Δ_i / Σ p_i over the sampled clients.
    pub mean_delta: Vec<f32>,
    /// G = Σ p_i ‖Δ_i‖² / Σ p_i.
    pub mean_sq_norm: f64,
    pub clients: usize,
}

/// What a server step works on.
pub struct ServerStep<'a> {
    pub info: &'a RoundInfo,
    /// The global model, updated in place.
    pub global: &'a mut [f32],
    /// The round's aggregate, the strategy's to transform in place.
    pub agg: &'a mut Aggregate,
}

/// Model-sized vectors a client receives (`down`) and sends (`up`) in a round besides the model
/// and its update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub down: usize,
    pub up: usize,
}

/// Server-side quantities logged in the CSV.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerLog {
    /// The global step η_g actually used.
    pub server_lr: f64,
    /// Norm of the server state (momentum), where the algorithm has one.
    pub state_norm: Option<f64>,
    /// The fraction of the second moment v̂'s coordinates at its ε floor, where the algorithm
    /// keeps one (the AMSGrad family): those coordinates step by about `m/√ε`.
    pub at_floor: Option<f64>,
}

pub trait Strategy: Send + Sync {
    /// The start of a round; what it needs before the clients train.
    fn begin_round(&mut self, _info: &RoundInfo, _global: &[f32]) -> Result<RoundNeeds> {
        Ok(RoundNeeds::default())
    }

    /// The model the clients start from and are anchored to. None = the global model.
    fn broadcast(&self) -> Option<&[f32]> {
        None
    }

    /// The mean full-data gradient of the round's clients, when `begin_round` asked for it.
    fn round_gradient(&mut self, _mean: &[f32]) {}

    /// What client `client` does in this round (default: the loss and local steps of FedAvg).
    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        ClientPlan::default()
    }

    /// What client `client` sent back; called in sampling order after the client trained.
    fn receive(&mut self, _client: usize, _report: Report) -> Result<()> {
        Ok(())
    }

    /// Update the global model in place (default: plain averaging, `x ← x + η_g·Δ̄`).
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        average(s.info, s.global, s.agg)
    }

    /// How many model-sized vectors it keeps per client, at most (SCAFFOLD's c_i: 1; FedDC's
    /// h_i and g_i: 2), so that a run is refused before they outgrow the machine.
    fn per_client_vectors(&self) -> usize {
        0
    }

    /// Client `client` left the federation (`fl.replace_every`): drop what the algorithm keeps
    /// for it (its per-client vectors, freeing their memory), so that a client who takes its
    /// place, or comes back, starts afresh (default: nothing kept).
    fn forget(&mut self, _client: usize) -> Result<()> {
        Ok(())
    }

    /// Its per-client stores, for the engine to stage a round's clients, spill beyond the
    /// memory budget and checkpoint (default: none).
    fn client_stores(&mut self) -> Vec<&mut PerClient> {
        Vec::new()
    }

    /// What each sampled client of round `info.round` receives and sends besides the model it
    /// starts from and its update, in model-sized vectors, as the algorithm's protocol has it
    /// (SCAFFOLD: the server's c down and Δc_i up, although this implementation keeps the c_i on
    /// the server), for the communication columns (default: nothing more).
    fn traffic(&self, _info: &RoundInfo) -> Traffic {
        Traffic::default()
    }

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

/// Plain averaging (FedAvg's server): `x ← x + η_g·Δ̄`.
pub fn average(info: &RoundInfo, global: &mut [f32], agg: &Aggregate) -> ServerLog {
    axpy(global, info.server_lr, &agg.mean_delta);
    ServerLog {
        server_lr: info.server_lr,
        state_norm: None,
        at_floor: None,
    }
}

/// `x ← x + η·u`.
pub fn axpy(x: &mut [f32], eta: f64, u: &[f32]) {
    let eta = eta as f32;
    x.iter_mut().zip(u).for_each(|(x, u)| *x += eta * u);
}

/// A server momentum's checkpoint entry, `m`.
pub fn momentum_state(m: &Momentum) -> Vec<(String, &[f32])> {
    vec![("m".into(), m.m())]
}

/// Restore a server momentum from its checkpoint entry.
pub fn load_momentum(m: &mut Momentum, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
    let dim = m.m().len();
    m.set_m(take_state(&mut state, "m", dim)?);
    Ok(())
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
