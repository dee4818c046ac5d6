//! Mime's keys, and MimeLite with SGD and server momentum (Karimireddy et al. 2021, the original
//! Mime family; spec §6.4). `fl.algorithm = "mime"` runs the Fed-LAMB paper's Mime (AMSGrad
//! local steps with the server's v̂, `fedlamb.rs`) by default; `mime.base = "sgdm"` runs
//! MimeLite:
//!
//! - each sampled client computes the gradient of its whole data at the round's starting model
//!   x and sends it up with Δ_i;
//! - local steps apply the base optimizer, SGD with momentum, with the server's momentum m
//!   **frozen**: `y ← y − η·((1−β)·g + β·m)` (the gradient term `g ← (1−β)·g + β·m` runs
//!   before the clip/decay chain, like every algorithm term);
//! - server: `x ← x + η_g·Δ̄`, and the momentum takes one step with the clients' mean full-data
//!   gradient: `m ← (1−β)·mean ∇f_i(x) + β·m` (m_0 = 0).
//!
//! The momentum is the Mime paper's EMA form. The GHBM reference code (torch SGD, dampening 0)
//! keeps `m ← β·m + g` and steps with `β·m + g`: the same method with the gradient's weight 1
//! instead of 1−β. Full Mime (the SVRG correction `g_i(y) − g_i(x) + ∇f(x)`, which needs the
//! round's mean full-data gradient before the local steps) is not implemented.

use serde::{Deserialize, Serialize};

use crate::config::validate::one_of;
use crate::error::{Error, Result};
use crate::fl::algorithm::{
    Aggregate, Algorithm, LocalTerm, RoundInfo, ServerLog, Setup, StepCtx, Uplink, axpy, take_state,
};
use crate::fl::step::global_norm;

/// `[mime]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Keys {
    /// The base optimizer: `amsgrad` (the Fed-LAMB paper's Mime: AMSGrad local steps with the
    /// server's v̂, keys in `[fedlamb]`) | `sgdm` (MimeLite with SGD and server momentum).
    pub base: String,
    /// β of `sgdm`.
    pub momentum: f64,
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            base: "amsgrad".into(),
            momentum: 0.9,
        }
    }
}

impl Keys {
    pub fn validate(&self) -> Result<()> {
        one_of("mime.base", &self.base, &["amsgrad", "sgdm"])?;
        if (0.0..1.0).contains(&self.momentum) {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "key `mime.momentum` must be in [0, 1), got {}",
                self.momentum
            )))
        }
    }
}

/// MimeLite with SGD and a frozen server momentum.
pub struct MimeLite {
    beta: f32,
    eta: f64,
    dim: usize,
    m: Vec<f32>,
    /// Σ of the round's full-data gradients so far, and how many.
    sum_grad: Vec<f64>,
    n_grad: usize,
}

impl MimeLite {
    pub fn new(s: &Setup) -> Self {
        MimeLite {
            beta: s.spec.algorithms.mime.momentum as f32,
            eta: s.spec.fl.global_lr,
            dim: s.dim,
            m: vec![0.0; s.dim],
            sum_grad: vec![0.0; s.dim],
            n_grad: 0,
        }
    }

    /// The server momentum m.
    pub fn momentum(&self) -> &[f32] {
        &self.m
    }
}

impl Algorithm for MimeLite {
    fn local_term(&self, _client: usize, _ctx: &StepCtx) -> LocalTerm<'_> {
        LocalTerm {
            scale: 1.0 - self.beta,
            ..LocalTerm::none()
        }
        .shift(self.beta, &self.m)
    }

    fn wants_full_gradient(&self) -> bool {
        true
    }

    fn client_uplink(&mut self, _client: usize, mut uplink: Uplink) {
        if let Ok(g) = take_state(&mut uplink, "full_grad", self.dim) {
            self.sum_grad
                .iter_mut()
                .zip(&g)
                .for_each(|(s, g)| *s += *g as f64);
            self.n_grad += 1;
        }
    }

    fn server_update(
        &mut self,
        _info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        axpy(global, self.eta, &agg.mean_delta);
        if self.n_grad > 0 {
            let (b, n) = (self.beta as f64, self.n_grad as f64);
            self.m
                .iter_mut()
                .zip(&self.sum_grad)
                .for_each(|(m, s)| *m = ((1.0 - b) * (s / n) + b * *m as f64) as f32);
        }
        self.sum_grad.fill(0.0);
        self.n_grad = 0;
        ServerLog {
            server_lr: self.eta,
            state_norm: Some(global_norm(&self.m)),
        }
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        vec![("m".into(), self.m.as_slice())]
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        self.m = take_state(&mut state, "m", self.dim)?;
        Ok(())
    }
}
