//! `scale`: `u ← c·u`.

use super::transform::{Ctx, Log, Transform};

pub struct Scale(pub f32);

impl Transform for Scale {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        let c = self.0;
        u.iter_mut().for_each(|u| *u *= c);
    }
}
