//! The adaptive server rules (FedAdam, FedAdagrad, FedYogi) in three forms; `u` in is the
//! round's mean update Δ̄, `u` out the step before the server learning rate.
//!
//! `FedExp` (the FedExP / FedNAR code): the second moment tracks the squared *momentum*,
//! bias-correction constants do not depend on t, and ε sits inside the sqrt and decays by
//! decay² per round:
//! - Adam: `m ← β1·m + (1−β1)·Δ̄`, `v ← β2·v + (1−β2)·m²`, `u = (m/(1−β1)) / sqrt(v/(1−β2) + ε_t)`
//! - Adagrad (the FedExP code): `v ← v + Δ̄²`, `u = Δ̄ / sqrt(v + ε_t)`
//! - Yogi (our extension of the same form): `v ← v − (1−β2)·m²·sign(v − m²)`, u as Adam
//!
//! `Reddi` (Reddi et al.; FedACG's `ServerAdam`): second moment of Δ̄², `v_0 = τ²`, no bias
//! correction, `u = m / (sqrt(v) + τ)`, τ constant:
//! - Adam: `v ← β2·v + (1−β2)·Δ̄²`; Adagrad: `v ← v + Δ̄²`; Yogi: `v ← v − (1−β2)·Δ̄²·sign(v − Δ̄²)`
//!
//! `AdpFed` (the Fed-LAMB paper's Adp-Fed, its Algorithm 2): `v_0 = ε`, `m ← β1·m + (1−β1)·Δ̄`,
//! `v ← β2·v + (1−β2)·Δ̄²`, `u = m/√v` (no τ, no bias correction; Adam's rule only).

use super::moments::{ema, ema_sq};
use super::norm::global_norm;
use super::transform::{Ctx, Log, Transform};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdaptiveRule {
    Adam,
    Adagrad,
    Yogi,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AdaptiveForm {
    /// ε_0 and its per-round decay d: ε_t = ε_0·d^(2(t+1)).
    FedExp { eps0: f64, decay: f64 },
    /// τ.
    Reddi { tau: f64 },
    /// ε: v's start.
    AdpFed { eps: f64 },
}

pub struct ScaleByAdaptive {
    rule: AdaptiveRule,
    form: AdaptiveForm,
    b1: f32,
    b2: f32,
    m: Vec<f32>,
    v: Vec<f32>,
}

impl ScaleByAdaptive {
    pub fn new(rule: AdaptiveRule, form: AdaptiveForm, beta1: f64, beta2: f64, dim: usize) -> Self {
        let v0 = match form {
            AdaptiveForm::Reddi { tau } => (tau * tau) as f32,
            AdaptiveForm::AdpFed { eps } => eps as f32,
            AdaptiveForm::FedExp { .. } => 0.0,
        };
        ScaleByAdaptive {
            rule,
            form,
            b1: beta1 as f32,
            b2: beta2 as f32,
            m: vec![0.0; dim],
            v: vec![v0; dim],
        }
    }

    fn adpfed(&mut self, d: &mut [f32]) {
        let (b1, b2) = (self.b1, self.b2);
        for (i, d) in d.iter_mut().enumerate() {
            self.m[i] = ema(b1, self.m[i], *d);
            self.v[i] = ema_sq(b2, self.v[i], *d);
            *d = self.m[i] / self.v[i].sqrt();
        }
    }

    fn reddi(&mut self, d: &mut [f32], tau: f32) {
        let (b1, b2) = (self.b1, self.b2);
        for (i, d) in d.iter_mut().enumerate() {
            self.m[i] = ema(b1, self.m[i], *d);
            let d2 = *d * *d;
            self.v[i] = match self.rule {
                AdaptiveRule::Adam => ema(b2, self.v[i], d2),
                AdaptiveRule::Adagrad => self.v[i] + d2,
                AdaptiveRule::Yogi => self.v[i] - (1.0 - b2) * d2 * (self.v[i] - d2).signum(),
            };
            *d = self.m[i] / (self.v[i].sqrt() + tau);
        }
    }

    fn fedexp(&mut self, d: &mut [f32], eps: f32) {
        let (b1, b2) = (self.b1, self.b2);
        for (i, d) in d.iter_mut().enumerate() {
            if self.rule == AdaptiveRule::Adagrad {
                self.v[i] += *d * *d;
                *d /= (self.v[i] + eps).sqrt();
                continue;
            }
            self.m[i] = ema(b1, self.m[i], *d);
            let m2 = self.m[i] * self.m[i];
            self.v[i] = match self.rule {
                AdaptiveRule::Yogi => self.v[i] - (1.0 - b2) * m2 * (self.v[i] - m2).signum(),
                _ => ema(b2, self.v[i], m2),
            };
            *d = (self.m[i] / (1.0 - b1)) / (self.v[i] / (1.0 - b2) + eps).sqrt();
        }
    }
}

impl Transform for ScaleByAdaptive {
    fn update(&mut self, u: &mut [f32], _x: &[f32], ctx: &Ctx, _log: &mut Log) {
        match self.form {
            AdaptiveForm::AdpFed { .. } => self.adpfed(u),
            AdaptiveForm::Reddi { tau } => self.reddi(u, tau as f32),
            AdaptiveForm::FedExp { eps0, decay } => {
                let eps = (eps0 * decay.powi(2 * (ctx.round as i32 + 1))) as f32;
                self.fedexp(u, eps);
            }
        }
    }

    fn vectors(&mut self) -> Vec<(&'static str, &mut Vec<f32>)> {
        vec![("m", &mut self.m), ("v", &mut self.v)]
    }

    /// ‖m‖, or none where the rule keeps no first moment (the FedExP form's Adagrad, whose m
    /// stays 0: the log column is then empty rather than a zero that was never measured).
    fn state_norm(&self) -> Option<f64> {
        let keeps_m = !matches!(
            (self.rule, self.form),
            (AdaptiveRule::Adagrad, AdaptiveForm::FedExp { .. })
        );
        keeps_m.then(|| global_norm(&self.m))
    }

    fn state(&self) -> Vec<(&'static str, &[f32])> {
        vec![("m", &self.m), ("v", &self.v)]
    }
}
