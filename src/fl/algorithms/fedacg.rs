//! FedACG (§4.1, the official code): the server broadcasts the lookahead `Φ = θ + λ·m`; each
//! client adds `w·Σ(θ − Φ)²` to its loss (no ½, so the gradient term is `2w·(θ − Φ)`, clipped
//! with the loss gradient); the server sets `m ← λ·m + η_g·Δ̄` and `θ ← θ + m`, which is
//! `Φ + η_g·Δ̄`. The evaluated model is θ, not Φ. With the FedACG protocol: uniform
//! aggregation (`fl.aggregation = "uniform"`) and the per-epoch schedule
//! (`local.lr_schedule = "epoch"`).

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::algorithm::{
    Aggregate, Algorithm, LocalTerm, RoundInfo, ServerLog, Setup, StepCtx, take_state,
};
use crate::fl::step::global_norm;

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
    eta: f32,
    m: Vec<f32>,
    phi: Vec<f32>,
}

impl FedAcg {
    pub fn new(s: &Setup) -> Result<Self> {
        let k: Keys = s.spec.keys()?;
        Ok(FedAcg {
            lambda: k.lambda as f32,
            mu: (2.0 * k.prox) as f32,
            eta: s.spec.fl.global_lr as f32,
            m: vec![0.0; s.dim],
            phi: vec![0.0; s.dim],
        })
    }
}

impl Algorithm for FedAcg {
    fn begin_round(&mut self, _info: &RoundInfo, global: &[f32]) {
        let l = self.lambda;
        self.phi
            .iter_mut()
            .zip(global.iter().zip(&self.m))
            .for_each(|(p, (g, m))| *p = g + l * m);
    }

    fn broadcast(&self) -> Option<&[f32]> {
        Some(&self.phi)
    }

    fn local_term(&self, _client: usize, _ctx: &StepCtx) -> LocalTerm<'_> {
        LocalTerm::prox(self.mu)
    }

    fn server_update(
        &mut self,
        _info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        let (l, eta) = (self.lambda, self.eta);
        self.m
            .iter_mut()
            .zip(&agg.mean_delta)
            .for_each(|(m, d)| *m = l * *m + eta * d);
        global.iter_mut().zip(&self.m).for_each(|(x, m)| *x += m);
        ServerLog {
            server_lr: eta as f64,
            state_norm: Some(global_norm(&self.m)),
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        vec![("m".into(), self.m.as_slice())]
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        self.m = take_state(&mut state, "m", self.m.len())?;
        Ok(())
    }
}
