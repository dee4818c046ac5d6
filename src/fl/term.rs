//! An algorithm's term in the local gradient, in the one affine form every algorithm here needs:
//!
//! `g ← scale·g + prox·(x − anchor) + Σ_k c_k·v_k + anchor_grad·∇f(anchor; batch)`
//!
//! (FedProx and FedACG: `prox`; SCAFFOLD: `c − c_i` as two shifts; FedDyn: `prox` and `−g_i`;
//! FedDC; FedCM: `scale` and a shift whose factor depends on the step's learning rate; Mime:
//! the gradient of the starting model on the batch). The vectors `v_k` are fixed for a client's
//! training, so the local step uploads them once; the factors may depend on the
//! step ([`Coef`]). The term is the first link of the local chain: it is clipped with the loss
//! gradient, and sits inside FedNAR's clip.

use std::ops::Range;

use burn::tensor::{Device, Tensor};

use crate::optim::buffers::{Buf, Buffers};
use crate::optim::{Ctx, RowFactor, TensorStep, TensorTransform, table, upload_rows};

/// The factor of a shift.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coef {
    Fixed(f32),
    /// `k/(l·K)` with the step's learning rate l and the client's step count K: a drift per
    /// unit of the round's path length (FedCM).
    PerStepLength(f64),
}

