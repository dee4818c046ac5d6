//! Each client's objective on its slice of the K copies' outputs: the cross-entropy, or its
//! plan's local loss, with the frozen models that loss reads (the starting model, MOON's
//! previous local model, FedMLB's global model for its branches) evaluated on the client's own
//! batch as when it trains alone (the group's clients' frozen models as one stacked forward,
//! each copy on its client's batch).

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::draw::Group;
use crate::data::Input;
use crate::fl::losses::{Kept, cross_entropy};
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput};
use crate::model::copies::Stacked;
use crate::model::{Model, Outputs, Outputs3};
use crate::optim::upload_rows;

/// One client's pieces of a group's step: its outputs, targets and row mask, its frozen models
/// and their outputs.
struct Own<'a> {
    out: Outputs,
    y: Tensor<1, Int>,
    kept: Option<Kept>,
    models: Vec<&'a Stacked<'a>>,
    frozen: Vec<Outputs>,
}

/// A client's loss input from its pieces.
fn loss_input<'s>(o: &'s Own<'s>) -> LossInput<'s> {
    LossInput {
        out: &o.out,
        targets: &o.y,
        frozen: &o.frozen,
        frozen_models: &o.models,
        kept: o.kept.as_ref(),
    }
}

/// What one client's objective reads.
struct Client<'a> {
    loss: Option<&'a dyn LocalLoss>,
    /// Its frozen models, in the plan's order, one copy each (for a loss that runs them itself:
    /// FedMLB's branches): indices into [`Objectives::nets`].
    frozen: Vec<usize>,
    /// How many frozen models' outputs its loss reads (the first of [`Objectives::stacks`]).
    outputs: usize,
}

/// The objectives of the clients of one training call, client by client. The clients of a call
/// start from one model (a round's broadcast), so the starting model is loaded once. The frozen
/// models whose outputs a loss reads run once a step for all the clients of a group, stacked as
/// the trained copies are: the j-th frozen model of every client is row k of `stacks[j]`.
pub struct Objectives<'a> {
    model: &'a Model,
    clients: Vec<Client<'a>>,
    /// The frozen models a loss runs itself, one copy each: the starting model first when one
    /// is the starting model.
    nets: Vec<Stacked<'a>>,
    /// The frozen models whose outputs the losses read: for the j-th of the clients' plans, each
    /// parameter tensor as `[K, n]` rows, row k client k's (zeros where it has none).
    stacks: Vec<Vec<Tensor<2>>>,
}

