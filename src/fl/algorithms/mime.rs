//! Mime's keys, and Mime / MimeLite with SGD and server momentum (Karimireddy et al. 2021, the
//! original Mime family; spec §6.4; the GHBM code's `mime_client.py` and `mime.py` as the
//! reference for the order of things). `fl.algorithm = "mime"` runs the Fed-LAMB paper's Mime
//! (AMSGrad local steps with the server's v̂, `fedlamb.rs`) by default; `mime.base = "sgdm"`
//! runs these:
//!
//! - the round begins with every sampled client computing the gradient of its whole data at
//!   the round's model x; the server averages them: `c = mean ∇f_i(x)`;
//! - local steps apply the base optimizer, SGD with momentum, with the server's momentum m
//!   **frozen**. MimeLite (`mime.lite = true`): `y ← y − η·((1−β)·g + β·m)`; Mime: the
//!   gradient is the SVRG-corrected `g_i(y) − g_i(x) + c`, where `g_i(x)` is the gradient of the
//!   round's model on the same batch (a second forward and backward per step). The term runs
//!   before the clip/decay chain, like every algorithm term;
//! - server: `x ← x + η_g·Δ̄`, and the momentum takes one step with c:
//!   `m ← (1−β)·c + β·m` (m_0 = 0).
//!
//! The momentum is the Mime paper's EMA form. The GHBM code (torch SGD, dampening 0) keeps
//! `m ← β·m + g` and steps with `β·m + g`: the same method with the gradient's weight 1 instead
//! of 1−β (another effective step size).

use super::fedlamb::{FedLamb, Source, Step};
use crate::config::validate::unit_open;
use crate::error::Result;
use crate::fl::plan::ClientPlan;
use crate::fl::strategy::{
    FromSetup, RoundInfo, RoundNeeds, ServerLog, ServerStep, Setup, Strategy, axpy, load_momentum,
    momentum_state,
};
use crate::fl::term::Term;
use crate::optim::{Ctx, Log, Momentum, Transform};

crate::choice! {
    /// `mime.base`, the base optimizer: `amsgrad` (the Fed-LAMB paper's Mime: AMSGrad local
    /// steps with the server's v̂, keys in `[fedlamb]`) | `sgdm` (SGD with server momentum).
    pub enum Base { Amsgrad = "amsgrad", Sgdm = "sgdm" }
}

crate::key_table! {
    /// `[mime]`
    pub struct Keys in "mime" {
        pub base: Base = Base::Amsgrad;
        /// β of `sgdm`.
        pub momentum: f64 = 0.9 => unit_open;
        /// `sgdm`: MimeLite (true) or Mime with the SVRG correction (false).
        pub lite: bool = true;
    }
}

/// `fl.algorithm = "mime"`: with `mime.base = "amsgrad"` the Fed-LAMB paper's Mime (the
/// Fed-LAMB loop with the AMS step and the server's v̂ of full-data gradients), with `"sgdm"`
/// [`MimeSgdm`].
pub fn build(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(match s.keys::<Keys>()?.base {
        Base::Sgdm => Box::new(MimeSgdm::from_setup(s)?),
        Base::Amsgrad => Box::new(FedLamb::new(Step::Ams, Source::FullGradient, s)?),
    })
}

/// Mime or MimeLite with SGD and a frozen server momentum.
pub struct MimeSgdm {
    lite: bool,
    beta: f32,
    eta: f64,
    momentum: Momentum,
    /// c: the round's mean full-data gradient at x.
    c: Vec<f32>,
    /// The momentum link's input (a copy of c).
    scratch: Vec<f32>,
}

impl FromSetup for MimeSgdm {
    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(MimeSgdm {
            lite: k.lite,
            beta: k.momentum as f32,
            eta: s.spec.fl.global_lr,
            momentum: Momentum::ema(k.momentum as f32, s.dim),
            c: vec![0.0; s.dim],
            scratch: vec![0.0; s.dim],
        })
    }
}

impl Strategy for MimeSgdm {
    fn begin_round(&mut self, _info: &RoundInfo, _global: &[f32]) -> RoundNeeds {
        RoundNeeds {
            mean_full_gradient: true,
        }
    }

    fn round_gradient(&mut self, mean: &[f32]) {
        self.c.copy_from_slice(mean);
    }

    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        let b = self.beta;
        let t = Term {
            scale: 1.0 - b,
            ..Term::none()
        }
        .shift(b, self.momentum.m());
        let term = if self.lite {
            t
        } else {
            // (1−β)·(g_i(y) − g_i(x) + c) + β·m
            Term {
                anchor_grad: -(1.0 - b),
                ..t.shift(1.0 - b, &self.c)
            }
        };
        ClientPlan {
            term,
            ..ClientPlan::default()
        }
    }

    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        axpy(global, self.eta, &agg.mean_delta);
        // m ← (1−β)·c + β·m
        self.scratch.copy_from_slice(&self.c);
        self.momentum.update(
            &mut self.scratch,
            global,
            &Ctx::default(),
            &mut Log::default(),
        );
        ServerLog {
            server_lr: self.eta,
            state_norm: Some(self.momentum.norm()),
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        momentum_state(&self.momentum)
    }

    fn load_state(&mut self, state: Vec<(String, Vec<f32>)>) -> Result<()> {
        load_momentum(&mut self.momentum, state)
    }
}
