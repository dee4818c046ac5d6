//! The original Mime family, with the server's optimizer state frozen during local steps
//! (Karimireddy et al. 2021; spec §6.4; the GHBM code's `mime_client.py` and `mime.py` as the
//! reference for the order of things), `mime.base = "sgdm"` or `"frozen-amsgrad"`:
//!
//! - the round begins with every sampled client computing the gradient of its whole data at
//!   the round's model x; the server averages them: `c = mean ∇f_i(x)`;
//! - local steps apply the base optimizer with the server's state **frozen**. SGD with momentum
//!   (`sgdm`, β = `mime.momentum`): MimeLite (`mime.lite = true`) `y ← y − η·((1−β)·g + β·m)`;
//!   AMSGrad (`frozen-amsgrad`, β1, β2, ε of `[fedlamb]`): `y ← y − η·((1−β1)·g + β1·m)/√v̂`.
//!   Mime (`lite = false`): the gradient is the SVRG-corrected `g_i(y) − g_i(x) + c`, where
//!   `g_i(x)` is the gradient of the round's model on the same batch (a second forward and
//!   backward per step). The term runs before the clip/decay chain, like every algorithm term,
//!   and the division by √v̂ after it;
//! - server: `x ← x + η_g·Δ̄`, and the optimizer state takes one step with c:
//!   `m ← (1−β)·c + β·m` (m_0 = 0); for AMSGrad also `v ← β2·v + (1−β2)·c²`, `v̂ ← max(v̂, v)`
//!   (v_0 = 0, v̂_0 = ε).
//!
//! The momentum is the Mime paper's EMA form. The GHBM code (torch SGD, dampening 0) keeps
//! `m ← β·m + g` and steps with `β·m + g`: the same method with the gradient's weight 1 instead
//! of 1−β (another effective step size).

use crate::error::Result;
use crate::fl::plan::{ClientPlan, Rule};
use crate::fl::strategy::{
    RoundInfo, RoundNeeds, ServerLog, ServerStep, State, Strategy, Traffic, average,
};
use crate::fl::term::Term;
use crate::optim::{Ctx, Log, Momentum, ScaleBy, SecondMoment, Transform};

/// Mime or MimeLite with the server's optimizer state frozen in local steps: SGD with momentum,
/// or AMSGrad (with the server's second moment).
pub struct MimeFrozen {
    lite: bool,
    beta: f32,
    momentum: Momentum,
    /// `frozen-amsgrad`: v and v̂ of the rounds' c.
    second: Option<SecondMoment>,
    /// c: the round's mean full-data gradient at x.
    c: Vec<f32>,
    /// The momentum link's input (a copy of c).
    scratch: Vec<f32>,
}

impl MimeFrozen {
    /// MimeLite (`lite`) or Mime, with the momentum's β (SGDm) or AMSGrad's β1, and for AMSGrad
    /// its β2 and ε (`second`), for a model of `dim` parameters.
    pub fn new(lite: bool, beta: f64, second: Option<(f64, f64)>, dim: usize) -> Self {
        MimeFrozen {
            lite,
            beta: beta as f32,
            momentum: Momentum::ema(beta as f32, dim),
            second: second.map(|(beta2, eps)| SecondMoment::new(beta2, eps, dim)),
            c: vec![0.0; dim],
            scratch: vec![0.0; dim],
        }
    }
}

impl Strategy for MimeFrozen {
    fn begin_round(&mut self, _info: &RoundInfo, _global: &[f32]) -> Result<RoundNeeds> {
        Ok(RoundNeeds {
            mean_full_gradient: true,
        })
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
        let rule = match &self.second {
            // the frozen v̂ divides the direction, after the clip/decay chain
            Some(sec) => Rule {
                links: vec![Box::new(ScaleBy(sec.inv_sqrt()))],
            },
            None => Rule::default(),
        };
        ClientPlan {
            term,
            rule,
            ..ClientPlan::default()
        }
    }

    /// The server's m (and v̂), and for Mime (not MimeLite) the control c, down; the
    /// full-data gradient up (the GHBM code's `_send_data`).
    fn traffic(&self, _info: &RoundInfo) -> Traffic {
        Traffic {
            down: 1 + usize::from(self.second.is_some()) + usize::from(!self.lite),
            up: 1,
        }
    }

    /// `x ← x + η_g·Δ̄`, then the optimizer state takes its step with c. Not a chain on Δ̄: the
    /// momentum follows the round's full-data gradient c, not the update.
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let log = average(s.info, s.global, s.agg);
        if let Some(sec) = &mut self.second {
            sec.step(self.c.iter().copied());
        }
        // m ← (1−β)·c + β·m
        self.scratch.copy_from_slice(&self.c);
        let (ctx, mut unused) = (Ctx::default(), Log::default());
        self.momentum
            .update(&mut self.scratch, s.global, &ctx, &mut unused);
        ServerLog {
            state_norm: Some(self.momentum.norm()),
            at_floor: self.second.as_ref().map(SecondMoment::at_floor),
            ..log
        }
    }

    /// The server's m, and with AMSGrad its v and v̂.
    fn state(&mut self) -> State<'_> {
        let st = State::none().link(&mut self.momentum);
        match &mut self.second {
            Some(sec) => {
                let (v, vhat) = sec.vectors();
                st.vector("v", v).vector("vhat", vhat)
            }
            None => st,
        }
    }
}
