//! Adaptive servers: FedAdam, FedAdagrad, FedYogi, and the Fed-LAMB paper's Adp-Fed, as the
//! server link `optim::ScaleByAdaptive` followed by the server learning rate:
//! `x ← x + η_g·u`. The form (`fedadam.variant`): `fedexp` (the FedExP / FedNAR code: v of m²,
//! ε inside the sqrt, decaying by decay² per round), `reddi` (Reddi et al.; FedACG's
//! `ServerAdam`: v of Δ̄², v_0 = τ², `u = m/(√v + τ)`), `adpfed` (v of Δ̄², v_0 = ε,
//! `u = m/√v`); `optim/adaptive.rs` gives the formulas.

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::strategy::{ServerLog, ServerStep, Setup, Strategy, axpy, take_state};
use crate::optim::{AdaptiveForm, AdaptiveRule, Ctx, Log, ScaleByAdaptive, Transform, global_norm};

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
    opt: ScaleByAdaptive,
    eta: f64,
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
        Ok(AdaptiveServer {
            opt: ScaleByAdaptive::new(rule, form, k.beta1, k.beta2, s.dim),
            eta: s.spec.fl.global_lr,
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
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let ServerStep { info, global, agg } = s;
        let ctx = Ctx {
            round: info.round,
            ..Ctx::default()
        };
        self.opt
            .update(&mut agg.mean_delta, global, &ctx, &mut Log::default());
        axpy(global, self.eta, &agg.mean_delta);
        ServerLog {
            server_lr: self.eta,
            state_norm: Some(global_norm(self.opt.m())),
            at_floor: None,
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        vec![("m".into(), self.opt.m()), ("v".into(), self.opt.v())]
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        let dim = self.opt.m().len();
        let m = take_state(&mut state, "m", dim)?;
        let v = take_state(&mut state, "v", dim)?;
        self.opt.set_moments(m, v);
        Ok(())
    }
}
