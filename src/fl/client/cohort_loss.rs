//! A cohort's per-client objectives: each client's cross-entropy on the stacked logits, or its
//! plan's local loss on its own slice of the stacked outputs (the losses that read only the
//! trained model's logits and features and the starting model's outputs: FedLC, FedNTD,
//! FedDecorr), with the starting model's outputs on the client's batch as when it trains alone.

use burn::tensor::{Device, Int, Tensor};

use super::cohort_batches::Drawn;
use crate::fl::losses::cross_entropy;
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput};
use crate::model::copies::Stacked;
use crate::model::{Model, Outputs, Outputs3};

/// Why a client's loss cannot be computed in a cohort; None when it can.
pub fn why_not(plan: &ClientPlan) -> Option<&'static str> {
    if plan.loss.is_some_and(|l| !l.stacks()) {
        Some("its local loss reads more than the trained model's logits and features")
    } else if plan.frozen.iter().any(|f| !matches!(f, Frozen::Anchor))
        || (!plan.frozen.is_empty() && !plan.frozen_outputs)
    {
        Some("its loss reads frozen models other than the starting model's outputs")
    } else {
        None
    }
}

/// The cohort's clients' objectives, client by client.
pub struct Objectives<'a> {
    losses: Vec<Option<&'a dyn LocalLoss>>,
    /// The starting model, when a client's loss reads its outputs.
    frozen: Option<Stacked<'a>>,
}

impl<'a> Objectives<'a> {
    /// The objectives of `plans` (one per client), whose starting model is `anchor` (of
    /// `model`'s layout), on `device`.
    pub fn new(
        plans: &[ClientPlan<'a>],
        model: &'a Model,
        anchor: &[f32],
        device: &Device,
    ) -> Self {
        let reads = plans.iter().any(|p| !p.frozen.is_empty());
        Objectives {
            losses: plans.iter().map(|p| p.loss).collect(),
            frozen: reads.then(|| Stacked::frozen(model, &[anchor], device)),
        }
    }

    /// Each client's loss `[k]` in `group` (batches of b samples, targets `ys` one client's
    /// after another) from the stacked outputs `out`.
    pub fn losses(&self, out: Outputs3, group: &[Drawn], ys: Tensor<1, Int>) -> Tensor<1> {
        if group.iter().all(|d| self.losses[d.k].is_none()) {
            return Stacked::losses(out.logits, ys);
        }
        let b = out.logits.dims()[1];
        let per = group.iter().enumerate().map(|(i, d)| {
            let own = out.copy(i);
            let y = ys.clone().narrow(0, i * b, b);
            let Some(loss) = self.losses[d.k] else {
                return cross_entropy(own.logits, y);
            };
            let frozen: Vec<Outputs> = self
                .frozen
                .iter()
                .map(|m| m.outputs(d.input.clone(), None).copy(0).detach())
                .collect();
            loss.loss(&LossInput {
                out: &own,
                targets: &y,
                frozen: &frozen,
                frozen_models: self.frozen.as_slice(),
            })
        });
        Tensor::cat(per.collect(), 0)
    }
}
