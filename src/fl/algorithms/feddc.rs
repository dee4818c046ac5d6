//! FedDC (§5, from the official FedDC code), α = 0.01. Client weight `w_i = n_i / mean(n)`
//! (1 for equal sizes) and `α_i = α / w_i`. Each client keeps a drift `h_i` and a variate
//! `g_i` (0 until it first trains); the server keeps a variate `g`.
//! - local loss `CE + (α_i/2)·‖θ − (θ_g − h_i)‖² + ⟨θ, g/w_i − g_i⟩`, so
//!   `α_i·(θ − θ_g + h_i) + g/w_i − g_i` joins the gradient;
//! - after training (Δ_i = θ_i − θ_g, K steps, η_0 the *undecayed* `local.lr`, as the code):
//!   `h_i ← h_i + Δ_i`; `g_i ← g_i − g/w_i − Δ_i/(K·η_0)`;
//!   `g ← g + (1/N)·Σ_{i∈S} w_i·(g_i,new − g_i,old)` (applied after the round's clients);
//! - server: `θ ← θ + η_g·Δ̄ + mean_{all N} h_j` (N: the clients in the federation; the mean of the sampled client models plus
//!   the mean drift, with η_g = 1 and uniform aggregation).

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::per_client::{CLIENT_STATE, PerClient};
use crate::fl::plan::{ClientPlan, Report};
use crate::fl::strategy::{
    FromSetup, RoundInfo, ServerLog, ServerStep, Setup, State, Strategy, Traffic,
};
use crate::fl::term::Term;
use crate::optim::global_norm;

crate::key_table! {
    /// `[feddc]`
    pub struct Keys in "feddc" {
        pub alpha: f64 = 0.01 => non_negative;
    }
}

pub struct FedDc {
    alpha: f64,
    eta: f32,
    base_lr: f64,
    dim: usize,
    weights: Vec<f64>,
    /// N: the clients in the federation.
    federation: usize,
    /// h_i and g_i of each client that has trained.
    h: PerClient,
    gi: PerClient,
    g: Vec<f32>,
    /// Σ_j h_j over all clients (f32, so that a checkpoint restores it exactly).
    sum_h: Vec<f32>,
    /// Σ_{i∈S} w_i·(g_i,new − g_i,old) of the round so far.
    dg: Vec<f64>,
}

impl FromSetup for FedDc {
    const READS: &'static [&'static str] = CLIENT_STATE;

    fn from_setup(s: &Setup) -> Result<Self> {
        let n = s.client_sizes.len();
        let mean = s.client_sizes.iter().sum::<usize>() as f64 / n as f64;
        Ok(FedDc {
            alpha: s.spec.keys::<Keys>()?.alpha,
            eta: s.spec.fl.global_lr as f32,
            base_lr: s.spec.local.lr,
            dim: s.dim,
            weights: s.client_sizes.iter().map(|&c| c as f64 / mean).collect(),
            federation: s.federation,
            h: PerClient::new("h", n, s.dim),
            gi: PerClient::new("g", n, s.dim),
            g: vec![0.0; s.dim],
            sum_h: vec![0.0; s.dim],
            dg: vec![0.0; s.dim],
        })
    }
}

impl Strategy for FedDc {
    fn plan(&self, client: usize) -> ClientPlan<'_> {
        // g ← g + a·(x − θ + h_i) + g/w − g_i, a = α/w
        let w = self.weights[client];
        let a = (self.alpha / w) as f32;
        let inv_w = (1.0 / w) as f32;
        let t = Term::prox(a);
        ClientPlan {
            term: match (self.h.get(client), self.gi.get(client)) {
                (Some(h), Some(gi)) => t.shift(a, h).shift(inv_w, &self.g).shift(-1.0, gi),
                _ => t.shift(inv_w, &self.g),
            },
            ..ClientPlan::default()
        }
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        let delta = report.delta;
        let w = self.weights[client];
        let inv_w = (1.0 / w) as f32;
        let scale = (1.0 / (report.info.steps as f64 * self.base_lr)) as f32;
        let dim = self.dim;
        let h = self.h.get_mut(client)?;
        for (h, d) in h.iter_mut().zip(delta) {
            *h += d;
        }
        let gi = self.gi.get_mut(client)?;
        for i in 0..dim {
            self.sum_h[i] += delta[i];
            let new = gi[i] - self.g[i] * inv_w - delta[i] * scale;
            self.dg[i] += w * (new - gi[i]) as f64;
            gi[i] = new;
        }
        Ok(())
    }

    /// g down; the drift-corrected model θ_i + h_i and Δg_i up (the FedDC paper's Algorithm 1).
    fn traffic(&self, _info: &RoundInfo) -> Traffic {
        Traffic { down: 1, up: 1 }
    }

    /// Not a chain on Δ̄: x also moves by Σ h_i / N over the whole federation, and the global
    /// gradient correction by the round's unweighted sum.
    #[allow(clippy::needless_range_loop)]
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        let n = self.federation as f64;
        let eta = self.eta;
        for i in 0..self.dim {
            global[i] += eta * agg.mean_delta[i] + (self.sum_h[i] as f64 / n) as f32;
            self.g[i] += (self.dg[i] / n) as f32;
        }
        self.dg.fill(0.0);
        ServerLog {
            server_lr: eta as f64,
            state_norm: Some(global_norm(&self.g)),
            at_floor: None,
        }
    }

    /// Σ h_i loses the leaving client's h_i.
    fn leaving(&mut self, client: usize) -> Result<()> {
        if let Some(h) = self.h.take(client)? {
            self.sum_h.iter_mut().zip(&h).for_each(|(s, h)| *s -= h);
        }
        Ok(())
    }

    fn state(&mut self) -> State<'_> {
        State::none()
            .vector("g", &mut self.g)
            .vector("sum_h", &mut self.sum_h)
            .store(&mut self.h)
            .store(&mut self.gi)
    }
}
