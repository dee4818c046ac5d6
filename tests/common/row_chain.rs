//! One client's local chain driven over host vectors, for tests that step it by hand: the local
//! step's own chain (`DeviceChain`) over one row on flex, the vectors uploaded and read back each
//! step.

use std::ops::Range;

use burn::tensor::{Device, Tensor, TensorData};
use fedrun::fl::client::{ClipDecay, DeviceChain, StepPlan};
use fedrun::fl::plan::Rule;
use fedrun::fl::term::Term;
use fedrun::optim::{Ctx, Log, Moments};

pub struct RowChain {
    chain: DeviceChain,
    ranges: Vec<Range<usize>>,
    dev: Device,
}

/// The ranges of `n` parameters as one tensor.
pub fn one_tensor(n: usize) -> Vec<Range<usize>> {
    std::iter::once(0..n).collect()
}

/// `v` cut at `ranges` as one-row tensors `[1, n]` on `dev`.
pub fn split(v: &[f32], ranges: &[Range<usize>], dev: &Device) -> Vec<Tensor<2>> {
    (ranges.iter())
        .map(|r| Tensor::<2>::from_data(TensorData::new(v[r.clone()].to_vec(), [1, r.len()]), dev))
        .collect()
}

/// Tensors read back and joined, in order.
pub fn join(t: Vec<Tensor<2>>) -> Vec<f32> {
    (t.into_iter())
        .flat_map(|t| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap())
        .collect()
}

impl RowChain {
    /// The chain of a client with `term` (bound to `anchor`), the clip and decay `base` and
    /// `rule`, over parameter tensors at `ranges`, for `steps` steps at the context `ctx`.
    pub fn new(
        term: &Term,
        anchor: &[f32],
        base: ClipDecay,
        rule: &Rule,
        ranges: &[Range<usize>],
        ctx: Ctx,
        steps: usize,
    ) -> Self {
        let dev = Device::flex();
        let plan = StepPlan {
            ctx: vec![vec![ctx]; steps],
            active: vec![vec![true]; steps],
        };
        let chain = DeviceChain::new(&[(term, rule)], &[anchor], base, ranges, &plan, &dev);
        RowChain {
            chain,
            ranges: ranges.to_vec(),
            dev,
        }
    }

    /// One step from the gradient `g`: `x ← x − l·u` in place (`x ← x − u` where the rule
    /// applies the rate), with u the chain's update of `g`; returns `l·u` (at l = 1, the
    /// update itself) with the step's log.
    pub fn step(&mut self, x: &mut [f32], g: &[f32]) -> (Vec<f32>, Log) {
        self.step_aux(x, g, &[])
    }

    /// [`RowChain::step`] with the starting model's gradient `g_anchor` on the step's batch, for
    /// a term that reads it (Mime's); empty when none does.
    pub fn step_aux(&mut self, x: &mut [f32], g: &[f32], g_anchor: &[f32]) -> (Vec<f32>, Log) {
        let mut xt = split(x, &self.ranges, &self.dev);
        let mut gt = split(g, &self.ranges, &self.dev);
        let aux = match g_anchor.is_empty() {
            true => Vec::new(),
            false => split(g_anchor, &self.ranges, &self.dev),
        };
        let norm = self.chain.step(&mut xt, &mut gt, &aux);
        self.chain.advance();
        let log = norm.map_or(Log::default(), |n| {
            self.chain.read_norm(f64::from(n.into_scalar::<f32>()))
        });
        x.copy_from_slice(&join(xt));
        (join(gt), log)
    }

    /// The rule's moments now, if it keeps any.
    pub fn moments(&self) -> Option<Moments> {
        let (m, v) = self.chain.moments()?;
        Some(Moments {
            m: join(m),
            v: join(v),
        })
    }
}
