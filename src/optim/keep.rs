//! A link that keeps the update it sees and passes it on unchanged: FedCM's server keeps the
//! round's Δ̄ for its next broadcast (`[keep_last, scale(η_g)]`). It starts at 0.

use super::transform::{Ctx, Log, Transform};

pub struct KeepLast {
    last: Vec<f32>,
}

impl KeepLast {
    pub fn new(dim: usize) -> Self {
        KeepLast {
            last: vec![0.0; dim],
        }
    }
}

impl Transform for KeepLast {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        self.last.copy_from_slice(u);
    }

    fn vectors(&mut self) -> Vec<(&'static str, &mut Vec<f32>)> {
        vec![("last", &mut self.last)]
    }

    fn state(&self) -> Vec<(&'static str, &[f32])> {
        vec![("last", &self.last)]
    }
}
