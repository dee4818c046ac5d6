//! FedAvg (§3.1): local SGD; server `x ← x + η_g·Δ̄`.

use crate::fl::algorithm::{Aggregate, Algorithm, RoundInfo, ServerLog, axpy};

pub struct FedAvg {
    pub eta: f64,
}

impl FedAvg {
    pub fn new(eta: f64) -> Self {
        FedAvg { eta }
    }
}

impl Algorithm for FedAvg {
    fn server_update(
        &mut self,
        _info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        axpy(global, self.eta, &agg.mean_delta);
        ServerLog {
            server_lr: self.eta,
            state_norm: None,
        }
    }
}
