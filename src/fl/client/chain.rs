//! The local optimizer as a chain of links, in the manner of optax:
//!
//! `algorithm term → [clip, decay] → momentum → the plan's rule links → scale_by_learning_rate`,
//! then `x ← x − u`, each link over K clients' rows of device tensors (one row a client)
//!
//! with the baseline's `[clip_by_global_norm(A), add_decayed_weights(wd)]`
//! (`x ← x − l·(clip_A(g) + wd·x)`) or FedNAR's `[add_decayed_weights(wd), clip_by_global_norm(A)]`
//! (`x ← x − l·clip_A(g + wd·x)`): FedNAR is the baseline with two links swapped, so it composes
//! with every algorithm. The algorithm's term comes first, so it is clipped with the loss
//! gradient, as in the official code. The momentum (`local.momentum`, PyTorch's SGD momentum)
//! comes after both, as `SGD(momentum, weight_decay)` adds the decay before its buffer; at 0,
//! the default, there is no such link.

use std::ops::Range;

use burn::tensor::{Device, Tensor};

use crate::config::LocalSpec;
use crate::fl::plan::Rule;
use crate::fl::term::{DeviceTerm, Term};
use crate::kernels::capture::in_place;
use crate::optim::{
    AddDecayedWeights, ClipByGlobalNorm, Ctx, HeavyBall, Log, RowsForm, Steps, TensorStep,
    TensorTransform, rows_links,
};

/// The chain's clip, weight decay and momentum (`local.max_norm`, `local.weight_decay`,
/// `local.nar`, `local.momentum`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipDecay {
    pub weight_decay: f32,
    pub max_norm: f32,
    /// FedNAR: decay before the clip, so that `g + wd·x` is clipped jointly.
    pub nar: bool,
    /// The heavy-ball momentum β after both (0: none).
    pub momentum: f32,
}

impl ClipDecay {
    pub fn new(weight_decay: f64, max_norm: f64, nar: bool) -> Self {
        ClipDecay {
            weight_decay: weight_decay as f32,
            max_norm: max_norm as f32,
            nar,
            momentum: 0.0,
        }
    }

    /// The same with the heavy-ball momentum β.
    pub fn with_momentum(self, beta: f64) -> Self {
        ClipDecay {
            momentum: beta as f32,
            ..self
        }
    }

    pub fn of(local: &LocalSpec) -> Self {
        Self::new(local.weight_decay, local.max_norm, local.nar).with_momentum(local.momentum)
    }

    /// The links over K rows of the parameter tensors at `ranges`, in order: the clip and the
    /// decay (in FedNAR's order or the baseline's), then the momentum where β > 0, its buffer
    /// at 0.
    fn device(
        &self,
        k: usize,
        ranges: &[Range<usize>],
        device: &Device,
    ) -> Vec<Box<dyn TensorTransform>> {
        let clip = Box::new(ClipByGlobalNorm(self.max_norm));
        let decay = Box::new(AddDecayedWeights(self.weight_decay));
        let mut links: Vec<Box<dyn TensorTransform>> = match self.nar {
            true => vec![decay, clip],
            false => vec![clip, decay],
        };
        if self.momentum > 0.0 {
            links.push(Box::new(HeavyBall::new(self.momentum, k, ranges, device)));
        }
        links
    }
}

/// The chain over the parameter tensors on the training device, for K clients at once (a row
/// each of every `[K, n]` tensor: one for one client, a cohort's): the term, clip and decay, the
/// rule's links (AMSGrad's moments, the trust ratio, a fixed scale: their state uploaded once
/// per training as rows), and `x ← x − l·u`. What changes
/// from step to step (each row's learning rate, whether it steps, FedCM's factor) is in tables
/// on the device, made once per training ([`Steps`]): a step takes no number from the host.
pub struct DeviceChain {
    term: DeviceTerm,
    base: Vec<Box<dyn TensorTransform>>,
    rule: Vec<Box<dyn TensorTransform>>,
    steps: Steps,
}

/// What the steps of one device training are: row k's context `ctx[s][k]` at step s (its
/// learning rate), and whether it takes part in step s (`active[s][k]`: a client past its last
/// step does not).
pub struct StepPlan {
    pub ctx: Vec<Vec<Ctx>>,
    pub active: Vec<Vec<bool>>,
}

