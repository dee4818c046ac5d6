//! `scale`: `u ← c·u` (logged as the step size; a server link); `scale_by`: `u ← s ⊙ u` for a
//! fixed vector s (a local rule's link, which the step runs over the clients' rows).

use super::transform::{Ctx, LocalLink, Log, RowsForm, Transform};

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

impl LocalLink for ScaleBy {
    fn rows_form(&self) -> RowsForm<'_> {
        RowsForm::ScaleBy(&self.0)
    }
}
