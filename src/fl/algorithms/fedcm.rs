//! FedCM (Xu et al. 2021, as in the GHBM reference code), α ∈ {0.1, 0.3, 0.5}: the client
//! mixes its gradient with the last round's server direction,
//! `d = α·g + (1−α)·Δ_{t−1}/(η_l·K)` with `Δ_{t−1} = θ_{t−1} − mean θ_i = −Δ̄_{t−1}` (0 in
//! round 0), η_l the step's learning rate and K the client's local steps; then the usual
//! clip / weight decay / SGD on d. Server as FedAvg, keeping Δ̄ for the next round: the links
//! `[keep_last, scale(η_g)]`.
//! α = 1 is FedAvg.

use crate::config::validate::unit_closed;
use crate::error::Result;
use crate::fl::plan::ClientPlan;
use crate::fl::strategy::{FromSetup, RoundInfo, ServerChain, Setup, Strategy, Traffic};
use crate::fl::term::{Coef, Term};
use crate::optim::{KeepLast, Scale};

crate::key_table! {
    /// `[fedcm]`
    pub struct Keys in "fedcm" {
        /// α: the weight of the client's own gradient.
        pub alpha: f64 = 0.1 => unit_closed;
    }
}

pub struct FedCm {
    alpha: f32,
    /// `[keep_last, scale(η_g)]`: its `last` is Δ̄ of the last round.
    server: ServerChain,
}

impl FromSetup for FedCm {
    fn from_setup(s: &Setup) -> Result<Self> {
        Ok(FedCm {
            alpha: s.keys::<Keys>()?.alpha as f32,
            server: ServerChain::new(vec![
                Box::new(KeepLast::new(s.dim)),
                Box::new(Scale(s.spec.fl.global_lr)),
            ]),
        })
    }
}

impl Strategy for FedCm {
    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        let a = self.alpha;
        // g ← α·g + (1 − α)·Δ_{t−1}/(η_l·K), with Δ_{t−1}/(η_l·K) = −Δ̄_{t−1}/(η_l·K)
        let drift = Coef::PerStepLength(-(1.0 - a as f64));
        ClientPlan {
            term: Term {
                scale: a,
                ..Term::none()
            }
            .shift_by(drift, self.server.get("last").unwrap_or(&[])),
            ..ClientPlan::default()
        }
    }

    /// The last round's direction Δ̄ down with the model (zeros in round 0).
    fn traffic(&self, _info: &RoundInfo) -> Traffic {
        Traffic { down: 1, up: 0 }
    }

    fn server(&mut self) -> Option<&mut ServerChain> {
        Some(&mut self.server)
    }
}