impl DeviceChain {
    /// The device chain of K clients' plans (their terms and rules) from their anchors, with
    /// the tables of the steps `plan` (the training's first: [`DeviceChain::window`] moves
    /// on). Every rule link has a device form, and a cohort's clients share their rule's kinds
    /// and settings (one algorithm's plans).
    pub fn new(
        plans: &[(&Term, &Rule)],
        anchors: &[&[f32]],
        base: ClipDecay,
        ranges: &[Range<usize>],
        plan: &StepPlan,
        device: &Device,
    ) -> Self {
        let forms: Vec<Vec<RowsForm>> = plans
            .iter()
            .map(|(_, r)| r.links.iter().map(|l| l.rows_form()).collect())
            .collect();
        let rule = rows_links(&forms, ranges, device)
            .expect("a cohort's clients' rule links alike in kind and settings");
        let terms: Vec<&Term> = plans.iter().map(|(t, _)| *t).collect();
        let scaled = rule.iter().any(|l| l.applies_lr());
        DeviceChain {
            term: DeviceTerm::new(&terms, anchors, &plan.ctx, ranges, device),
            base: base.device(plans.len(), ranges, device),
            rule,
            steps: Steps::new(&lr_of(&plan.ctx), &plan.active, scaled, device),
        }
    }

    /// The tables of the next steps `plan` (a training longer than one window), the step index
    /// back at their first.
    pub fn window(&mut self, plan: &StepPlan, device: &Device) {
        self.term.window(&plan.ctx, device);
        let scaled = self.rule.iter().any(|l| l.applies_lr());
        self.steps = Steps::new(&lr_of(&plan.ctx), &plan.active, scaled, device);
    }

    /// A step: the term, clip, decay, the rule's links and `x ← x − l·u` over tensors (in place),
    /// each row with its learning rate l at the step if it steps, else left as it is (a client
    /// past its last step); `aux`: each row's starting model's gradient on its batch when the
    /// term reads it ([`DeviceChain::reads_anchor_grad`]), else empty; `g` ends as each row's
    /// `l·u`. Each row's pre-clip norm `[K, 1]`. The step index stays: [`DeviceChain::advance`]
    /// moves it.
    pub fn step(
        &mut self,
        x: &mut [Tensor<2>],
        g: &mut [Tensor<2>],
        aux: &[Tensor<2>],
    ) -> Option<Tensor<2>> {
        let mut s = TensorStep {
            u: g,
            x,
            aux,
            steps: &self.steps,
            active: self.steps.active(),
            norm: None,
        };
        self.term.update_tensors(&mut s);
        for l in self.base.iter_mut().chain(self.rule.iter_mut()) {
            l.update_tensors(&mut s);
        }
        let norm = s.norm;
        let rate = self.steps.at(&self.steps.rate);
        for (x, u) in x.iter_mut().zip(g.iter_mut()) {
            // in place: the same buffers every step (a captured step replays on them); `g`
            // ends as each row's l·u
            u.inplace(|u| u * rate.clone());
            in_place(x, |x| x - u.clone());
        }
        norm
    }

    /// The step index (`[1]`, on the device), for a table read at the step ([`Steps`]): read
    /// it before [`DeviceChain::advance`], and hold no copy across it.
    pub fn index(&self) -> Tensor<1, burn::tensor::Int> {
        self.steps.index()
    }

    /// On to the next step (the index written in place), after [`DeviceChain::step`].
    pub fn advance(&mut self) {
        self.steps.advance();
    }

    /// Whether the term reads each row's starting model's gradient on its batch (Mime's SVRG
    /// correction), which the step then computes beside the rows' own.
    pub fn reads_anchor_grad(&self) -> bool {
        self.term.reads_anchor_grad()
    }

    /// The moments the rule holds now, left in place (a captured graph keeps their buffers).
    pub fn moments(&self) -> Option<(Vec<Tensor<2>>, Vec<Tensor<2>>)> {
        self.rule.iter().find_map(|l| l.moments())
    }

    /// The chain's buffers and host numbers, in a fixed order ([`crate::optim::buffers`]).
    pub fn buffers<'a>(&'a mut self, out: &mut Vec<crate::optim::buffers::Buf<'a>>) {
        self.term.buffers(out);
        let links = self.base.len() + self.rule.len();
        out.push(crate::optim::buffers::Buf::Host(links as u64));
        for l in self.base.iter_mut().chain(self.rule.iter_mut()) {
            l.buffers(out);
        }
        self.steps.buffers(out);
    }

    /// The step's log from a row's norm that `step` returned, once read.
    pub fn read_norm(&self, norm: f64) -> Log {
        let mut log = Log::default();
        for l in &self.base {
            l.read_norm(norm, &mut log);
        }
        log
    }
}

/// Each row's learning rate at each step, from their contexts.
fn lr_of(ctx: &[Vec<Ctx>]) -> Vec<Vec<f64>> {
    ctx.iter()
        .map(|s| s.iter().map(|c| c.lr).collect())
        .collect()
}
