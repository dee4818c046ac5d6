//! FedNTD (§5, the FedACG code's `NTD` client): loss `(1−β)·CE + β·KL(softmax(g_nt/T) ‖
//! softmax(z_nt/T))` with β = 0.3, T = 1, where `_nt` drops the true class and `g` are the
//! frozen global model's logits (batch-mean KL, no T² factor). β = 0 is FedAvg. Server as
//! FedAvg.

use burn::tensor::Tensor;

use crate::config::validate::{at_most_one, non_negative, positive};
use crate::error::Result;
use crate::fl::losses::{cross_entropy, not_true_kl};
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput};
use crate::fl::strategy::{ExtraWork, FromSetup, Setup, Strategy};

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
}

impl LocalLoss for FedNtd {
    fn loss(&self, input: &LossInput) -> Tensor<1> {
        let z = input.out.logits.clone();
        let ce = cross_entropy(z.clone(), input.targets.clone(), input.kept);
        let kl = not_true_kl(
            z,
            input.frozen[0].logits.clone(),
            input.targets.clone(),
            self.temperature,
            input.kept,
        );
        ce.mul_scalar((1.0 - self.beta) as f32) + kl.mul_scalar(self.beta as f32)
    }
}

impl FromSetup for FedNtd {
    const AVERAGES: bool = true;

    fn extra_work(spec: &crate::config::Spec) -> Option<ExtraWork> {
        let k: Keys = spec.keys().ok()?;
        (k.weight != 0.0).then(|| {
            ExtraWork::every_round(
                "besides, each local step runs its batch forward through the frozen broadcast model",
            )
        })
    }

    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(FedNtd {
            beta: k.weight,
            temperature: k.temperature,
        })
    }
}

impl Strategy for FedNtd {
    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        if self.beta == 0.0 {
            return ClientPlan::default();
        }
        ClientPlan {
            frozen: vec![Frozen::Anchor],
            loss: Some(self),
            ..ClientPlan::default()
        }
    }
}
