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

use super::FedAvg;
use crate::config::validate::{non_negative, positive};
use crate::error::Result;
use crate::fl::algorithm::{
    Aggregate, Algorithm, ClientInfo, Frozen, LossInput, RoundInfo, ServerLog, Setup, take_state,
};
use crate::fl::losses::{cross_entropy, model_contrastive};
use crate::fl::per_client::PerClient;

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
    server: FedAvg,
    /// The model the round started from (the anchor of its clients).
    start: Vec<f32>,
    /// θ_0, the previous model of a client that has not trained yet.
    initial: Option<Vec<f32>>,
    prev: PerClient,
}

impl Moon {
    pub fn new(s: &Setup) -> Result<Self> {
        let k: Keys = s.spec.keys()?;
        Ok(Moon {
            mu: k.mu,
            tau: k.temperature,
            dim: s.dim,
            server: FedAvg::new(s.spec.fl.global_lr),
            start: vec![0.0; s.dim],
            initial: None,
            prev: PerClient::new("prev", s.client_sizes.len(), s.dim),
        })
    }
}

impl Algorithm for Moon {
    fn begin_round(&mut self, _info: &RoundInfo, global: &[f32]) {
        self.start.copy_from_slice(global);
        if self.initial.is_none() {
            self.initial = Some(global.to_vec());
        }
    }

    fn frozen(&self, client: usize) -> Vec<Frozen<'_>> {
        if self.mu == 0.0 {
            return Vec::new();
        }
        let prev = self
            .prev
            .get(client)
            .or(self.initial.as_deref())
            .expect("begin_round ran");
        vec![Frozen::Anchor, Frozen::Params(prev)]
    }

    fn local_loss(&self, input: &LossInput) -> Option<Tensor<1>> {
        if self.mu == 0.0 {
            return None;
        }
        let ce = cross_entropy(input.out.logits.clone(), input.targets.clone());
        let con = model_contrastive(
            input.out.features.clone(),
            input.frozen[0].features.clone(),
            input.frozen[1].features.clone(),
            self.tau,
        );
        Some(ce + con.mul_scalar(self.mu as f32))
    }

    fn client_done(&mut self, client: usize, delta: &[f32], _info: &ClientInfo) {
        if self.mu == 0.0 {
            return;
        }
        let p = self.prev.get_mut(client);
        p.iter_mut()
            .zip(self.start.iter().zip(delta))
            .for_each(|(p, (s, d))| *p = s + d);
    }

    fn server_update(
        &mut self,
        info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        self.server.server_update(info, global, agg)
    }

    fn state(&self) -> Vec<(String, &[f32])> {
        let mut out: Vec<(String, &[f32])> = self
            .initial
            .iter()
            .map(|v| ("initial".to_string(), v.as_slice()))
            .collect();
        out.extend(self.prev.state());
        out
    }

    fn load_state(&mut self, mut state: Vec<(String, Vec<f32>)>) -> Result<()> {
        if state.iter().any(|(n, _)| n == "initial") {
            self.initial = Some(take_state(&mut state, "initial", self.dim)?);
        }
        self.prev.load(&mut state)
    }
}
