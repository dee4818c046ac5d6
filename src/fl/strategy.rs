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

use super::plan::{ClientPlan, Report};
pub use super::server::{Aggregate, ServerChain, ServerLog};
pub use super::state::{State, take_state};
use crate::config::{Keys, Spec, Unread};
use crate::error::Result;

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
    /// Draws an initial model as θ_0 is drawn (`model.init` from the run's init seed), from the
    /// init stream's sub-stream `keys` (θ_0's is `&[]`): MOON's per-client initial networks.
    pub initial_model: InitialModel,
}

/// See [`Setup::initial_model`].
pub type InitialModel = std::sync::Arc<dyn Fn(&[u64]) -> Vec<f32> + Send + Sync>;

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

    /// The work its rounds do beyond the local steps of plain training, for `fedrun check`
    /// (MOON's two frozen models; default: none).
    fn extra_work(_spec: &Spec) -> Option<ExtraWork> {
        None
    }

    fn from_setup(s: &Setup) -> Result<Self>;
}

/// Work an algorithm's rounds do beyond plain local steps, for `fedrun check`: its work line and
/// its time estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraWork {
    /// What it is, in words, for the work line.
    pub line: String,
    /// Every how many rounds its once-a-round part comes, at rounds `every − 1`, `2·every − 1`,
    /// … (Mime-LAMB's full-data gradients at the sync rounds; 1: every round).
    pub every: usize,
}

impl ExtraWork {
    /// Work that comes every round.
    pub fn every_round(line: impl Into<String>) -> Self {
        ExtraWork {
            line: line.into(),
            every: 1,
        }
    }
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

    /// Its server links, which the default `server_update` runs on Δ̄ before `x ← x + u`
    /// (default: none, that is `[scale(η_g)]`, plain averaging).
    fn server(&mut self) -> Option<&mut ServerChain> {
        None
    }

    /// The norm of server state it keeps outside its links, for the log's `server_state_norm`
    /// where no link reports one (SCAFFOLD's ‖c‖; default: none).
    fn state_norm(&self) -> Option<f64> {
        None
    }

    /// Update the global model in place. The default runs the links of [`server`](Self::server)
    /// and is the one server step of every strategy whose step is a chain on Δ̄. A strategy
    /// overrides it only when its step is not such a chain (FedDyn and FedDC add unweighted sums
    /// over the federation, Fed-LAMB syncs v̂, Mime's momentum follows the full-data gradient),
    /// and says why beside the override; the override then wins, and `server` only declares
    /// the state of links it runs itself.
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let norm = self.state_norm();
        let log = match self.server() {
            Some(chain) => chain.step(s.info.round, s.global, s.agg),
            None => average(s.info, s.global, s.agg),
        };
        ServerLog {
            state_norm: log.state_norm.or(norm),
            ..log
        }
    }

    /// After the server step and its checks, with the global model before and after it
    /// (FedExP keeps the average of the two to evaluate; default: nothing).
    fn stepped(&mut self, _info: &RoundInfo, _before: &[f32], _after: &[f32]) {}

    /// What it keeps between rounds, declared once (default: its server links' vectors):
    /// checkpoints, resume, `forget`, the spill store and the memory estimate follow from it
    /// (`fl/state.rs`).
    fn state(&mut self) -> State<'_> {
        match self.server() {
            Some(chain) => State::none().server(chain),
            None => State::none(),
        }
    }

    /// Client `client` is leaving the federation (`fl.replace_every`), before its per-client
    /// vectors are dropped: fold it out of what is derived from them (FedDC's Σ h_i; default:
    /// nothing). A client who takes its place, or comes back, starts afresh.
    fn leaving(&mut self, _client: usize) -> Result<()> {
        Ok(())
    }

    /// Client `client`'s training samples were dealt anew before this round (`data.deal =
    /// "round"`); `class_counts` are its samples per class now: update what was derived from
    /// its data at setup (FedLC's calibration; default: nothing).
    fn dealt(&mut self, _client: usize, _class_counts: &[usize]) -> Result<()> {
        Ok(())
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
}

/// Plain averaging (FedAvg's server): `x ← x + η_g·Δ̄`.
pub fn average(info: &RoundInfo, global: &mut [f32], agg: &mut Aggregate) -> ServerLog {
    ServerChain::averaging(info.server_lr).step(info.round, global, agg)
}
