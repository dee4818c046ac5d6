//! LAMB's trust ratio as a link (optax's `scale_by_trust_ratio` with the learning rate in it):
//! per parameter tensor ℓ, `u_ℓ ← (l·r_ℓ)·u_ℓ` with `r_ℓ = ‖x_ℓ‖/‖u_ℓ‖`, a per-tensor learning
//! rate (`on_zero` where either norm is 0: 1 as LAMB implementations have it, 0 for the Fed-LAMB
//! paper's literal φ(0) = 0). The factor l·r_ℓ is formed in f64 and rounded once, so the link
//! applies the step's learning rate itself ([`Transform::applies_lr`]).

use std::ops::Range;

use super::norm::global_norm;
use super::transform::{Ctx, Log, RowsForm, Transform};

pub struct ScaleByTrustRatio {
    /// Where each parameter tensor sits in the flat vector.
    pub tensors: Vec<Range<usize>>,
    pub on_zero: f64,
}

impl Transform for ScaleByTrustRatio {
    fn update(&mut self, u: &mut [f32], x: &[f32], ctx: &Ctx, _log: &mut Log) {
        let lr = ctx.lr as f32;
        for r in &self.tensors {
            let (xn, un) = (global_norm(&x[r.clone()]), global_norm(&u[r.clone()]));
            let ratio = if xn > 0.0 && un > 0.0 {
                xn / un
            } else {
                self.on_zero
            };
            let s = (lr as f64 * ratio) as f32;
            u[r.clone()].iter_mut().for_each(|u| *u *= s);
        }
    }

    fn applies_lr(&self) -> bool {
        true
    }

    fn rows_form(&self) -> Option<RowsForm<'_>> {
        Some(RowsForm::Trust {
            tensors: &self.tensors,
            on_zero: self.on_zero,
        })
    }
}
