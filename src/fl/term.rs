//! An algorithm's term in the local gradient, in the one affine form every algorithm here needs:
//!
//! `g ← scale·g + prox·(x − anchor) + Σ_k c_k·v_k + anchor_grad·∇f(anchor; batch)`
//!
//! (FedProx and FedACG: `prox`; SCAFFOLD: `c − c_i` as two shifts; FedDyn: `prox` and `−g_i`;
//! FedDC; FedCM: `scale` and a shift whose factor depends on the step's learning rate; Mime:
//! the gradient of the starting model on the batch). The vectors `v_k` are fixed for a client's
//! training, so the device-resident step uploads them once; the factors may depend on the
//! step ([`Coef`]). The term is the first link of the local chain: it is clipped with the loss
//! gradient, and sits inside FedNAR's clip.

use std::ops::Range;

use burn::tensor::{Device, Tensor, TensorData};

use crate::optim::{Ctx, Log, TensorStep, TensorTransform, Transform};

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
    /// per step, on the host step only.
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

    /// Apply the term to the flat gradient `g` at `x`; `g_anchor` is the anchor's gradient on the
    /// batch when `anchor_grad ≠ 0` (else unread). The term
    /// `t = prox·(x − anchor) + Σ c_k·v_k + anchor_grad·g_anchor` is summed first, in that order,
    /// then `g ← scale·g + t`; the work goes in blocks that stay in cache.
    pub fn apply(&self, anchor: &[f32], x: &[f32], g_anchor: &[f32], g: &mut [f32], ctx: &Ctx) {
        if self.is_none() {
            return;
        }
        let coefs: Vec<f32> = self.shifts.iter().map(|(c, _)| c.at(ctx)).collect();
        const B: usize = 1024;
        let mut t = [0f32; B];
        for (start, gb) in (0..g.len()).step_by(B).zip(g.chunks_mut(B)) {
            let t = &mut t[..gb.len()];
            let r = start..start + gb.len();
            self.block(anchor, x, g_anchor, &coefs, r, t);
            if self.scale == 1.0 {
                gb.iter_mut().zip(t.iter()).for_each(|(g, t)| *g += t);
            } else {
                let s = self.scale;
                gb.iter_mut()
                    .zip(t.iter())
                    .for_each(|(g, t)| *g = s * *g + t);
            }
        }
    }

    /// The term `t` over the elements `r`.
    fn block(
        &self,
        anchor: &[f32],
        x: &[f32],
        g_anchor: &[f32],
        coefs: &[f32],
        r: Range<usize>,
        t: &mut [f32],
    ) {
        if self.prox != 0.0 {
            let p = self.prox;
            t.iter_mut()
                .zip(x[r.clone()].iter().zip(&anchor[r.clone()]))
                .for_each(|(t, (x, a))| *t = p * (x - a));
        } else {
            t.fill(0.0);
        }
        for (&a, (_, v)) in coefs.iter().zip(&self.shifts) {
            t.iter_mut()
                .zip(&v[r.clone()])
                .for_each(|(t, v)| *t += a * v);
        }
        if self.anchor_grad != 0.0 {
            let a = self.anchor_grad;
            t.iter_mut()
                .zip(&g_anchor[r])
                .for_each(|(t, v)| *t += a * v);
        }
    }
}

/// The term bound to the client's anchor: the first link of the host step's chain. It reads
/// the anchor's batch gradient from the context (`Ctx::aux_grad`).
pub struct TermLink<'a> {
    pub term: Term<'a>,
    pub anchor: &'a [f32],
}

impl Transform for TermLink<'_> {
    fn update(&mut self, u: &mut [f32], x: &[f32], ctx: &Ctx, _log: &mut Log) {
        self.term.apply(self.anchor, x, ctx.aux_grad, u, ctx);
    }
}

/// The term on the training device: its anchor and vectors uploaded once for a client's
/// training, one flat tensor per parameter tensor.
pub struct DeviceTerm {
    scale: f32,
    prox: f32,
    anchor: Vec<Tensor<1>>,
    shifts: Vec<(Coef, Vec<Tensor<1>>)>,
}

/// `v` on the device, split into the parameter tensors' flat pieces (one upload).
fn upload(v: &[f32], ranges: &[Range<usize>], device: &Device) -> Vec<Tensor<1>> {
    let t = Tensor::<1>::from_data(TensorData::new(v.to_vec(), [v.len()]), device).inner();
    ranges
        .iter()
        .map(|r| t.clone().slice([r.clone()]))
        .collect()
}

impl DeviceTerm {
    /// The term on `device`, or None when it reads the anchor's gradient (host step only).
    pub fn new(
        term: &Term,
        anchor: &[f32],
        ranges: &[Range<usize>],
        device: &Device,
    ) -> Option<Self> {
        if term.anchor_grad != 0.0 {
            return None;
        }
        Some(DeviceTerm {
            scale: term.scale,
            prox: term.prox,
            anchor: if term.prox != 0.0 {
                upload(anchor, ranges, device)
            } else {
                Vec::new()
            },
            shifts: term
                .shifts
                .iter()
                .map(|(c, v)| (*c, upload(v, ranges, device)))
                .collect(),
        })
    }

    fn is_none(&self) -> bool {
        self.scale == 1.0 && self.prox == 0.0 && self.shifts.is_empty()
    }
}

impl TensorTransform for DeviceTerm {
    fn update_tensors(&self, s: &mut TensorStep, ctx: &Ctx) {
        if self.is_none() {
            return;
        }
        let coefs: Vec<f32> = self.shifts.iter().map(|(c, _)| c.at(ctx)).collect();
        for (k, (g, xk)) in s.u.iter_mut().zip(s.x).enumerate() {
            let mut t: Option<Tensor<1>> =
                (self.prox != 0.0).then(|| (xk.clone() - self.anchor[k].clone()) * self.prox);
            for (a, (_, v)) in coefs.iter().zip(&self.shifts) {
                let av = v[k].clone() * *a;
                t = Some(match t {
                    Some(t) => t + av,
                    None => av,
                });
            }
            let scaled = if self.scale == 1.0 {
                g.clone()
            } else {
                g.clone() * self.scale
            };
            *g = match t {
                Some(t) => scaled + t,
                None => scaled,
            };
        }
    }
}
