//! FedDyn (§5, the FedACG code's `Dyn` client and `ServerDyn`), α = 0.1:
//! - each client keeps `g_i` (0 until it first trains); its local loss is
//!   `CE − ⟨θ, g_i⟩ + (α/2)·‖θ − θ_g‖²`, so `α(θ − θ_g) − g_i` joins the gradient;
//! - after training `g_i ← g_i − α·Δ_i`;
//! - the server keeps `h`: `h ← h − (α/N)·Σ_{i∈S} Δ_i` (N = all clients) and sets
//!   `θ ← θ + η_g·Δ̄ − h/α` (the mean of the client models minus h/α with η_g = 1 and
//!   uniform aggregation, as in the code).
//!
//! `g_i` is allocated when client i first trains (for N = 500 ResNet-18 clients all sampled,
//! 500 × 45 MB).

use crate::config::validate::positive;
use crate::error::Result;
use crate::fl::per_client::{CLIENT_STATE, PerClient};
use crate::fl::plan::{ClientPlan, Report};
use crate::fl::strategy::{FromSetup, ServerLog, ServerStep, Setup, State, Strategy};
use crate::fl::term::Term;
use crate::optim::global_norm;

crate::key_table! {
    /// `[feddyn]`
    pub struct Keys in "feddyn" {
        pub alpha: f64 = 0.1 => positive;
    }
}

pub struct FedDyn {
    alpha: f32,
    eta: f32,
    clients: usize,
    gi: PerClient,
    h: Vec<f32>,
    /// Σ Δ_i over the round's clients so far.
    sum_delta: Vec<f64>,
}

impl FromSetup for FedDyn {
    const READS: &'static [&'static str] = CLIENT_STATE;

    fn from_setup(s: &Setup) -> Result<Self> {
        Ok(FedDyn {
            alpha: s.spec.keys::<Keys>()?.alpha as f32,
            eta: s.spec.fl.global_lr as f32,
            clients: s.federation,
            gi: PerClient::new("g", s.client_sizes.len(), s.dim),
            h: vec![0.0; s.dim],
            sum_delta: vec![0.0; s.dim],
        })
    }
}

impl Strategy for FedDyn {
    fn plan(&self, client: usize) -> ClientPlan<'_> {
        // g ← g + α·(x − θ) − g_i
        ClientPlan {
            term: Term::prox(self.alpha).shift_if(-1.0, self.gi.get(client)),
            ..ClientPlan::default()
        }
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        let a = self.alpha;
        let gi = self.gi.get_mut(client)?;
        gi.iter_mut()
            .zip(report.delta)
            .for_each(|(g, d)| *g -= a * d);
        self.sum_delta
            .iter_mut()
            .zip(report.delta)
            .for_each(|(s, d)| *s += *d as f64);
        Ok(())
    }

    /// Not a chain on Δ̄: h moves by the unweighted sum of the round's Δ_i over the whole
    /// federation (α/N), and x by Δ̄ and h together.
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        let scale = self.alpha as f64 / self.clients as f64;
        self.h
            .iter_mut()
            .zip(&self.sum_delta)
            .for_each(|(h, s)| *h -= (scale * s) as f32);
        self.sum_delta.fill(0.0);
        let (eta, inv_a) = (self.eta, 1.0 / self.alpha);
        global
            .iter_mut()
            .zip(agg.mean_delta.iter().zip(&self.h))
            .for_each(|(x, (d, h))| *x += eta * d - h * inv_a);
        ServerLog {
            server_lr: eta as f64,
            state_norm: Some(global_norm(&self.h)),
            at_floor: None,
        }
    }

    fn state(&mut self) -> State<'_> {
        State::none().vector("h", &mut self.h).store(&mut self.gi)
    }
}
