//! `add_decayed_weights`: `u ← u + wd·x` (coupled L2 weight decay over all parameters).

use super::transform::{Ctx, Log, RowsForm, TensorStep, TensorTransform, Transform};

pub struct AddDecayedWeights(pub f32);

impl Transform for AddDecayedWeights {
    fn update(&mut self, u: &mut [f32], x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        if self.0 != 0.0 {
            let wd = self.0;
            u.iter_mut().zip(x).for_each(|(u, x)| *u += wd * x);
        }
    }

    fn rows_form(&self) -> Option<RowsForm<'_>> {
        Some(RowsForm::Decay(self.0))
    }
}

impl TensorTransform for AddDecayedWeights {
    fn buffers<'a>(&'a mut self, out: &mut Vec<super::buffers::Buf<'a>>) {
        out.extend([
            super::buffers::Buf::Host(2),
            super::buffers::host(f64::from(self.0)),
        ]);
    }

    fn update_tensors(&mut self, s: &mut TensorStep) {
        if self.0 != 0.0 {
            for (u, x) in s.u.iter_mut().zip(s.x) {
                *u = u.clone() + x.clone() * self.0;
            }
        }
    }
}
