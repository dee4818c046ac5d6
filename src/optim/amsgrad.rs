//! AMSGrad's moments against a frozen second moment (the Fed-LAMB paper's local rule): per
//! step `m ← β1·m + (1−β1)·u`, `v ← β2·v + (1−β2)·u²`, and `u ← m/√v̂` with the v̂ the client
//! received (no bias correction; ε only through v̂'s start). The link ends with (m, v), which the
//! client sends up.

use super::moments::{ema, ema_sq};
use super::transform::{Ctx, Log, Moments, RowsForm, Transform};

pub struct ScaleByAmsgrad {
    b1: f32,
    b2: f32,
    m: Vec<f32>,
    v: Vec<f32>,
    /// `1/√v̂` of the frozen v̂.
    inv_sqrt_vhat: Vec<f32>,
}

impl ScaleByAmsgrad {
    /// Start from the first moment `m` (the client's own, kept across its rounds) and the
    /// frozen `vhat` (also v's start).
    pub fn new(beta1: f64, beta2: f64, m: Vec<f32>, vhat: &[f32]) -> Self {
        ScaleByAmsgrad {
            b1: beta1 as f32,
            b2: beta2 as f32,
            m,
            v: vhat.to_vec(),
            inv_sqrt_vhat: vhat.iter().map(|v| 1.0 / v.sqrt()).collect(),
        }
    }
}

impl Transform for ScaleByAmsgrad {
    fn update(&mut self, u: &mut [f32], _x: &[f32], _ctx: &Ctx, _log: &mut Log) {
        let (b1, b2) = (self.b1, self.b2);
        for (i, g) in u.iter_mut().enumerate() {
            self.m[i] = ema(b1, self.m[i], *g);
            self.v[i] = ema_sq(b2, self.v[i], *g);
            *g = self.m[i] * self.inv_sqrt_vhat[i];
        }
    }

    fn rows_form(&self) -> Option<RowsForm<'_>> {
        Some(RowsForm::Amsgrad {
            beta1: self.b1,
            beta2: self.b2,
            m: &self.m,
            v: &self.v,
            inv_sqrt_vhat: &self.inv_sqrt_vhat,
        })
    }

    fn into_moments(self: Box<Self>) -> Option<Moments> {
        Some(Moments {
            m: self.m,
            v: self.v,
        })
    }
}
