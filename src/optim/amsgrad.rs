//! AMSGrad's moments against a frozen second moment (the Fed-LAMB paper's local rule): per
//! step `m ← β1·m + (1−β1)·u`, `v ← β2·v + (1−β2)·u²`, and `u ← m/√v̂` with the v̂ the client
//! received (no bias correction; ε only through v̂'s start). The link ends with (m, v), which the
//! client sends up. This is the client's link as its plan gives it, with its starting state; the
//! step runs it over the clients' rows (`optim::rows_links`).

use super::transform::{LocalLink, RowsForm};

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

impl LocalLink for ScaleByAmsgrad {
    fn rows_form(&self) -> RowsForm<'_> {
        RowsForm::Amsgrad {
            beta1: self.b1,
            beta2: self.b2,
            m: &self.m,
            v: &self.v,
            inv_sqrt_vhat: &self.inv_sqrt_vhat,
        }
    }
}
