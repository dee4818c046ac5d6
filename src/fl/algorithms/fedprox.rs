//! FedProx (§3.2): `½μ‖x − x_global‖²` is added to the local loss, so `μ(x − x_global)` joins
//! the gradient and is clipped with it; server as FedAvg.

use super::FedAvg;
use crate::fl::algorithm::{Aggregate, Algorithm, RoundInfo, ServerLog};

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
    fn local_grad(&self, _client: usize, anchor: &[f32], x: &[f32], g: &mut [f32]) {
        if self.mu != 0.0 {
            let mu = self.mu;
            g.iter_mut()
                .zip(x.iter().zip(anchor))
                .for_each(|(g, (x, a))| *g += mu * (x - a));
        }
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