impl<'a> Objectives<'a> {
    /// The objectives of `plans` (one per client) starting from `anchor`, on `device`.
    pub fn new(
        plans: &[ClientPlan<'a>],
        model: &'a Model,
        anchor: &[f32],
        device: &Device,
    ) -> Self {
        let runs_own = |p: &ClientPlan| !p.frozen_outputs;
        let mut nets = Vec::new();
        let reads_anchor = (plans.iter().filter(|p| runs_own(p)))
            .any(|p| p.frozen.iter().any(|f| matches!(f, Frozen::Anchor)));
        if reads_anchor {
            nets.push(Stacked::frozen(model, &[anchor], device));
        }
        let mut clients = Vec::with_capacity(plans.len());
        for p in plans {
            let frozen = p.frozen.iter().filter(|_| runs_own(p)).map(|f| match f {
                Frozen::Anchor => 0,
                Frozen::Params(x) => {
                    nets.push(Stacked::frozen(model, &[x], device));
                    nets.len() - 1
                }
            });
            clients.push(Client {
                loss: p.loss,
                frozen: frozen.collect(),
                outputs: if runs_own(p) { 0 } else { p.frozen.len() },
            });
        }
        let slots = clients.iter().map(|c| c.outputs).max().unwrap_or(0);
        let ranges = model.layout().ranges();
        let stacks = (0..slots)
            .map(|j| {
                let rows: Vec<Option<&[f32]>> = (plans.iter().zip(&clients))
                    .map(|(p, c)| match p.frozen.get(j).filter(|_| j < c.outputs) {
                        Some(Frozen::Anchor) => Some(anchor),
                        Some(Frozen::Params(x)) => Some(*x),
                        None => None,
                    })
                    .collect();
                upload_rows(&rows, &ranges, device)
            })
            .collect();
        Objectives {
            model,
            clients,
            nets,
            stacks,
        }
    }

    /// The objectives of `k` clients that all train on the cross-entropy alone.
    pub fn plain(model: &'a Model, k: usize) -> Self {
        let client = || Client {
            loss: None,
            frozen: Vec::new(),
            outputs: 0,
        };
        Objectives {
            model,
            clients: (0..k).map(|_| client()).collect(),
            nets: Vec::new(),
            stacks: Vec::new(),
        }
    }

    /// Whether every client trains on the cross-entropy alone, with no frozen model (a step
    /// then reads nothing of the objectives but the batch).
    pub fn is_plain(&self) -> bool {
        self.clients
            .iter()
            .all(|c| c.loss.is_none() && c.outputs == 0)
            && self.nets.is_empty()
            && self.stacks.is_empty()
    }

    /// Whether every client's loss is a mean over its batch's samples, each read alone
    /// ([`LocalLoss::pads`]), so that it reads a [`crate::model::copies::RowMask`]: a step may be padded.
    pub fn pads(&self) -> bool {
        self.clients.iter().all(|c| c.loss.is_none_or(|l| l.pads()))
    }

    /// Each client's loss `[k]` of the group's clients (batches of b samples side by side in
    /// its input, targets one client's after another) from their K copies' outputs `out`; a
    /// group with a row mask only where every loss takes one ([`Objectives::pads`]).
    pub fn losses(&self, out: Outputs3, g: &Group) -> Tensor<1> {
        let (ks, input, ys) = (&g.ks, &g.input, g.y.clone());
        if ks.iter().all(|&k| self.clients[k].loss.is_none()) {
            return Stacked::losses(out.logits, ys, g.mask.as_ref());
        }
        let b = out.logits.dims()[1];
        let stacked = self.frozen_outputs(ks, input);
        let own: Vec<Own> = (ks.iter().enumerate())
            .map(|(i, &k)| Own {
                out: out.copy(i),
                y: ys.clone().narrow(0, i * b, b),
                // the client's row of the mask
                kept: g.mask.as_ref().map(|m| Kept {
                    keep: m.keep.clone().narrow(0, i, 1).reshape([b, 1]),
                    scale: m.scale.clone().narrow(0, i, 1),
                }),
                models: self.clients[k]
                    .frozen
                    .iter()
                    .map(|&j| &self.nets[j])
                    .collect(),
                frozen: (stacked.iter().take(self.clients[k].outputs))
                    .map(|o| o.copy(i).detach())
                    .collect(),
            })
            .collect();
        match self.one_loss(ks) {
            // the clients' losses at once (a frozen model run once on every client's rows)
            Some(loss) => loss.losses(&own.iter().map(loss_input).collect::<Vec<_>>()),
            None => {
                let per = (ks.iter().zip(&own)).map(|(&k, o)| match self.clients[k].loss {
                    Some(loss) => loss.loss(&loss_input(o)),
                    None => cross_entropy(o.out.logits.clone(), o.y.clone(), o.kept.as_ref()),
                });
                Tensor::cat(per.collect(), 0)
            }
        }
    }

    /// The loss of every client of `ks`, when they all have the same one with the same frozen
    /// models.
    fn one_loss(&self, ks: &[usize]) -> Option<&dyn LocalLoss> {
        let first = &self.clients[*ks.first()?];
        let loss = first.loss?;
        ks.iter()
            .all(|&k| {
                let c = &self.clients[k];
                c.loss.is_some_and(|l| std::ptr::addr_eq(l, loss)) && c.frozen == first.frozen
            })
            .then_some(loss)
    }

    /// The outputs of the clients `ks`' frozen models on their batches (`input`), the j-th of
    /// every client as one stacked forward (`[k, b, …]`, copy i the i-th client's), for each j
    /// a client reads.
    fn frozen_outputs(&self, ks: &[usize], input: &Input) -> Vec<Outputs3> {
        let slots = ks.iter().map(|&k| self.clients[k].outputs).max();
        let (Some(slots), Some(first)) = (slots, self.stacks.first()) else {
            return Vec::new();
        };
        let (n, k) = (self.clients.len(), ks.len());
        // the group's rows: all of them, or gathered (one index upload)
        let idx = (k < n).then(|| {
            let idx: Vec<i64> = ks.iter().map(|&k| k as i64).collect();
            Tensor::<1, Int>::from_data(TensorData::new(idx, [k]), &first[0].device())
        });
        (self.stacks.iter().take(slots))
            .map(|rows| {
                let params = (rows.iter())
                    .map(|r| {
                        let r = match &idx {
                            None => r.clone(),
                            Some(idx) => r.clone().select(0, idx.clone()),
                        };
                        let len = r.dims()[1];
                        Tensor::from_inner(r.reshape([k * len]))
                    })
                    .collect();
                Stacked::of(self.model, params, k).outputs(input.clone(), None)
            })
            .collect()
    }
}
