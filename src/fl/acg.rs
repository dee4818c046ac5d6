//! ACG, the accelerated client gradient of FedACG (Kim et al., CVPR 2024), as a server rule that
//! wraps another algorithm: the server broadcasts the lookahead `Φ = θ + λ·m` (the inner
//! algorithm sees Φ as the round's model: its clients start from it and are anchored to it), and
//! replaces the inner algorithm's plain averaging with `m ← λ·m + η_g·Δ̄`, `θ ← θ + m` (the server
//! links `[scale(η_g), trace(λ)]`, FedAvgM's two in the other order), which is `Φ + η_g·Δ̄`. The
//! evaluated model is θ.
//!
//! FedACG is this rule around its FedProx-style client (`algorithms/fedacg.rs`); `fl.acg = true`
//! puts it around any algorithm whose server step is plain averaging (FedLC + ACG, FedMLB + ACG,
//! …). With λ = 0 it is plain averaging, bit for bit.

use crate::error::Result;
use crate::fl::plan::{ClientPlan, Report};
use crate::fl::strategy::{RoundInfo, RoundNeeds, ServerChain, State, Strategy, Traffic};
use crate::optim::{Momentum, Scale};

pub struct Acg {
    inner: Box<dyn Strategy>,
    lambda: f32,
    /// `[scale(η_g), trace(λ)]`: its trace's m is the momentum of the lookahead.
    server: ServerChain,
    /// The round's lookahead Φ.
    phi: Vec<f32>,
    /// Broadcast Φ = θ + λ·m (true), or θ (the momentum server alone: FedACG Table 4's rows
    /// without the accelerated gradient).
    lookahead: bool,
}

impl Acg {
    /// ACG with factor λ around `inner`, whose server step must be plain averaging, and server
    /// learning rate `eta` (applied, and logged, as an f32).
    pub fn new(inner: Box<dyn Strategy>, lambda: f64, eta: f64, dim: usize) -> Self {
        let scale = Scale(eta as f32 as f64);
        let trace = Momentum::trace(lambda as f32, dim);
        Acg {
            inner,
            lambda: lambda as f32,
            server: ServerChain::new(vec![Box::new(scale), Box::new(trace)]),
            phi: vec![0.0; dim],
            lookahead: true,
        }
    }

    /// The same server, broadcasting θ instead of the lookahead (`lookahead = false`): the
    /// momentum `m ← λ·m + η_g·Δ̄`, `θ ← θ + m` stays, the clients start from and are anchored
    /// to θ.
    pub fn with_lookahead(self, lookahead: bool) -> Self {
        Acg { lookahead, ..self }
    }

    /// The momentum m (the trace link's vector, by name).
    fn momentum(&self) -> &[f32] {
        self.server.get("m").unwrap_or(&[])
    }
}

impl Strategy for Acg {
    fn begin_round(&mut self, info: &RoundInfo, global: &[f32]) -> Result<RoundNeeds> {
        let l = self.lambda;
        let mut phi = std::mem::take(&mut self.phi);
        if self.lookahead {
            phi.iter_mut()
                .zip(global.iter().zip(self.momentum()))
                .for_each(|(p, (g, m))| *p = g + l * m);
        } else {
            phi.copy_from_slice(global);
        }
        self.phi = phi;
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

    fn server(&mut self) -> Option<&mut ServerChain> {
        Some(&mut self.server)
    }

    fn state_norm(&self) -> Option<f64> {
        self.inner.state_norm()
    }

    fn stepped(&mut self, info: &RoundInfo, before: &[f32], after: &[f32]) {
        self.inner.stepped(info, before, after);
    }

    fn state(&mut self) -> State<'_> {
        State::none()
            .server(&mut self.server)
            .and(self.inner.state())
    }

    fn leaving(&mut self, client: usize) -> Result<()> {
        self.inner.leaving(client)
    }

    fn traffic(&self, info: &RoundInfo) -> Traffic {
        self.inner.traffic(info)
    }

    fn eval_params(&self) -> Option<&[f32]> {
        self.inner.eval_params()
    }
}
