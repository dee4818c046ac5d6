//! FedACG (the official code): the server broadcasts the lookahead `Φ = θ + λ·m`; each client
//! adds `w·Σ(θ − Φ)²` to its loss (no ½, so the gradient term is `2w·(θ − Φ)`, clipped with the
//! loss gradient); the server sets `m ← λ·m + η_g·Δ̄` and `θ ← θ + m` (the links
//! `scale(η_g)` and `Momentum::trace(λ)`), which is `Φ + η_g·Δ̄`. The evaluated model is θ, not
//! Φ. With the FedACG protocol: uniform aggregation (`fl.aggregation = "uniform"`) and the
//! per-epoch schedule (`local.lr_schedule = "epoch"`).

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::plan::ClientPlan;
use crate::fl::strategy::{
    FromSetup, RoundInfo, RoundNeeds, ServerLog, ServerStep, Setup, Strategy, axpy, load_momentum,
    momentum_state,
};
use crate::fl::term::Term;
use crate::optim::{Ctx, Log, Momentum, Scale, Transform};

crate::key_table! {
    /// `[fedacg]`
    pub struct Keys in "fedacg" {
        /// λ: the lookahead and momentum factor (the code's `server.momentum`, 0.85).
        pub lambda: f64 = 0.85 => non_negative;
        /// w: the code's proximal weight in `w·Σ(θ − Φ)²` (1e-3; the paper's β/2 with β = 2e-3).
        pub prox: f64 = 1e-3 => non_negative;
    }
}

pub struct FedAcg {
    lambda: f32,
    /// 2w: the gradient factor of `w·Σ(θ − Φ)²`.
    mu: f32,
    eta: Scale,
    momentum: Momentum,
    phi: Vec<f32>,
}

impl FromSetup for FedAcg {
    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(FedAcg {
            lambda: k.lambda as f32,
            mu: (2.0 * k.prox) as f32,
            eta: Scale(s.spec.fl.global_lr as f32),
            momentum: Momentum::trace(k.lambda as f32, s.dim),
            phi: vec![0.0; s.dim],
        })
    }
}

impl Strategy for FedAcg {
    fn begin_round(&mut self, _info: &RoundInfo, global: &[f32]) -> RoundNeeds {
        let l = self.lambda;
        self.phi
            .iter_mut()
            .zip(global.iter().zip(self.momentum.m()))
            .for_each(|(p, (g, m))| *p = g + l * m);
        RoundNeeds::default()
    }

    fn broadcast(&self) -> Option<&[f32]> {
        Some(&self.phi)
    }

    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        ClientPlan {
            term: Term::prox(self.mu),
            ..ClientPlan::default()
        }
    }

    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        let (ctx, mut log) = (Ctx::default(), Log::default());
        self.eta.update(&mut agg.mean_delta, global, &ctx, &mut log);
        self.momentum
            .update(&mut agg.mean_delta, global, &ctx, &mut log);
        axpy(global, 1.0, &agg.mean_delta);
        ServerLog {
            server_lr: self.eta.0 as f64,
            state_norm: Some(self.momentum.norm()),
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        momentum_state(&self.momentum)
    }

    fn load_state(&mut self, state: Vec<(String, Vec<f32>)>) -> Result<()> {
        load_momentum(&mut self.momentum, state)
    }
}
