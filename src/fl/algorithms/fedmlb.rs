//! FedMLB (§5, the FedACG code's `MLB` client, the same form as the FedMLB code), ResNet-18
//! only: the trained model's activations after the stem and after each stage (levels 0–4)
//! each run through the frozen global model's remaining stages, pool and classifier (hybrid
//! branches; level 4 only the pool and classifier), and the gradient flows back into the
//! local lower layers. Loss
//! `λ1·CE(z) + λ2·mean_l CE(b_l) + λ3·mean_l KL(softmax(b_l/T) ‖ softmax(z/T))` with
//! λ1 = λ2 = λ3 = 1, T = 1, batch-mean KL. `fedmlb.branches = false` leaves only λ1·CE (FedAvg
//! with λ1 = 1). Server as FedAvg.

use burn::tensor::Tensor;

use crate::config::validate::{non_negative, positive};
use crate::config::{ModelKind, Spec};
use crate::error::{Error, Result};
use crate::fl::losses::{cross_entropy, kl_divergence};
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput};
use crate::fl::strategy::{ExtraWork, FromSetup, Setup, Strategy};

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
}

impl FedMlb {
    /// The loss of one client with its branches' logits `branch(l)` at each of its levels:
    /// `λ1·CE(z) + λ2·mean_l CE(b_l) + λ3·mean_l KL(softmax(b_l/T) ‖ softmax(z/T))`.
    fn of_branches(
        &self,
        input: &LossInput,
        mut branch: impl FnMut(usize) -> Tensor<2>,
    ) -> Tensor<1> {
        let k = &self.keys;
        let z = input.out.logits.clone();
        let ce = cross_entropy(z.clone(), input.targets.clone(), input.kept);
        let n = input.out.levels.len() as f32;
        let mut ce_b: Option<Tensor<1>> = None;
        let mut kl_b: Option<Tensor<1>> = None;
        for level in 0..input.out.levels.len() {
            let b = branch(level);
            let c = cross_entropy(b.clone(), input.targets.clone(), input.kept);
            let d = kl_divergence(b, z.clone(), k.temperature, input.kept);
            ce_b = Some(ce_b.map_or(c.clone(), |s| s + c));
            kl_b = Some(kl_b.map_or(d.clone(), |s| s + d));
        }
        ce.mul_scalar(k.lambda1 as f32)
            + ce_b.expect("5 levels").mul_scalar(k.lambda2 as f32 / n)
            + kl_b.expect("5 levels").mul_scalar(k.lambda3 as f32 / n)
    }
}

impl LocalLoss for FedMlb {
    fn loss(&self, input: &LossInput) -> Tensor<1> {
        let k = &self.keys;
        if !k.branches {
            let ce = cross_entropy(input.out.logits.clone(), input.targets.clone(), input.kept);
            return ce.mul_scalar(k.lambda1 as f32);
        }
        let global = input.frozen_models[0];
        self.of_branches(input, |level| {
            let act = input.out.levels[level].clone();
            global.forward_from(level, act).expect("checked: ResNet-18")
        })
    }

    /// The clients' activations at each level as one batch through the one frozen global
    /// model (5 forwards a step for a cohort, not 5 a client), each client's branches its rows.
    fn losses(&self, inputs: &[LossInput]) -> Tensor<1> {
        if !self.keys.branches || inputs.len() < 2 {
            return Tensor::cat(inputs.iter().map(|i| self.loss(i)).collect(), 0);
        }
        let global = inputs[0].frozen_models[0];
        let rows: Vec<usize> = inputs.iter().map(|i| i.out.logits.dims()[0]).collect();
        let mut branches: Vec<Vec<Tensor<2>>> = inputs.iter().map(|_| Vec::new()).collect();
        for level in 0..inputs[0].out.levels.len() {
            let acts = inputs.iter().map(|i| i.out.levels[level].clone()).collect();
            let all =
                (global.forward_from(level, Tensor::cat(acts, 0))).expect("checked: ResNet-18");
            let mut at = 0;
            for (own, &b) in branches.iter_mut().zip(&rows) {
                own.push(all.clone().narrow(0, at, b));
                at += b;
            }
        }
        let per = (inputs.iter().zip(branches)).map(|(i, b)| self.of_branches(i, |l| b[l].clone()));
        Tensor::cat(per.collect(), 0)
    }
}

impl FromSetup for FedMlb {
    const AVERAGES: bool = true;

    fn check(spec: &Spec) -> Result<()> {
        if spec.model.kind != ModelKind::Resnet18 {
            return Err(Error::Config(format!(
                "fl.algorithm = \"fedmlb\" needs model.kind = \"resnet18\" (its hybrid branches run ResNet-18's stages), not \"{}\"",
                spec.model.kind
            )));
        }
        Ok(())
    }

    fn extra_work(spec: &Spec) -> Option<ExtraWork> {
        let k: Keys = spec.keys().ok()?;
        k.branches.then(|| {
            ExtraWork::every_round(
                "besides, each local step runs the activations of each of 5 levels through the frozen broadcast model's remaining stages, forward and backward",
            )
        })
    }

    fn from_setup(s: &Setup) -> Result<Self> {
        Self::check(s.spec)?;
        Ok(FedMlb { keys: s.keys()? })
    }
}

impl Strategy for FedMlb {
    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        let k = &self.keys;
        ClientPlan {
            frozen: if k.branches {
                vec![Frozen::Anchor]
            } else {
                Vec::new()
            },
            frozen_outputs: false,
            // without branches and with λ1 = 1 the loss is plain cross-entropy
            loss: (k.branches || k.lambda1 != 1.0).then_some(self as &dyn LocalLoss),
            ..ClientPlan::default()
        }
    }
}
