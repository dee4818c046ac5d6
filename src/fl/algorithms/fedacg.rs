//! FedACG (the official code): ACG (`fl/acg.rs`: the lookahead broadcast `Φ = θ + λ·m` and
//! the server momentum `m ← λ·m + η_g·Δ̄`, `θ ← θ + m`) around a FedProx-style client that adds
//! `w·Σ(θ − Φ)²` to its loss (no ½, so the gradient term is `2w·(θ − Φ)`, clipped with the loss
//! gradient). The evaluated model is θ, not Φ. With the FedACG protocol: uniform aggregation
//! (`fl.aggregation = "uniform"`) and the per-epoch schedule (`local.lr_schedule = "epoch"`).
//! ACG around other client-side methods is `fl.acg = true` (Table A's "+ACG"). Table 4's
//! ablation: `fedacg.lookahead = false` keeps the momentum server and broadcasts θ (the client's
//! term then pulls toward θ), `fedacg.prox = 0` drops the term, `fedacg.lambda = 0` both
//! momentum and lookahead.

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::acg::Acg;
use crate::fl::strategy::{Setup, Strategy};

use super::fedprox::FedProx;

crate::key_table! {
    /// `[fedacg]`
    pub struct Keys in "fedacg" {
        /// λ: the lookahead and momentum factor (the code's `server.momentum`, 0.85).
        pub lambda: f64 = 0.85 => non_negative;
        /// w: the code's proximal weight in `w·Σ(θ − Φ)²` (1e-3; the paper's β/2 with β = 2e-3).
        pub prox: f64 = 1e-3 => non_negative;
        /// Broadcast the lookahead θ + λ·m (true), or θ with the same momentum server (false:
        /// the paper's Table 4 rows with server momentum and no accelerated gradient).
        pub lookahead: bool = true;
    }
}

/// FedACG: ACG with `fedacg.lambda` around its client.
pub fn build(s: &Setup) -> Result<Box<dyn Strategy>> {
    let k: Keys = s.keys()?;
    // w·Σ(θ − Φ)² is FedProx's ½μ‖θ − Φ‖² with μ = 2w
    let client = FedProx::new((2.0 * k.prox) as f32);
    let eta = s.spec.fl.global_lr;
    let acg = Acg::new(Box::new(client), k.lambda, eta, s.dim).with_lookahead(k.lookahead);
    Ok(Box::new(acg))
}
