//! Adaptive servers: FedAdam, FedAdagrad, FedYogi, and the Fed-LAMB paper's Adp-Fed: the server
//! links `[scale_by_adaptive, scale(η_g)]` (`optim::ScaleByAdaptive`), then `x ← x + u`. The form (`fedadam.variant`): `fedexp` (the FedExP / FedNAR code: v of m²,
//! ε inside the sqrt, decaying by decay² per round), `reddi` (Reddi et al.; FedACG's
//! `ServerAdam`: v of Δ̄², v_0 = τ², `u = m/(√v + τ)`), `adpfed` (v of Δ̄², v_0 = ε,
//! `u = m/√v`); `optim/adaptive.rs` gives the formulas.

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::strategy::{ServerChain, Setup, Strategy};
use crate::optim::{AdaptiveForm, AdaptiveRule, Scale, ScaleByAdaptive};

crate::choice! {
    /// `fedadam.variant`: `fedexp` (v of m², ε inside the sqrt) | `reddi` (v of Δ̄², v_0 = τ²)
    /// | `adpfed` (v of Δ̄², v_0 = ε, `u = m/√v`).
    pub enum Variant { Fedexp = "fedexp", Reddi = "reddi", Adpfed = "adpfed" }
}

crate::key_table! {
    /// `[fedadam]`, read by `fedadam`, `fedadagrad` and `fedyogi`.
    pub struct Keys in "fedadam" {
        pub beta1: f64 = 0.9 => non_negative;
        pub beta2: f64 = 0.99 => non_negative;
        /// ε (`fedexp` form, decays by decay² per round) or τ (`reddi` form, constant).
        pub eps: f64 = 0.01 => non_negative;
        pub variant: Variant = Variant::Fedexp;
    }
}

pub struct AdaptiveServer {
    server: ServerChain,
}

impl AdaptiveServer {
    pub fn new(rule: AdaptiveRule, s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        let form = match k.variant {
            Variant::Fedexp => AdaptiveForm::FedExp {
                eps0: k.eps,
                decay: s.spec.local.lr_decay,
            },
            Variant::Reddi => AdaptiveForm::Reddi { tau: k.eps },
            Variant::Adpfed => AdaptiveForm::AdpFed { eps: k.eps },
        };
        let adaptive = ScaleByAdaptive::new(rule, form, k.beta1, k.beta2, s.dim);
        let eta = Scale(s.spec.fl.global_lr);
        Ok(AdaptiveServer {
            server: ServerChain::new(vec![Box::new(adaptive), Box::new(eta)]),
        })
    }
}

/// Keys of the five sections the adaptive servers read: the `fedexp` form's ε decays with the
/// learning-rate decay.
pub const READS: &[&str] = &["local.lr_decay"];

/// FedAdam.
pub fn adam(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(AdaptiveServer::new(AdaptiveRule::Adam, s)?))
}

/// FedAdagrad.
pub fn adagrad(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(AdaptiveServer::new(AdaptiveRule::Adagrad, s)?))
}

/// FedYogi.
pub fn yogi(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(AdaptiveServer::new(AdaptiveRule::Yogi, s)?))
}

impl Strategy for AdaptiveServer {
    fn server(&mut self) -> Option<&mut ServerChain> {
        Some(&mut self.server)
    }
}
