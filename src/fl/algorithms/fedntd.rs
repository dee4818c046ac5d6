//! FedNTD (§5, the FedACG code's `NTD` client): loss `(1−β)·CE + β·KL(softmax(g_nt/T) ‖
//! softmax(z_nt/T))` with β = 0.3, T = 1, where `_nt` drops the true class and `g` are the
//! frozen global model's logits (batch-mean KL, no T² factor). β = 0 is FedAvg. Server as
//! FedAvg.

use burn::tensor::Tensor;

use super::FedAvg;
use crate::config::validate::{at_most_one, non_negative, positive};
use crate::error::Result;
use crate::fl::algorithm::{Aggregate, Algorithm, Frozen, LossInput, RoundInfo, ServerLog, Setup};
use crate::fl::losses::{cross_entropy, not_true_kl};

crate::key_table! {
    /// `[fedntd]`
    pub struct Keys in "fedntd" {
        /// β: the weight of the not-true distillation term (CE gets 1 − β).
        pub weight: f64 = 0.3 => non_negative, at_most_one;
        pub temperature: f64 = 1.0 => positive;
    }
}

pub struct FedNtd {
    beta: f64,
    temperature: f64,
    server: FedAvg,
}

impl FedNtd {
    pub fn new(s: &Setup) -> Result<Self> {
        let k: Keys = s.spec.keys()?;
        Ok(FedNtd {
            beta: k.weight,
            temperature: k.temperature,
            server: FedAvg::new(s.spec.fl.global_lr),
        })
    }
}

impl Algorithm for FedNtd {
    fn frozen(&self, _client: usize) -> Vec<Frozen<'_>> {
        if self.beta > 0.0 {
            vec![Frozen::Anchor]
        } else {
            Vec::new()
        }
    }

    fn local_loss(&self, input: &LossInput) -> Option<Tensor<1>> {
        if self.beta == 0.0 {
            return None;
        }
        let z = input.out.logits.clone();
        let ce = cross_entropy(z.clone(), input.targets.clone());
        let kl = not_true_kl(
            z,
            input.frozen[0].logits.clone(),
            input.targets.clone(),
            self.temperature,
        );
        Some(ce.mul_scalar((1.0 - self.beta) as f32) + kl.mul_scalar(self.beta as f32))
    }

    fn server_update(
        &mut self,
        info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        self.server.server_update(info, global, agg)
    }
}
