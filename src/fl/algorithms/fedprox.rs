//! FedProx: `½μ‖x − x_global‖²` is added to the local loss, so `μ(x − x_global)` joins the
//! gradient and is clipped with it; server as FedAvg.

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::plan::ClientPlan;
use crate::fl::strategy::{FromSetup, Setup, Strategy};
use crate::fl::term::Term;

crate::key_table! {
    /// `[fedprox]`
    pub struct Keys in "fedprox" {
        /// μ: `½μ‖x − x_global‖²` joins the local loss (FedACG's code writes `w·Σ(θ−Φ)²` without
        /// ½: its w = 1e-3 is μ = 2e-3 here).
        pub mu: f64 = 0.001 => non_negative;
    }
}

pub struct FedProx {
    mu: f32,
}

impl FedProx {
    /// FedProx with the gradient factor μ of `½μ‖x − anchor‖²`.
    pub fn new(mu: f32) -> Self {
        FedProx { mu }
    }
}

impl FromSetup for FedProx {
    const AVERAGES: bool = true;

    fn from_setup(s: &Setup) -> Result<Self> {
        Ok(FedProx {
            mu: s.keys::<Keys>()?.mu as f32,
        })
    }
}

impl Strategy for FedProx {
    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        ClientPlan {
            term: Term::prox(self.mu),
            ..ClientPlan::default()
        }
    }
}
