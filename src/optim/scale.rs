//! `scale`: `u ← c·u`; `scale_by`: `u ← s ⊙ u` for a fixed vector s.

use super::transform::{Ctx, Log, Transform};

pub struct Scale(pub f32);

impl Transform for Scale {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        let c = self.0;
        u.iter_mut().for_each(|u| *u *= c);
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