impl Coef {
    fn at(self, ctx: &Ctx) -> f32 {
        match self {
            Coef::Fixed(c) => c,
            Coef::PerStepLength(k) => (k / (ctx.lr * ctx.steps as f64)) as f32,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Term<'a> {
    pub scale: f32,
    pub prox: f32,
    pub shifts: Vec<(Coef, &'a [f32])>,
    /// The factor of the starting model's gradient on the batch: a second forward and backward
    /// per step (on the device step, in the one backward of the rows' own).
    pub anchor_grad: f32,
}

impl Default for Term<'_> {
    fn default() -> Self {
        Self::none()
    }
}

impl<'a> Term<'a> {
    /// No term: `g` unchanged.
    pub fn none() -> Self {
        Term {
            scale: 1.0,
            prox: 0.0,
            shifts: Vec::new(),
            anchor_grad: 0.0,
        }
    }

    /// `prox·(x − anchor)`, the gradient of `½·prox·‖x − anchor‖²`.
    pub fn prox(prox: f32) -> Self {
        Term {
            prox,
            ..Self::none()
        }
    }

    /// Add `c·v`.
    pub fn shift(mut self, c: f32, v: &'a [f32]) -> Self {
        self.shifts.push((Coef::Fixed(c), v));
        self
    }

    /// Add `c·v` if there is a `v` (a per-client vector the client may not have yet).
    pub fn shift_if(self, c: f32, v: Option<&'a [f32]>) -> Self {
        match v {
            Some(v) => self.shift(c, v),
            None => self,
        }
    }

    /// Add `c·v` with a factor that depends on the step.
    pub fn shift_by(mut self, c: Coef, v: &'a [f32]) -> Self {
        self.shifts.push((c, v));
        self
    }

    pub fn is_none(&self) -> bool {
        self.scale == 1.0 && self.prox == 0.0 && self.shifts.is_empty() && self.anchor_grad == 0.0
    }
}

/// The term on the training device for K clients at once (one client's, or a cohort's): each
/// client's anchor and vectors uploaded once for its training, one `[K, n]` tensor per parameter
/// tensor, a row per client. The
/// clients' shifts are matched by position: a client with fewer shifts has zeros and a zero
/// factor in the others' (adding `0·0` leaves its sum as it is alone). The starting model's
/// gradient on each row's batch comes with the step ([`TensorStep::aux`]).
pub struct DeviceTerm {
    scale: RowFactor,
    prox: RowFactor,
    anchor: Vec<Tensor<2>>,
    shifts: Vec<Slot>,
    anchor_grad: RowFactor,
}

/// A shift's vectors of the K clients, and its factors: one a client (0 where a client has no
/// vector here) when none depends on the step, else a table of each client's at each step
/// ([`Steps`]), made once.
struct Slot {
    factor: Factor,
    v: Vec<Tensor<2>>,
}

enum Factor {
    Fixed(RowFactor),
    /// The table, and the clients' factors it is made from.
    PerStep(Box<Tensor<2>>, Vec<Option<Coef>>),
}

impl Slot {
    /// The factor of the clients' `coefs` with their contexts `ctx[s][k]`, on `device`.
    fn factor(coefs: &[Option<Coef>], ctx: &[Vec<Ctx>], device: &Device) -> Factor {
        let at = |ctx: &[Ctx]| -> Vec<f32> {
            (coefs.iter().zip(ctx))
                .map(|(c, ctx)| c.map_or(0.0, |c| c.at(ctx)))
                .collect()
        };
        if coefs.iter().flatten().all(|c| matches!(c, Coef::Fixed(_))) {
            return Factor::Fixed(RowFactor::new(
                &at(&vec![Ctx::default(); coefs.len()]),
                device,
            ));
        }
        let per: Vec<Vec<f32>> = ctx.iter().map(|c| at(c)).collect();
        Factor::PerStep(Box::new(table(&per, coefs.len(), device)), coefs.to_vec())
    }
}

impl DeviceTerm {
    /// The terms of K clients with their anchors on `device`, and their contexts `ctx[s][k]` at
    /// each step of the training (for a factor that depends on the step).
    pub fn new(
        terms: &[&Term],
        anchors: &[&[f32]],
        ctx: &[Vec<Ctx>],
        ranges: &[Range<usize>],
        device: &Device,
    ) -> Self {
        let per = |f: fn(&Term) -> f32| -> Vec<f32> { terms.iter().map(|t| f(t)).collect() };
        let prox = RowFactor::new(&per(|t| t.prox), device);
        let slots = terms.iter().map(|t| t.shifts.len()).max().unwrap_or(0);
        let shifts = (0..slots)
            .map(|j| {
                let at: Vec<Option<&(Coef, &[f32])>> =
                    terms.iter().map(|t| t.shifts.get(j)).collect();
                let rows: Vec<Option<&[f32]>> = at.iter().map(|s| s.map(|s| s.1)).collect();
                let coefs: Vec<Option<Coef>> = at.iter().map(|s| s.map(|s| s.0)).collect();
                Slot {
                    factor: Slot::factor(&coefs, ctx, device),
                    v: upload_rows(&rows, ranges, device),
                }
            })
            .collect();
        let anchor = match prox.is(0.0) {
            true => Vec::new(),
            false => upload_rows(
                &anchors.iter().map(|a| Some(*a)).collect::<Vec<_>>(),
                ranges,
                device,
            ),
        };
        DeviceTerm {
            scale: RowFactor::new(&per(|t| t.scale), device),
            prox,
            anchor,
            shifts,
            anchor_grad: RowFactor::new(&per(|t| t.anchor_grad), device),
        }
    }

    /// The term's buffers and host numbers ([`crate::optim::buffers`]).
    pub fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        self.scale.buffers(out);
        self.prox.buffers(out);
        self.anchor.buffers(out);
        out.push(Buf::Host(self.shifts.len() as u64));
        for slot in &mut self.shifts {
            match &mut slot.factor {
                Factor::Fixed(f) => f.buffers(out),
                Factor::PerStep(t, _) => out.push(Buf::F2(t)),
            }
            slot.v.buffers(out);
        }
        self.anchor_grad.buffers(out);
    }

    /// The tables of the factors that depend on the step, for the steps of contexts `ctx`
    /// ([`crate::fl::client::DeviceChain::window`]).
    pub fn window(&mut self, ctx: &[Vec<Ctx>], device: &Device) {
        for slot in &mut self.shifts {
            if let Factor::PerStep(_, coefs) = &slot.factor {
                slot.factor = Slot::factor(&coefs.clone(), ctx, device);
            }
        }
    }

    /// Whether a row's term reads its starting model's gradient on the batch.
    pub fn reads_anchor_grad(&self) -> bool {
        !self.anchor_grad.is(0.0)
    }

    fn is_none(&self) -> bool {
        self.scale.is(1.0)
            && self.prox.is(0.0)
            && self.shifts.is_empty()
            && !self.reads_anchor_grad()
    }
}

impl TensorTransform for DeviceTerm {
    fn update_tensors(&mut self, s: &mut TensorStep) {
        if self.is_none() {
            return;
        }
        // the factors, those that depend on the step (FedCM's) their tables' column at the step
        let factors: Vec<RowFactor> = (self.shifts.iter())
            .map(|slot| match &slot.factor {
                Factor::Fixed(f) => f.clone(),
                Factor::PerStep(t, _) => RowFactor::Rows(Box::new(s.steps.at(t))),
            })
            .collect();
        for (k, (g, xk)) in s.u.iter_mut().zip(s.x).enumerate() {
            let mut t: Option<Tensor<2>> =
                (!self.prox.is(0.0)).then(|| self.prox.times(xk.clone() - self.anchor[k].clone()));
            let mut add = |av: Tensor<2>| {
                t = Some(match t.take() {
                    Some(t) => t + av,
                    None => av,
                })
            };
            for (f, slot) in factors.iter().zip(&self.shifts) {
                add(f.times(slot.v[k].clone()));
            }
            if self.reads_anchor_grad() {
                add(self.anchor_grad.times(s.aux[k].clone()));
            }
            let scaled = if self.scale.is(1.0) {
                g.clone()
            } else {
                self.scale.times(g.clone())
            };
            *g = match t {
                Some(t) => scaled + t,
                None => scaled,
            };
        }
    }
}
