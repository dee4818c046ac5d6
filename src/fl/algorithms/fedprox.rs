//! FedProx (§3.2): `½μ‖x − x_global‖²` is added to the local loss, so `μ(x − x_global)` joins
//! the gradient and is clipped with it; server as FedAvg.

use serde::{Deserialize, Serialize};

use super::FedAvg;
use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::algorithm::{Aggregate, Algorithm, LocalTerm, RoundInfo, ServerLog, StepCtx};

/// `[fedprox]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Keys {
    /// μ: `½μ‖x − x_global‖²` joins the local loss (FedACG's code writes `w·Σ(θ−Φ)²` without
    /// ½: its w = 1e-3 is μ = 2e-3 here).
    pub mu: f64,
}

impl Default for Keys {
    fn default() -> Self {
        Keys { mu: 0.001 }
    }
}

impl Keys {
    pub fn validate(&self) -> Result<()> {
        non_negative("fedprox.mu", self.mu)
    }
}

pub struct FedProx {
    mu: f32,
    server: FedAvg,
}

impl FedProx {
    pub fn new(mu: f64, eta: f64) -> Self {
        FedProx {
            mu: mu as f32,
            server: FedAvg::new(eta),
        }
    }
}

impl Algorithm for FedProx {
    fn local_term(&self, _client: usize, _ctx: &StepCtx) -> LocalTerm<'_> {
        LocalTerm::prox(self.mu)
    }

    fn server_update(
        &mut self,
        info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        self.server.server_update(info, global, agg)
    }
}
