//! FedAvgM (§3.5): server momentum `m ← Δ̄ + β·m`, `x ← x + η_g·m` (m_0 = 0, no dampening).
//! FedACG's `ServerM` (§5) is the same recursion (θ_t = θ_{t−1} + m_t).

use crate::config::validate::unit_open;
use crate::error::Result;
use crate::fl::algorithm::{Aggregate, Algorithm, RoundInfo, ServerLog, axpy, take_state};
use crate::fl::step::global_norm;

crate::key_table! {
    /// `[fedavgm]`
    pub struct Keys in "fedavgm" {
        /// Server momentum β (FedACG's `ServerM`: 0.4).
        pub momentum: f64 = 0.9 => unit_open;
    }
}

pub struct FedAvgM {
    beta: f32,
    eta: f64,
    m: Vec<f32>,
}

impl FedAvgM {
    pub fn new(beta: f64, eta: f64, dim: usize) -> Self {
        FedAvgM {
            beta: beta as f32,
            eta,
            m: vec![0.0; dim],
        }
    }
}

impl Algorithm for FedAvgM {
    fn server_update(
        &mut self,
        _info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        let b = self.beta;
        self.m
            .iter_mut()
            .zip(&agg.mean_delta)
            .for_each(|(m, d)| *m = d + b * *m);
        axpy(global, self.eta, &self.m);
        ServerLog {
            server_lr: self.eta,
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
