//! Adaptive servers: FedAdam, FedAdagrad, FedYogi. Two forms (`fedadam.variant`):
//!
//! `fedexp` (default; the FedExP / FedNAR code, §3.6): the second moment tracks the squared
//! *momentum*, bias-correction constants do not depend on t, and ε sits inside the sqrt and
//! decays by decay² per round (as in FedNAR):
//! - Adam: `m ← β1·m + (1−β1)·Δ̄`, `v ← β2·v + (1−β2)·m²`, `u = (m/(1−β1)) / sqrt(v/(1−β2) + ε_t)`
//! - Adagrad (FedExP code): `v ← v + Δ̄²`, `u = Δ̄ / sqrt(v + ε_t)`
//! - Yogi (our extension of the same form): `v ← v − (1−β2)·m²·sign(v − m²)`, u as Adam
//!
//! `reddi` (Reddi et al.; FedACG's `ServerAdam`, §5): second moment of Δ̄², `v_0 = τ²`, no bias
//! correction, `u = m / (sqrt(v) + τ)` with τ = `fedadam.eps`, constant:
//! - Adam: `v ← β2·v + (1−β2)·Δ̄²`; Adagrad: `v ← v + Δ̄²`; Yogi: `v ← v − (1−β2)·Δ̄²·sign(v − Δ̄²)`
//!
//! `adpfed` (the Fed-LAMB paper's Adp-Fed, its Algorithm 2): `v_0 = ε`, `m ← β1·m + (1−β1)·Δ̄`,
//! `v ← β2·v + (1−β2)·Δ̄²`, `u = m/√v` (no τ, no bias correction; Adam rule only).
//!
//! In all, `x ← x + η_g·u`.

use crate::config::Spec;
use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::algorithm::{Aggregate, Algorithm, RoundInfo, ServerLog, axpy, take_state};
use crate::fl::step::global_norm;

crate::choice! {
    /// `fedadam.variant`: `fedexp` (§3.6: v of m², ε inside the sqrt) | `reddi` (§5: v of Δ̄²,
    /// v_0 = τ²) | `adpfed` (§6.4: v of Δ̄², v_0 = ε, `u = m/√v`).
    pub enum Variant {
        Fedexp = "fedexp",
        Reddi = "reddi",
        Adpfed = "adpfed",
    }
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Adam,
    Adagrad,
    Yogi,
}

pub struct AdaptiveServer {
    rule: Rule,
    reddi: bool,
    adpfed: bool,
    b1: f64,
    b2: f64,
    eps0: f64,
    decay: f64,
    eta: f64,
    m: Vec<f32>,
    v: Vec<f32>,
    u: Vec<f32>,
}

impl AdaptiveServer {
    pub fn new(rule: Rule, spec: &Spec, dim: usize) -> Result<Self> {
        let k: Keys = spec.keys()?;
        let reddi = k.variant == Variant::Reddi;
        let adpfed = k.variant == Variant::Adpfed;
        let v0 = if reddi {
            (k.eps * k.eps) as f32
        } else if adpfed {
            k.eps as f32
        } else {
            0.0
        };
        Ok(AdaptiveServer {
            rule,
            reddi,
            adpfed,
            b1: k.beta1,
            b2: k.beta2,
            eps0: k.eps,
            decay: spec.local.lr_decay,
            eta: spec.fl.global_lr,
            m: vec![0.0; dim],
            v: vec![v0; dim],
            u: vec![0.0; dim],
        })
    }
}

#[allow(clippy::needless_range_loop)]
impl Algorithm for AdaptiveServer {
    fn server_update(
        &mut self,
        info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        let (b1, b2) = (self.b1 as f32, self.b2 as f32);
        let d = &agg.mean_delta;
        if self.adpfed {
            for i in 0..d.len() {
                self.m[i] = b1 * self.m[i] + (1.0 - b1) * d[i];
                self.v[i] = b2 * self.v[i] + (1.0 - b2) * d[i] * d[i];
                self.u[i] = self.m[i] / self.v[i].sqrt();
            }
        } else if self.reddi {
            let tau = self.eps0 as f32;
            for i in 0..d.len() {
                self.m[i] = b1 * self.m[i] + (1.0 - b1) * d[i];
                let d2 = d[i] * d[i];
                self.v[i] = match self.rule {
                    Rule::Adam => b2 * self.v[i] + (1.0 - b2) * d2,
                    Rule::Adagrad => self.v[i] + d2,
                    Rule::Yogi => self.v[i] - (1.0 - b2) * d2 * (self.v[i] - d2).signum(),
                };
                self.u[i] = self.m[i] / (self.v[i].sqrt() + tau);
            }
        } else {
            let eps = (self.eps0 * self.decay.powi(2 * (info.round as i32 + 1))) as f32;
            for i in 0..d.len() {
                if self.rule == Rule::Adagrad {
                    self.v[i] += d[i] * d[i];
                    self.u[i] = d[i] / (self.v[i] + eps).sqrt();
                    continue;
                }
                self.m[i] = b1 * self.m[i] + (1.0 - b1) * d[i];
                let m2 = self.m[i] * self.m[i];
                self.v[i] = match self.rule {
                    Rule::Yogi => self.v[i] - (1.0 - b2) * m2 * (self.v[i] - m2).signum(),
                    _ => b2 * self.v[i] + (1.0 - b2) * m2,
                };
                self.u[i] = (self.m[i] / (1.0 - b1)) / (self.v[i] / (1.0 - b2) + eps).sqrt();
            }
        }
        axpy(global, self.eta, &self.u);
        ServerLog {
            server_lr: self.eta,
            state_norm: Some(global_norm(&self.m)),
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        vec![
            ("m".into(), self.m.as_slice()),
            ("v".into(), self.v.as_slice()),
        ]
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        self.m = take_state(&mut state, "m", self.m.len())?;
        self.v = take_state(&mut state, "v", self.v.len())?;
        Ok(())
    }
}
