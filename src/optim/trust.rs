//! LAMB's trust ratio as a link (optax's `scale_by_trust_ratio` with the learning rate in it):
//! per parameter tensor ℓ, `u_ℓ ← (l·r_ℓ)·u_ℓ` with `r_ℓ = ‖x_ℓ‖/‖u_ℓ‖`, a per-tensor learning
//! rate (`on_zero` where either norm is 0: 1 as LAMB implementations have it, 0 for the Fed-LAMB
//! paper's literal φ(0) = 0); the link applies the step's learning rate itself. This is the
//! client's link as its plan gives it; the step runs it over the clients' rows
//! (`optim::rows_links`).

use std::ops::Range;

use super::transform::{LocalLink, RowsForm};

pub struct ScaleByTrustRatio {
    /// Where each parameter tensor sits in the flat vector.
    pub tensors: Vec<Range<usize>>,
    pub on_zero: f64,
}

impl LocalLink for ScaleByTrustRatio {
    fn rows_form(&self) -> RowsForm<'_> {
        RowsForm::Trust {
            tensors: &self.tensors,
            on_zero: self.on_zero,
        }
    }
}
