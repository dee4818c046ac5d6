//! FedAvgM: server momentum `m ← Δ̄ + β·m`, `x ← x + η_g·m` (m_0 = 0, no dampening), the link
//! `optim::Momentum::trace`. FedACG's `ServerM` is the same recursion (θ_t = θ_{t−1} + m_t).

use crate::config::validate::unit_open;
use crate::error::Result;
use crate::fl::strategy::{
    FromSetup, ServerLog, ServerStep, Setup, Strategy, axpy, load_momentum, momentum_state,
};
use crate::optim::{Ctx, Log, Momentum, Transform};

crate::key_table! {
    /// `[fedavgm]`
    pub struct Keys in "fedavgm" {
        /// Server momentum β (FedACG's `ServerM`: 0.4).
        pub momentum: f64 = 0.9 => unit_open;
    }
}

pub struct FedAvgM {
    momentum: Momentum,
    eta: f64,
}

impl FromSetup for FedAvgM {
    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(FedAvgM {
            momentum: Momentum::trace(k.momentum as f32, s.dim),
            eta: s.spec.fl.global_lr,
        })
    }
}

impl Strategy for FedAvgM {
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        self.momentum.update(
            &mut agg.mean_delta,
            global,
            &Ctx::default(),
            &mut Log::default(),
        );
        axpy(global, self.eta, &agg.mean_delta);
        ServerLog {
            server_lr: self.eta,
            state_norm: Some(self.momentum.norm()),
            at_floor: None,
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        momentum_state(&self.momentum)
    }

    fn load_state(&mut self, state: Vec<(String, Vec<f32>)>) -> Result<()> {
        load_momentum(&mut self.momentum, state)
    }
}
