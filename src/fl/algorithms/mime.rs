//! Mime's keys, and the original Mime family with the server's optimizer state frozen during
//! local steps (Karimireddy et al. 2021; spec §6.4; the GHBM code's `mime_client.py` and
//! `mime.py` as the reference for the order of things). `fl.algorithm = "mime"` runs the
//! Fed-LAMB paper's Mime (AMSGrad local steps with the server's v̂, `fedlamb.rs`) by default;
//! `mime.base = "sgdm"` and `"frozen-amsgrad"` run these:
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

use super::fedlamb::{FedLamb, Keys as FedLambKeys, Source, Step, trust_keys_unread};
use crate::config::validate::unit_open;
use crate::config::{Spec, Unread};
use crate::error::Result;
use crate::fl::plan::{ClientPlan, Rule};
use crate::fl::strategy::{
    FromSetup, RoundInfo, RoundNeeds, ServerLog, ServerStep, Setup, Strategy, Traffic, axpy,
    load_momentum, momentum_state, take_state,
};
use crate::fl::term::Term;
use crate::optim::{Ctx, Descent, Log, Momentum, ScaleBy, Transform, fraction_at_floor};

crate::choice! {
    /// `mime.base`, the base optimizer: `amsgrad` (the Fed-LAMB paper's Mime: AMSGrad local
    /// steps with the server's v̂, keys in `[fedlamb]`) | `sgdm` (the original Mime with SGD and
    /// the server's momentum frozen) | `frozen-amsgrad` (the original Mime with AMSGrad: the
    /// server's m and v̂ frozen, keys in `[fedlamb]`).
    pub enum Base { Amsgrad = "amsgrad", Sgdm = "sgdm", FrozenAmsgrad = "frozen-amsgrad" }
}

crate::key_table! {
    /// `[mime]`
    pub struct Keys in "mime" {
        pub base: Base = Base::Amsgrad;
        /// β of `sgdm`.
        pub momentum: f64 = 0.9 => unit_open;
        /// `sgdm`, `frozen-amsgrad`: MimeLite (true) or Mime with the SVRG correction (false).
        pub lite: bool = true;
    }
}

/// The `[mime]` and `[fedlamb]` keys that `mime.base` leaves unread: `amsgrad` reads neither
/// `mime.momentum` nor `mime.lite` nor the trust ratio's keys; `sgdm` reads no `[fedlamb]` key;
/// `frozen-amsgrad` reads `mime.lite` and `[fedlamb]`'s β1, β2 and ε only.
pub fn unread(spec: &Spec) -> Vec<Unread> {
    let Ok(k) = spec.keys::<Keys>() else {
        return Vec::new();
    };
    let why = format!("because `mime.base = \"{}\"`", k.base);
    let named = |keys: &[&str]| keys.iter().map(|&key| Unread::new(key, &why)).collect();
    match k.base {
        Base::Amsgrad => {
            let mut out: Vec<Unread> = named(&["mime.momentum", "mime.lite"]);
            out.extend(trust_keys_unread(&why));
            out
        }
        Base::Sgdm => super::fedlamb::KEYS
            .defaults()
            .keys()
            .map(|key| Unread::new(format!("fedlamb.{key}"), &why))
            .collect(),
        Base::FrozenAmsgrad => {
            let mut out: Vec<Unread> = named(&["mime.momentum", "fedlamb.sync_every"]);
            out.extend(trust_keys_unread(&why));
            out
        }
    }
}

/// `fl.algorithm = "mime"`: with `mime.base = "amsgrad"` the Fed-LAMB paper's Mime (the
/// Fed-LAMB loop with the AMS step and the server's v̂ of full-data gradients), with `"sgdm"`
/// [`MimeSgdm`].
pub fn build(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(match s.keys::<Keys>()?.base {
        Base::Sgdm | Base::FrozenAmsgrad => Box::new(MimeSgdm::from_setup(s)?),
        Base::Amsgrad => Box::new(FedLamb::new(Step::Ams, Source::FullGradient, s)?),
    })
}

/// Mime or MimeLite with the server's optimizer state frozen in local steps: SGD with momentum,
/// or AMSGrad (with [`Second`]).
pub struct MimeSgdm {
    lite: bool,
    beta: f32,
    eta: f64,
    momentum: Momentum,
    second: Option<Second>,
    /// c: the round's mean full-data gradient at x.
    c: Vec<f32>,
    /// The momentum link's input (a copy of c).
    scratch: Vec<f32>,
}

/// The original Mime's AMSGrad second moment on the server: `v` and `v̂` of the rounds' c.
pub struct Second {
    beta2: f32,
    /// ε: v̂'s floor.
    eps: f32,
    v: Vec<f32>,
    vhat: Vec<f32>,
    /// `1/√v̂`, what the local steps scale by.
    inv_sqrt: Vec<f32>,
}

impl Second {
    /// `v ← β2·v + (1−β2)·c²`, `v̂ ← max(v̂, v)`.
    fn update(&mut self, c: &[f32]) {
        let b2 = self.beta2;
        for ((v, vh), g) in self.v.iter_mut().zip(&mut self.vhat).zip(c) {
            *v = b2 * *v + (1.0 - b2) * g * g;
            *vh = vh.max(*v);
        }
        self.refresh();
    }

    fn refresh(&mut self) {
        self.inv_sqrt = self.vhat.iter().map(|v| 1.0 / v.sqrt()).collect();
    }
}

impl FromSetup for MimeSgdm {
    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        let (beta, second) = match k.base {
            Base::FrozenAmsgrad => {
                let f: FedLambKeys = s.keys()?;
                let mut second = Second {
                    beta2: f.beta2 as f32,
                    eps: f.eps as f32,
                    v: vec![0.0; s.dim],
                    vhat: vec![f.eps as f32; s.dim],
                    inv_sqrt: Vec::new(),
                };
                second.refresh();
                (f.beta1, Some(second))
            }
            _ => (k.momentum, None),
        };
        Ok(MimeSgdm {
            lite: k.lite,
            beta: beta as f32,
            eta: s.spec.fl.global_lr,
            momentum: Momentum::ema(beta as f32, s.dim),
            second,
            c: vec![0.0; s.dim],
            scratch: vec![0.0; s.dim],
        })
    }
}

impl Strategy for MimeSgdm {
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
                links: vec![Box::new(ScaleBy(sec.inv_sqrt.clone()))],
                descent: Descent::Sgd,
            },
            None => Rule::default(),
        };
        ClientPlan {
            term,
            rule,
            ..ClientPlan::default()
        }
    }

    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let (global, agg) = (s.global, s.agg);
        axpy(global, self.eta, &agg.mean_delta);
        // m ← (1−β)·c + β·m
        if let Some(sec) = &mut self.second {
            sec.update(&self.c);
        }
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
            at_floor: self
                .second
                .as_ref()
                .map(|s| fraction_at_floor(&s.vhat, s.eps)),
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

    fn state(&self) -> Vec<(String, &[f32])> {
        let mut st = momentum_state(&self.momentum);
        if let Some(sec) = &self.second {
            st.push(("v".into(), &sec.v));
            st.push(("vhat".into(), &sec.vhat));
        }
        st
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        if let Some(sec) = &mut self.second {
            sec.v = take_state(&mut state, "v", sec.v.len())?;
            sec.vhat = take_state(&mut state, "vhat", sec.vhat.len())?;
            sec.refresh();
        }
        load_momentum(&mut self.momentum, state)
    }
}
