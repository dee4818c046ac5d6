//! The local optimizer as a chain of links, in the manner of optax:
//!
//! `algorithm term → [clip, decay] → the plan's rule links → scale_by_learning_rate`, then
//! `x ← x − u`
//!
//! with the baseline's `[clip_by_global_norm(A), add_decayed_weights(wd)]`
//! (`x ← x − l·(clip_A(g) + wd·x)`) or FedNAR's `[add_decayed_weights(wd), clip_by_global_norm(A)]`
//! (`x ← x − l·clip_A(g + wd·x)`): FedNAR is the baseline with two links swapped, so it composes
//! with every algorithm. The algorithm's term comes first, so it is clipped with the loss
//! gradient, as in the official code.

use std::ops::Range;

use burn::tensor::{Device, Tensor};

use crate::config::LocalSpec;
use crate::fl::plan::Rule;
use crate::fl::term::{DeviceTerm, Term, TermLink};
use crate::optim::{
    AddDecayedWeights, Chain, ClipByGlobalNorm, Ctx, Log, Moments, ScaleByLearningRate, TensorStep,
    TensorTransform,
};

/// The chain's clip and weight decay (`local.max_norm`, `local.weight_decay`, `local.nar`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipDecay {
    pub weight_decay: f32,
    pub max_norm: f32,
    /// FedNAR: decay before the clip, so that `g + wd·x` is clipped jointly.
    pub nar: bool,
}

impl ClipDecay {
    pub fn new(weight_decay: f64, max_norm: f64, nar: bool) -> Self {
        ClipDecay {
            weight_decay: weight_decay as f32,
            max_norm: max_norm as f32,
            nar,
        }
    }

    pub fn of(local: &LocalSpec) -> Self {
        Self::new(local.weight_decay, local.max_norm, local.nar)
    }

    /// The two links over host vectors, in order.
    fn host(&self, chain: &mut Chain) {
        let clip = Box::new(ClipByGlobalNorm(self.max_norm));
        let decay = Box::new(AddDecayedWeights(self.weight_decay));
        if self.nar {
            chain.push(decay);
            chain.push(clip);
        } else {
            chain.push(clip);
            chain.push(decay);
        }
    }

    /// The two links over device tensors, in order.
    fn device(&self) -> [Box<dyn TensorTransform>; 2] {
        let clip = Box::new(ClipByGlobalNorm(self.max_norm));
        let decay = Box::new(AddDecayedWeights(self.weight_decay));
        if self.nar {
            [decay, clip]
        } else {
            [clip, decay]
        }
    }
}

/// The chain over flat host vectors: the term, clip and decay, the rule's links, and
/// `scale_by_learning_rate` unless a rule link applies the learning rate (the trust ratio).
pub struct HostChain<'a> {
    chain: Chain<'a>,
}

impl<'a> HostChain<'a> {
    pub fn new(term: Term<'a>, anchor: &'a [f32], base: ClipDecay, rule: Rule) -> Self {
        let mut chain = Chain::new(vec![Box::new(TermLink { term, anchor })]);
        base.host(&mut chain);
        let scaled = rule.links.iter().any(|l| l.applies_lr());
        for l in rule.links {
            chain.push(l);
        }
        if !scaled {
            chain.push(Box::new(ScaleByLearningRate));
        }
        HostChain { chain }
    }

    /// One step at the learning rate `ctx.lr`: `g` through the chain, then `x ← x − g`.
    pub fn step(&mut self, x: &mut [f32], g: &mut [f32], ctx: &Ctx) -> Log {
        let log = self.chain.update(g, x, ctx);
        x.iter_mut().zip(g.iter()).for_each(|(x, u)| *x -= u);
        log
    }

    /// The moments the rule ended with, if it keeps any.
    pub fn into_moments(self) -> Option<Moments> {
        self.chain.into_moments()
    }
}

/// The same chain over the parameter tensors on the training device, with SGD's step: the
/// term's vectors uploaded once per client.
pub struct DeviceChain {
    term: DeviceTerm,
    base: [Box<dyn TensorTransform>; 2],
}

impl DeviceChain {
    /// The device chain of a plan, or None when it must run on the host (a rule other than SGD,
    /// or a term that reads the anchor's gradient).
    pub fn new(
        term: &Term,
        rule: &Rule,
        anchor: &[f32],
        base: ClipDecay,
        ranges: &[Range<usize>],
        device: &Device,
    ) -> Option<Self> {
        if !rule.is_sgd() {
            return None;
        }
        Some(DeviceChain {
            term: DeviceTerm::new(term, anchor, ranges, device)?,
            base: base.device(),
        })
    }

    /// The term, clip, decay and `x ← x − l·g` (l = `ctx.lr`, as an f32) over tensors; the
    /// pre-clip norm as a one-element tensor.
    pub fn step(&self, x: &mut [Tensor<1>], g: &mut [Tensor<1>], ctx: &Ctx) -> Option<Tensor<1>> {
        let lr = ctx.lr as f32;
        let mut s = TensorStep {
            u: g,
            x,
            norm: None,
        };
        self.term.update_tensors(&mut s, ctx);
        for l in &self.base {
            l.update_tensors(&mut s, ctx);
        }
        let norm = s.norm;
        for (x, u) in x.iter_mut().zip(g.iter()) {
            *x = x.clone() - u.clone() * lr;
        }
        norm
    }

    /// The step's log from the norm `step` returned, once read.
    pub fn read_norm(&self, norm: f64) -> Log {
        let mut log = Log::default();
        for l in &self.base {
            l.read_norm(norm, &mut log);
        }
        log
    }
}
