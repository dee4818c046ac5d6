//! Heavy-ball momentum: `m ← u + β·m` (optax's `trace`; FedAvgM's and FedACG's server
//! momentum), or dampened, `m ← (1−β)·u + β·m` (an exponential moving average; Mime's server
//! momentum); then `u ← m`. `m` starts at 0.

use super::moments::ema;
use super::norm::global_norm;
use super::transform::{Ctx, Log, Transform};

pub struct Momentum {
    beta: f32,
    dampening: bool,
    m: Vec<f32>,
}

impl Momentum {
    /// `m ← u + β·m`.
    pub fn trace(beta: f32, dim: usize) -> Self {
        Momentum {
            beta,
            dampening: false,
            m: vec![0.0; dim],
        }
    }

    /// `m ← (1−β)·u + β·m`.
    pub fn ema(beta: f32, dim: usize) -> Self {
        Momentum {
            beta,
            dampening: true,
            ..Self::trace(beta, dim)
        }
    }

    /// The momentum.
    pub fn m(&self) -> &[f32] {
        &self.m
    }

    pub fn norm(&self) -> f64 {
        global_norm(&self.m)
    }
}

impl Transform for Momentum {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        let b = self.beta;
        if self.dampening {
            self.m
                .iter_mut()
                .zip(u.iter())
                .for_each(|(m, g)| *m = ema(b, *m, *g));
        } else {
            self.m
                .iter_mut()
                .zip(u.iter())
                .for_each(|(m, g)| *m = g + b * *m);
        }
        u.copy_from_slice(&self.m);
    }

    fn vectors(&mut self) -> Vec<(&'static str, &mut Vec<f32>)> {
        vec![("m", &mut self.m)]
    }

    fn state(&self) -> Vec<(&'static str, &[f32])> {
        vec![("m", &self.m)]
    }

    fn state_norm(&self) -> Option<f64> {
        Some(self.norm())
    }
}
