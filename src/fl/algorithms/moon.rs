//! MOON (§5, the official MOON code), μ = 1, τ = 0.5: loss
//! `CE + μ·CE([cos(z, z_glob), cos(z, z_prev)]/τ, target 0)`, z the representation the
//! classifier reads (the projection head's output with `model.projection = 256`, as MOON's
//! `ModelFedCon`), z_glob from the frozen broadcast model, z_prev from the client's own
//! previous local model (buffer size 1). A client that has not trained yet uses the run's
//! initial model as its previous one (MOON's code: that client's own initial network, drawn
//! independently; here all clients share θ_0, so the first step's term is μ·ln 2). Server as
//! FedAvg (the official code weighs clients by size: `fl.aggregation = "size"`). μ = 0 is FedAvg.
//!
//! The previous models are stored per client once it has trained: one model-sized vector each.

use burn::tensor::Tensor;

use crate::config::validate::{non_negative, positive};
use crate::error::Result;
use crate::fl::losses::{cross_entropy, model_contrastive};
use crate::fl::per_client::{CLIENT_STATE, PerClient};
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput, Report};
use crate::fl::strategy::{FromSetup, RoundInfo, RoundNeeds, Setup, State, Strategy};

crate::key_table! {
    /// `[moon]`
    pub struct Keys in "moon" {
        pub mu: f64 = 1.0 => non_negative;
        pub temperature: f64 = 0.5 => positive;
    }
}

pub struct Moon {
    mu: f64,
    tau: f64,
    dim: usize,
    /// The model the round started from (the anchor of its clients).
    start: Vec<f32>,
    /// θ_0, the previous model of a client that has not trained yet.
    initial: Option<Vec<f32>>,
    prev: PerClient,
}

impl LocalLoss for Moon {
    fn loss(&self, input: &LossInput) -> Tensor<1> {
        let ce = cross_entropy(input.out.logits.clone(), input.targets.clone(), input.kept);
        let con = model_contrastive(
            input.out.features.clone(),
            input.frozen[0].features.clone(),
            input.frozen[1].features.clone(),
            self.tau,
            input.kept,
        );
        ce + con.mul_scalar(self.mu as f32)
    }
}

impl FromSetup for Moon {
    const READS: &'static [&'static str] = CLIENT_STATE;

    const AVERAGES: bool = true;

    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(Moon {
            mu: k.mu,
            tau: k.temperature,
            dim: s.dim,
            start: vec![0.0; s.dim],
            initial: None,
            prev: PerClient::new("prev", s.client_sizes.len(), s.dim),
        })
    }
}

impl Strategy for Moon {
    fn begin_round(&mut self, _info: &RoundInfo, global: &[f32]) -> Result<RoundNeeds> {
        self.start.copy_from_slice(global);
        if self.initial.is_none() {
            self.initial = Some(global.to_vec());
        }
        Ok(RoundNeeds::default())
    }

    fn plan(&self, client: usize) -> ClientPlan<'_> {
        // begin_round stored θ_0 before any client trains
        let prev = self.prev.get(client).or(self.initial.as_deref());
        match prev {
            Some(prev) if self.mu != 0.0 => ClientPlan {
                frozen: vec![Frozen::Anchor, Frozen::Params(prev)],
                loss: Some(self),
                ..ClientPlan::default()
            },
            _ => ClientPlan::default(),
        }
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        if self.mu == 0.0 {
            return Ok(());
        }
        let p = self.prev.get_mut(client)?;
        p.iter_mut()
            .zip(self.start.iter().zip(report.delta))
            .for_each(|(p, (s, d))| *p = s + d);
        Ok(())
    }

    /// θ_0 once drawn, and each client's previous model when the contrastive term is on.
    fn state(&mut self) -> State<'_> {
        let st = State::none().optional("initial", &mut self.initial, self.dim);
        match self.mu != 0.0 {
            true => st.store(&mut self.prev),
            false => st,
        }
    }
}
