//! FedMLB (§5, the FedACG code's `MLB` client, the same form as the FedMLB code), ResNet-18
//! only: the trained model's activations after the stem and after each stage (levels 0–4)
//! each run through the frozen global model's remaining stages, pool and classifier (hybrid
//! branches; level 4 only the pool and classifier), and the gradient flows back into the
//! local lower layers. Loss
//! `λ1·CE(z) + λ2·mean_l CE(b_l) + λ3·mean_l KL(softmax(b_l/T) ‖ softmax(z/T))` with
//! λ1 = λ2 = λ3 = 1, T = 1, batch-mean KL. `fedmlb.branches = false` leaves only λ1·CE (FedAvg
//! with λ1 = 1). Server as FedAvg.

use burn::tensor::Tensor;

use super::FedAvg;
use crate::config::ModelKind;
use crate::config::validate::{non_negative, positive};
use crate::error::{Error, Result};
use crate::fl::algorithm::{Aggregate, Algorithm, Frozen, LossInput, RoundInfo, ServerLog, Setup};
use crate::fl::losses::{cross_entropy, kl_divergence};

crate::key_table! {
    /// `[fedmlb]`
    pub struct Keys in "fedmlb" {
        /// Use the hybrid branches (false: plain cross-entropy).
        pub branches: bool = true;
        pub lambda1: f64 = 1.0 => non_negative;
        pub lambda2: f64 = 1.0 => non_negative;
        pub lambda3: f64 = 1.0 => non_negative;
        pub temperature: f64 = 1.0 => positive;
    }
}

pub struct FedMlb {
    keys: Keys,
    server: FedAvg,
}

impl FedMlb {
    pub fn new(s: &Setup) -> Result<Self> {
        if s.spec.model.kind != ModelKind::Resnet18 {
            return Err(Error::Config(format!(
                "fl.algorithm = \"fedmlb\" needs model.kind = \"resnet18\" (its hybrid branches run ResNet-18's stages), not \"{}\"",
                s.spec.model.kind
            )));
        }
        Ok(FedMlb {
            keys: s.spec.keys()?,
            server: FedAvg::new(s.spec.fl.global_lr),
        })
    }
}

impl Algorithm for FedMlb {
    fn frozen(&self, _client: usize) -> Vec<Frozen<'_>> {
        if self.keys.branches {
            vec![Frozen::Anchor]
        } else {
            Vec::new()
        }
    }

    fn frozen_forward(&self) -> bool {
        false
    }

    fn local_loss(&self, input: &LossInput) -> Option<Tensor<1>> {
        let k = &self.keys;
        let z = input.out.logits.clone();
        let ce = cross_entropy(z.clone(), input.targets.clone());
        if !k.branches {
            return (k.lambda1 != 1.0).then(|| ce.mul_scalar(k.lambda1 as f32));
        }
        let global = input.frozen_models[0];
        let n = input.out.levels.len() as f32;
        let mut ce_b: Option<Tensor<1>> = None;
        let mut kl_b: Option<Tensor<1>> = None;
        for (level, act) in input.out.levels.iter().enumerate() {
            let b = global
                .forward_from(level, act.clone())
                .expect("checked: ResNet-18");
            let c = cross_entropy(b.clone(), input.targets.clone());
            let d = kl_divergence(b, z.clone(), k.temperature);
            ce_b = Some(ce_b.map_or(c.clone(), |s| s + c));
            kl_b = Some(kl_b.map_or(d.clone(), |s| s + d));
        }
        let (ce_b, kl_b) = (ce_b.expect("5 levels"), kl_b.expect("5 levels"));
        Some(
            ce.mul_scalar(k.lambda1 as f32)
                + ce_b.mul_scalar(k.lambda2 as f32 / n)
                + kl_b.mul_scalar(k.lambda3 as f32 / n),
        )
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
