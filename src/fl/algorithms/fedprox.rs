//! FedProx (§3.2): `½μ‖x − x_global‖²` is added to the local loss, so `μ(x − x_global)` joins
//! the gradient and is clipped with it; server as FedAvg.

use super::FedAvg;
use crate::config::validate::non_negative;
use crate::fl::algorithm::{Aggregate, Algorithm, LocalTerm, RoundInfo, ServerLog, StepCtx};

crate::key_table! {
    /// `[fedprox]`
    pub struct Keys in "fedprox" {
        /// μ: `½μ‖x − x_global‖²` joins the local loss (FedACG's code writes `w·Σ(θ−Φ)²` without
        /// ½: its w = 1e-3 is μ = 2e-3 here).
        pub mu: f64 = 0.001 => non_negative;
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
