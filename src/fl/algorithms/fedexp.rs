//! FedExP: the server step adapts to the clients' disagreement,
//! `η_g = max(1, ½·G / (‖Δ̄‖² + |S|·ε_t))` with `G = mean ‖Δ_i‖²` and
//! `ε_t = ε_0·decay^{2(t+1)}`. The official code has `|S|·ε`; the paper has ε
//! (`fedexp.eps_form = "paper"`). Evaluation uses the average of the last two iterates
//! (`fedexp.eval_avg`), except in round 0; training continues from x_t. The server links:
//! `[extrapolated_step]`.

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::strategy::{FromSetup, RoundInfo, ServerChain, Setup, State, Strategy};
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
#[derive(Clone, Copy, Debug)]
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
    server: ServerChain,
    eval_avg: bool,
    eval: Option<Vec<f32>>,
    dim: usize,
}

impl FromSetup for FedExP {
    /// ε_t decays with the learning-rate decay.
    const READS: &'static [&'static str] = &["local.lr_decay"];

    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        let step = ExtrapolatedStep {
            eps0: k.eps,
            decay: s.spec.local.lr_decay,
            paper_eps: k.eps_form == EpsForm::Paper,
            lower: s.spec.fl.global_lr,
        };
        Ok(FedExP {
            server: ServerChain::new(vec![Box::new(step)]),
            eval_avg: k.eval_avg,
            eval: None,
            dim: s.dim,
        })
    }
}

impl Strategy for FedExP {
    fn server(&mut self) -> Option<&mut ServerChain> {
        Some(&mut self.server)
    }

    /// The average of the last two iterates, to evaluate (not in round 0).
    fn stepped(&mut self, info: &RoundInfo, before: &[f32], after: &[f32]) {
        self.eval = (self.eval_avg && info.round > 0).then(|| {
            before
                .iter()
                .zip(after)
                .map(|(p, x)| 0.5 * (*p + *x))
                .collect()
        });
    }

    fn eval_params(&self) -> Option<&[f32]> {
        self.eval.as_deref()
    }

    fn state(&mut self) -> State<'_> {
        State::none().optional("eval", &mut self.eval, self.dim)
    }
}
