//! `add_decayed_weights`: `u ← u + wd·x` (coupled L2 weight decay over all parameters).

use super::transform::{LocalLink, RowsForm, TensorStep, TensorTransform};

pub struct AddDecayedWeights(pub f32);

impl LocalLink for AddDecayedWeights {
    fn rows_form(&self) -> RowsForm<'_> {
        RowsForm::Decay(self.0)
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
