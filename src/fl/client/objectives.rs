//! Each client's objective on its slice of the K copies' outputs: the cross-entropy, or its
//! plan's local loss, with the frozen models that loss reads (the starting model, MOON's
//! previous local model, FedMLB's global model for its branches) evaluated on the client's own
//! batch as when it trains alone; and the gradient of the starting model on the client's batch,
//! with the step's dropout masks, for the terms that read it (Mime's).

use burn::tensor::{Device, Int, Tensor};

use super::draw::Drawn;
use crate::fl::losses::cross_entropy;
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput};
use crate::model::copies::Stacked;
use crate::model::{Model, Outputs, Outputs3};

/// What one client's objective reads.
struct Client<'a> {
    loss: Option<&'a dyn LocalLoss>,
    /// Its frozen models, in the plan's order: indices into [`Objectives::nets`].
    frozen: Vec<usize>,
    frozen_outputs: bool,
    anchor_grad: bool,
}

/// The objectives of the clients of one training call, client by client. The clients of a call
/// start from one model (a round's broadcast), so the starting model is loaded once.
pub struct Objectives<'a> {
    clients: Vec<Client<'a>>,
    /// The frozen models, one copy each: the starting model first when a loss reads it.
    nets: Vec<Stacked<'a>>,
    /// The starting model with gradient, when a client's term reads its gradient.
    anchor: Option<Stacked<'a>>,
}

impl<'a> Objectives<'a> {
    /// The objectives of `plans` (one per client) starting from `anchor`, on `device`.
    pub fn new(
        plans: &[ClientPlan<'a>],
        model: &'a Model,
        anchor: &[f32],
        device: &Device,
    ) -> Self {
        let mut nets = Vec::new();
        let reads_anchor = plans
            .iter()
            .any(|p| p.frozen.iter().any(|f| matches!(f, Frozen::Anchor)));
        if reads_anchor {
            nets.push(Stacked::frozen(model, &[anchor], device));
        }
        let mut clients = Vec::with_capacity(plans.len());
        for p in plans {
            let frozen = p.frozen.iter().map(|f| match f {
                Frozen::Anchor => 0,
                Frozen::Params(x) => {
                    nets.push(Stacked::frozen(model, &[x], device));
                    nets.len() - 1
                }
            });
            clients.push(Client {
                loss: p.loss,
                frozen: frozen.collect(),
                frozen_outputs: p.frozen_outputs,
                anchor_grad: p.term.anchor_grad != 0.0,
            });
        }
        let grad = clients.iter().any(|c| c.anchor_grad);
        Objectives {
            clients,
            nets,
            anchor: grad.then(|| Stacked::new(model, &[anchor], device)),
        }
    }

    /// Whether client `k`'s term reads the starting model's gradient.
    pub fn reads_anchor_grad(&self, k: usize) -> bool {
        self.clients[k].anchor_grad
    }

    /// The starting model's gradient on `d`'s batch with its masks `mask`, into `out` (for a
    /// client whose term reads it; else nothing).
    pub fn anchor_grad(&self, d: &Drawn, mask: u64, out: &mut [f32]) {
        let (Some(am), true) = (&self.anchor, self.clients[d.k].anchor_grad) else {
            return;
        };
        let logits = am.outputs(d.input.clone(), Some(&[mask])).copy(0).logits;
        let mut grads = cross_entropy(logits, d.y.clone()).backward();
        am.read_grads(&mut grads, &mut [out]);
    }

    /// Each client's loss `[k]` in `group` (batches of b samples, targets `ys` one client's
    /// after another) from the K copies' outputs `out`.
    pub fn losses(&self, out: Outputs3, group: &[Drawn], ys: Tensor<1, Int>) -> Tensor<1> {
        if group.iter().all(|d| self.clients[d.k].loss.is_none()) {
            return Stacked::losses(out.logits, ys);
        }
        let b = out.logits.dims()[1];
        let per = group.iter().enumerate().map(|(i, d)| {
            let own = out.copy(i);
            let y = ys.clone().narrow(0, i * b, b);
            let c = &self.clients[d.k];
            let Some(loss) = c.loss else {
                return cross_entropy(own.logits, y);
            };
            let models: Vec<&Stacked> = c.frozen.iter().map(|&j| &self.nets[j]).collect();
            let frozen: Vec<Outputs> = (models.iter().filter(|_| c.frozen_outputs))
                .map(|m| m.outputs(d.input.clone(), None).copy(0).detach())
                .collect();
            loss.loss(&LossInput {
                out: &own,
                targets: &y,
                frozen: &frozen,
                frozen_models: &models,
            })
        });
        Tensor::cat(per.collect(), 0)
    }
}
