//! FedAvgM: server momentum `m ← Δ̄ + β·m`, `x ← x + η_g·m` (m_0 = 0, no dampening): the server
//! links `[trace(β), scale(η_g)]`. FedACG's `ServerM` is the same recursion (θ_t = θ_{t−1} + m_t).

use crate::config::validate::unit_open;
use crate::error::Result;
use crate::fl::strategy::{FromSetup, ServerChain, Setup, Strategy};
use crate::optim::{Momentum, Scale};

crate::key_table! {
    /// `[fedavgm]`
    pub struct Keys in "fedavgm" {
        /// Server momentum β (FedACG's `ServerM`: 0.4).
        pub momentum: f64 = 0.9 => unit_open;
    }
}

pub struct FedAvgM {
    server: ServerChain,
}

impl FromSetup for FedAvgM {
    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        let trace = Momentum::trace(k.momentum as f32, s.dim);
        let server = ServerChain::new(vec![Box::new(trace), Box::new(Scale(s.spec.fl.global_lr))]);
        Ok(FedAvgM { server })
    }
}

impl Strategy for FedAvgM {
    fn server(&mut self) -> Option<&mut ServerChain> {
        Some(&mut self.server)
    }
}
