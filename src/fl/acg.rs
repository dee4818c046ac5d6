//! ACG, the accelerated client gradient of FedACG (Kim et al., CVPR 2024), as a server rule that
//! wraps another algorithm: the server broadcasts the lookahead `Φ = θ + λ·m` (the inner
//! algorithm sees Φ as the round's model: its clients start from it and are anchored to it), and
//! replaces the inner algorithm's plain averaging with `m ← λ·m + η_g·Δ̄`, `θ ← θ + m` (the links
//! `scale(η_g)` and `Momentum::trace(λ)`), which is `Φ + η_g·Δ̄`. The evaluated model is θ.
//!
//! FedACG is this rule around its FedProx-style client (`algorithms/fedacg.rs`); `fl.acg = true`
//! puts it around any algorithm whose server step is plain averaging (FedLC + ACG, FedMLB + ACG,
//! …). With λ = 0 it is plain averaging, bit for bit.

use crate::error::Result;
use crate::fl::per_client::PerClient;
use crate::fl::plan::{ClientPlan, Report};
use crate::fl::strategy::{
    RoundInfo, RoundNeeds, ServerLog, ServerStep, Strategy, Traffic, axpy, load_momentum,
    momentum_state,
};
use crate::optim::{Ctx, Log, Momentum, Scale, Transform};

pub struct Acg {
    inner: Box<dyn Strategy>,
    lambda: f32,
    momentum: Momentum,
    /// The round's lookahead Φ.
    phi: Vec<f32>,
}

impl Acg {
    /// ACG with factor λ around `inner`, whose server step must be plain averaging.
    pub fn new(inner: Box<dyn Strategy>, lambda: f64, dim: usize) -> Self {
        Acg {
            inner,
            lambda: lambda as f32,
            momentum: Momentum::trace(lambda as f32, dim),
            phi: vec![0.0; dim],
        }
    }
}

impl Strategy for Acg {
    fn begin_round(&mut self, info: &RoundInfo, global: &[f32]) -> Result<RoundNeeds> {
        let l = self.lambda;
        self.phi
            .iter_mut()
            .zip(global.iter().zip(self.momentum.m()))
            .for_each(|(p, (g, m))| *p = g + l * m);
        self.inner.begin_round(info, &self.phi)
    }

    fn broadcast(&self) -> Option<&[f32]> {
        Some(&self.phi)
    }

    fn round_gradient(&mut self, mean: &[f32]) {
        self.inner.round_gradient(mean);
    }

    fn plan(&self, client: usize) -> ClientPlan<'_> {
        self.inner.plan(client)
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        self.inner.receive(client, report)
    }

    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        let mut eta = Scale(s.info.server_lr as f32);
        let (ctx, mut log) = (Ctx::default(), Log::default());
        eta.update(&mut agg.mean_delta, global, &ctx, &mut log);
        self.momentum
            .update(&mut agg.mean_delta, global, &ctx, &mut log);
        axpy(global, 1.0, &agg.mean_delta);
        ServerLog {
            server_lr: eta.0 as f64,
            state_norm: Some(self.momentum.norm()),
            at_floor: None,
        }
    }

    fn per_client_vectors(&self) -> usize {
        self.inner.per_client_vectors()
    }

    fn forget(&mut self, client: usize) -> Result<()> {
        self.inner.forget(client)
    }

    fn client_stores(&mut self) -> Vec<&mut PerClient> {
        self.inner.client_stores()
    }

    fn traffic(&self, info: &RoundInfo) -> Traffic {
        self.inner.traffic(info)
    }

    fn eval_params(&self) -> Option<&[f32]> {
        self.inner.eval_params()
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        let mut out = momentum_state(&self.momentum);
        out.extend(self.inner.state());
        out
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        let i = state.iter().position(|(n, _)| n == "m");
        let mine = i.map(|i| state.swap_remove(i)).into_iter().collect();
        load_momentum(&mut self.momentum, mine)?;
        self.inner.load_state(state)
    }
}
