//! FedExP: the server step adapts to the clients' disagreement,
//! `η_g = max(1, ½·G / (‖Δ̄‖² + |S|·ε_t))` with `G = mean ‖Δ_i‖²` and
//! `ε_t = ε_0·decay^{2(t+1)}`. The official code has `|S|·ε`; the paper has ε
//! (`fedexp.eps_form = "paper"`). Evaluation uses the average of the last two iterates
//! (`fedexp.eval_avg`), except in round 0; training continues from x_t.

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::strategy::{
    Aggregate, FromSetup, ServerLog, ServerStep, Setup, Strategy, axpy, take_state,
};
use crate::optim::{Ctx, Log, Transform, global_norm};

crate::choice! {
    /// `fedexp.eps_form`: `code`: |S|·ε in the denominator (the official code) | `paper`: ε.
    pub enum EpsForm { Code = "code", Paper = "paper" }
}

crate::key_table! {
    /// `[fedexp]`
    pub struct Keys in "fedexp" {
        /// ε_0 (decays by decay² per round; 0 in FedNAR's scripts).
        pub eps: f64 = 0.0 => non_negative;
        pub eps_form: EpsForm = EpsForm::Code;
        /// Evaluate the average of the last two iterates (the official code).
        pub eval_avg: bool = true;
    }
}

/// FedExP's extrapolated step as a server link: `u ← η_g·u` with η_g from the round's spread.
pub struct ExtrapolatedStep {
    eps0: f64,
    decay: f64,
    paper_eps: bool,
    lower: f64,
}

impl ExtrapolatedStep {
    /// η_g for round `round` with mean update `mean_delta`, G = `mean_sq_norm`, |S| = `clients`.
    pub fn step_size(
        &self,
        round: usize,
        mean_delta: &[f32],
        mean_sq_norm: f64,
        clients: usize,
    ) -> f64 {
        let eps = self.eps0 * self.decay.powi(2 * (round as i32 + 1));
        let eps = if self.paper_eps {
            eps
        } else {
            clients as f64 * eps
        };
        let denom = global_norm(mean_delta).powi(2) + eps;
        if denom > 0.0 {
            (0.5 * mean_sq_norm / denom).max(self.lower)
        } else {
            self.lower
        }
    }
}

impl Transform for ExtrapolatedStep {
    fn update(&mut self, u: &mut [f32], _x: &[f32], ctx: &Ctx, log: &mut Log) {
        let eta = self.step_size(ctx.round, u, ctx.mean_sq_norm, ctx.clients);
        log.step_size = Some(eta);
        let e = eta as f32;
        u.iter_mut().for_each(|u| *u *= e);
    }
}

pub struct FedExP {
    step: ExtrapolatedStep,
    eval_avg: bool,
    eval: Option<Vec<f32>>,
}

impl FedExP {
    /// The step size for a round's aggregate.
    pub fn step_size(&self, round: usize, agg: &Aggregate) -> f64 {
        self.step
            .step_size(round, &agg.mean_delta, agg.mean_sq_norm, agg.clients)
    }
}

impl FromSetup for FedExP {
    /// ε_t decays with the learning-rate decay.
    const READS: &'static [&'static str] = &["local.lr_decay"];

    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(FedExP {
            step: ExtrapolatedStep {
                eps0: k.eps,
                decay: s.spec.local.lr_decay,
                paper_eps: k.eps_form == EpsForm::Paper,
                lower: s.spec.fl.global_lr,
            },
            eval_avg: k.eval_avg,
            eval: None,
        })
    }
}

impl Strategy for FedExP {
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let ServerStep { info, global, agg } = s;
        let prev = (self.eval_avg && info.round > 0).then(|| global.to_vec());
        let ctx = Ctx {
            round: info.round,
            mean_sq_norm: agg.mean_sq_norm,
            clients: agg.clients,
            ..Ctx::default()
        };
        let mut log = Log::default();
        self.step
            .update(&mut agg.mean_delta, global, &ctx, &mut log);
        axpy(global, 1.0, &agg.mean_delta);
        self.eval = prev.map(|mut p| {
            p.iter_mut()
                .zip(global.iter())
                .for_each(|(p, x)| *p = 0.5 * (*p + *x));
            p
        });
        ServerLog {
            server_lr: log.step_size.unwrap_or(self.step.lower),
            state_norm: None,
            at_floor: None,
        }
    }

    fn eval_params(&self) -> Option<&[f32]> {
        self.eval.as_deref()
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        self.eval
            .iter()
            .map(|e| ("eval".to_string(), e.as_slice()))
            .collect()
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        if let Some(i) = state.iter().position(|(n, _)| n == "eval") {
            let len = state[i].1.len();
            self.eval = Some(take_state(&mut state, "eval", len)?);
        }
        Ok(())
    }
}
