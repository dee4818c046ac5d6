//! `scale`: `u ← c·u` (logged as the step size); `scale_by_learning_rate`: `u ← l·u` with the
//! local step's l; `scale_by`: `u ← s ⊙ u` for a fixed vector s.

use super::transform::{Ctx, Log, Transform};

/// `u ← c·u` in f32, logging c as given.
pub struct Scale(pub f64);

impl Transform for Scale {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, log: &mut Log) {
        let c = self.0 as f32;
        u.iter_mut().for_each(|u| *u *= c);
        log.step_size = Some(self.0);
    }
}

/// `u ← s ⊙ u`, elementwise by a fixed vector (the original Mime's `1/√v̂` of the server's frozen
/// second moment).
pub struct ScaleBy(pub Vec<f32>);

impl Transform for ScaleBy {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        u.iter_mut().zip(&self.0).for_each(|(u, s)| *u *= s);
    }
}

/// `u ← l·u` with the local step's learning rate l (`ctx.lr`, applied in f32): SGD's step, the
/// local chain's last link unless another applies the learning rate.
pub struct ScaleByLearningRate;

impl Transform for ScaleByLearningRate {
    fn update(&mut self, u: &mut [f32], _x: &[f32], ctx: &Ctx, _log: &mut Log) {
        let l = ctx.lr as f32;
        u.iter_mut().for_each(|u| *u *= l);
    }
}
