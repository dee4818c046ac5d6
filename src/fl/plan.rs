//! What one client does in a round, and what it sends back: the client's side of an
//! algorithm, as values. The strategy makes a [`ClientPlan`] per sampled client; the trainer
//! runs it without knowing the algorithm, and returns a [`Report`] the strategy receives.

use burn::tensor::{Int, Tensor};

use super::losses::Kept;
use super::term::Term;
use crate::model::Outputs;
use crate::model::copies::Stacked;
use crate::optim::{LocalLink, Moments};

/// A model that a client's loss reads without training it.
pub enum Frozen<'a> {
    /// The model the client started from (the broadcast model).
    Anchor,
    /// Any other parameter vector (the client's previous local model, for MOON).
    Params(&'a [f32]),
}

/// What the local objective sees at one step.
pub struct LossInput<'a> {
    /// The trained model's outputs on the batch (with gradient).
    pub out: &'a Outputs,
    /// The batch's labels.
    pub targets: &'a Tensor<1, Int>,
    /// The frozen models' outputs on the batch, in the plan's order (no gradient; empty when
    /// the plan asks for none).
    pub frozen: &'a [Outputs],
    /// The frozen models themselves, one copy each (their parameters take no gradient; a
    /// forward through them from the trained model's activations passes the gradient to those:
    /// FedMLB).
    pub frozen_models: &'a [&'a Stacked<'a>],
    /// At a padded step, which rows of the batch are the client's samples (None: every row);
    /// each batch mean reads it ([`crate::fl::losses`]).
    pub kept: Option<&'a Kept>,
}

/// A local objective other than cross-entropy (FedLC, FedNTD, FedDecorr, MOON, FedMLB).
pub trait LocalLoss: Sync {
    /// The loss of one batch, a one-element tensor.
    fn loss(&self, input: &LossInput) -> Tensor<1>;

    /// Whether the loss is a mean over the batch's samples, each read alone, so that a batch
    /// padded with rows of no weight ([`LossInput::kept`]) gives it: then one captured graph
    /// serves a training's short batches too (the default: true; FedDecorr reads the batch's
    /// statistics).
    fn pads(&self) -> bool {
        true
    }

    /// The losses `[k]` of k clients at one step, `inputs[i]` client i's, all with the same
    /// frozen models (a cohort's clients start from one model): by default each alone. A loss
    /// that runs a frozen model itself may run it once on every client's rows (FedMLB's hybrid
    /// branches through the one global model).
    fn losses(&self, inputs: &[LossInput]) -> Tensor<1> {
        Tensor::cat(inputs.iter().map(|i| self.loss(i)).collect(), 0)
    }
}

/// The links after the chain's clip and weight decay: none (plain SGD) by default; the Fed-LAMB
/// family's AMSGrad moments and trust ratio, the original Mime's fixed scale. The step is
/// `x ← x − l·u` unless one of them applies the learning rate, then `x ← x − u`.
#[derive(Default)]
pub struct Rule {
    pub links: Vec<Box<dyn LocalLink>>,
}

/// Everything a client's local training needs from its algorithm.
pub struct ClientPlan<'a> {
    /// The models the loss reads besides the trained one, loaded once.
    pub frozen: Vec<Frozen<'a>>,
    /// Whether the frozen models' outputs on each batch go to the loss (FedMLB runs parts of
    /// them itself).
    pub frozen_outputs: bool,
    /// The local objective; None: cross-entropy of the logits.
    pub loss: Option<&'a dyn LocalLoss>,
    /// The algorithm's term in the gradient, the chain's first link.
    pub term: Term<'a>,
    /// The links after clip and weight decay.
    pub rule: Rule,
    /// Whether the client also sends the gradient of its whole data at its starting model
    /// (Mime-LAMB).
    pub full_gradient: bool,
}

impl Default for ClientPlan<'_> {
    fn default() -> Self {
        ClientPlan {
            frozen: Vec::new(),
            frozen_outputs: true,
            loss: None,
            term: Term::none(),
            rule: Rule::default(),
            full_gradient: false,
        }
    }
}

/// What a client's training produced besides Δ_i.
#[derive(Clone, Copy, Debug)]
pub struct ClientInfo {
    pub steps: usize,
    /// The round's learning rate (of its first local epoch).
    pub lr: f64,
    pub samples: usize,
}

/// What a client sends up besides Δ_i, as its plan asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Uplink {
    /// The gradient of its whole data at its starting model (`ClientPlan::full_gradient`).
    pub full_gradient: Option<Vec<f32>>,
    /// The moments its rule ended with (a rule with a moment-keeping link).
    pub moments: Option<Moments>,
}

/// A client's report to the strategy.
pub struct Report<'r> {
    /// Δ_i = x_i − anchor.
    pub delta: &'r [f32],
    pub info: ClientInfo,
    pub uplink: Uplink,
}
