//! GroupNorm with its affine transform, optionally followed by a ReLU, on NCHW `f32` slices:
//! one pass for the statistics and one for the output, instead of about ten whole-tensor ops.
//! The forward pass returns each block's mean and `1/σ`, which the backward pass reuses.
//!
//! Statistics are accumulated in `f64`, in [`LANES`] running sums per sum (lane `j` takes
//! elements `j`, `j + LANES`, …), joined pairwise at the end: an order fixed by the shapes (the
//! same bits at any thread count) whose independent chains the compiler turns into vector
//! additions. Each block runs compiled for the widest vectors the CPU has ([`wide!`]).

use rayon::prelude::*;

use super::scratch::{threads, worth_parallel};
use super::wide::wide;

/// Input `[n, c, hw]` (hw = all spatial positions) in `groups` groups of channels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gn {
    pub n: usize,
    pub c: usize,
    pub hw: usize,
    pub groups: usize,
    pub eps: f64,
    /// Apply `max(0, ·)` to the output.
    pub relu: bool,
}

impl Gn {
    fn cpg(&self) -> usize {
        self.c / self.groups
    }
    /// Elements of one (sample, group) block.
    fn block(&self) -> usize {
        self.cpg() * self.hw
    }
}

/// Running sums per accumulated quantity.
const LANES: usize = 16;

/// The lanes' total, joined pairwise (lane `j` with lane `j + w/2`, halving `w`).
#[inline(always)]
fn join(mut acc: [f64; LANES]) -> f64 {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for j in 0..w {
            acc[j] += acc[j + w];
        }
    }
    acc[0]
}

/// `Σ f(v)` over `x`, in lanes.
#[inline(always)]
fn lane_sum(x: &[f32], f: impl Fn(f32) -> f64) -> f64 {
    let mut acc = [0f64; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v);
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += f(v);
    }
    join(acc)
}

/// Mean and `1/sqrt(var + eps)` of one block (biased variance, two passes).
#[inline(always)]
fn stats(x: &[f32], eps: f64) -> (f32, f32) {
    let m = x.len() as f64;
    let mean = lane_sum(x, |v| v as f64) / m;
    let var = lane_sum(x, |v| {
        let d = v as f64 - mean;
        d * d
    }) / m;
    (mean as f32, (1.0 / (var + eps).sqrt()) as f32)
}

wide! {
    /// Block `b`'s output into `out` and its mean and `1/σ` into `st`.
    fn forward_block(g: &Gn, b: usize, src: &[f32], gamma: &[f32], beta: &[f32], out: &mut [f32], st: &mut [f32]) {
        let (cpg, hw) = (g.cpg(), g.hw);
        let (mean, rstd) = stats(src, g.eps);
        st.copy_from_slice(&[mean, rstd]);
        let c0 = (b % g.groups) * cpg;
        for k in 0..cpg {
            let a = rstd * gamma[c0 + k];
            let s = beta[c0 + k] - mean * a;
            let (xi, yo) = (&src[k * hw..(k + 1) * hw], &mut out[k * hw..(k + 1) * hw]);
            if g.relu {
                yo.iter_mut()
                    .zip(xi)
                    .for_each(|(o, &v)| *o = (v * a + s).max(0.0));
            } else {
                yo.iter_mut().zip(xi).for_each(|(o, &v)| *o = v * a + s);
            }
        }
    }
}

/// `(y, stats)`: `stats[2b], stats[2b + 1]` are block `b`'s mean and `1/sqrt(var + eps)`.
pub fn forward(g: &Gn, x: &[f32], gamma: &[f32], beta: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut y = vec![0.0f32; x.len()];
    let mut st = vec![0.0f32; 2 * g.n * g.groups];
    let bl = g.block();
    let body = |(b, (out, st)): (usize, (&mut [f32], &mut [f32]))| {
        forward_block(g, b, &x[b * bl..(b + 1) * bl], gamma, beta, out, st)
    };
    if worth_parallel(threads(), x.len()) {
        y.par_chunks_mut(bl)
            .zip(st.par_chunks_mut(2))
            .enumerate()
            .for_each(body);
    } else {
        y.chunks_mut(bl)
            .zip(st.chunks_mut(2))
            .enumerate()
            .for_each(body);
    }
    (y, st)
}

/// One channel's `(Σ dy', Σ dy'·x̂)`, where `dy'` is `dy` masked by the ReLU (`x̂ γ + β ≤ 0`
/// gives 0); `dy'` is written to `o`.
#[inline(always)]
fn masked_sums(xi: &[f32], di: &[f32], o: &mut [f32], norm: [f32; 4], relu: bool) -> (f64, f64) {
    let [mean, rstd, gk, bk] = norm;
    let one = |o: &mut f32, v: f32, dv: f32| {
        let xh = (v - mean) * rstd;
        let dv = if relu && xh * gk + bk <= 0.0 { 0.0 } else { dv };
        *o = dv;
        (dv as f64, (dv * xh) as f64)
    };
    let (mut sd, mut sdx) = ([0f64; LANES], [0f64; LANES]);
    let mut os = o.chunks_exact_mut(LANES);
    let (mut xs, mut ds) = (xi.chunks_exact(LANES), di.chunks_exact(LANES));
    for ((oc, xc), dc) in (&mut os).zip(&mut xs).zip(&mut ds) {
        for j in 0..LANES {
            let (a, b) = one(&mut oc[j], xc[j], dc[j]);
            sd[j] += a;
            sdx[j] += b;
        }
    }
    let tail = os
        .into_remainder()
        .iter_mut()
        .zip(xs.remainder())
        .zip(ds.remainder());
    for (j, ((o, &v), &dv)) in tail.enumerate() {
        let (a, b) = one(o, v, dv);
        sd[j] += a;
        sdx[j] += b;
    }
    (join(sd), join(sdx))
}

/// The affine parameters and the forward's statistics, shared by every block.
#[derive(Clone, Copy)]
struct Params<'a> {
    gamma: &'a [f32],
    beta: &'a [f32],
    st: &'a [f32],
}

wide! {
    /// Block `b`'s `dx` into `out` and its channels' `[Σ dy', Σ dy'·x̂]` into `sums`.
    fn backward_block(g: &Gn, b: usize, src: &[f32], d: &[f32], p: Params<'_>, out: &mut [f32], sums: &mut [[f64; 2]]) {
        let Params { gamma, beta, st } = p;
        let (bl, cpg, hw) = (g.block(), g.cpg(), g.hw);
        let (mean, rstd) = (st[2 * b], st[2 * b + 1]);
        let c0 = (b % g.groups) * cpg;
        let (mut s1, mut s2) = (0f64, 0f64);
        for k in 0..cpg {
            let r = k * hw..(k + 1) * hw;
            let (gk, bk) = (gamma[c0 + k], beta[c0 + k]);
            let nrm = [mean, rstd, gk, bk];
            let (sd, sdx) = masked_sums(&src[r.clone()], &d[r.clone()], &mut out[r], nrm, g.relu);
            sums[k] = [sd, sdx];
            s1 += gk as f64 * sd;
            s2 += gk as f64 * sdx;
        }
        let m = bl as f64;
        let (r, mf) = (rstd as f64, mean as f64);
        let bcoef = (-r * r * s2 / m) as f32;
        let ccoef = (-r * s1 / m + mf * r * r * s2 / m) as f32;
        for k in 0..cpg {
            let a = rstd * gamma[c0 + k];
            let xi = &src[k * hw..(k + 1) * hw];
            out[k * hw..(k + 1) * hw]
                .iter_mut()
                .zip(xi)
                .for_each(|(o, &v)| *o = a * *o + bcoef * v + ccoef);
        }
    }
}

/// `(dx, dgamma, dbeta)`, with `st` the forward's statistics.
pub fn backward(
    g: &Gn,
    x: &[f32],
    st: &[f32],
    gamma: &[f32],
    beta: &[f32],
    dy: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut dx = vec![0.0f32; x.len()];
    let (bl, cpg) = (g.block(), g.cpg());
    // per (sample, channel): Σ dy' and Σ dy'·x̂
    let mut part = vec![[0f64; 2]; g.n * g.c];
    let p = Params { gamma, beta, st };
    let body = |(b, (out, sums)): (usize, (&mut [f32], &mut [[f64; 2]]))| {
        let r = b * bl..(b + 1) * bl;
        backward_block(g, b, &x[r.clone()], &dy[r], p, out, sums)
    };
    if worth_parallel(threads(), x.len()) {
        dx.par_chunks_mut(bl)
            .zip(part.par_chunks_mut(cpg))
            .enumerate()
            .for_each(body);
    } else {
        dx.chunks_mut(bl)
            .zip(part.chunks_mut(cpg))
            .enumerate()
            .for_each(body);
    }
    let mut dgamma = vec![0f64; g.c];
    let mut dbeta = vec![0f64; g.c];
    for i in 0..g.n {
        for c in 0..g.c {
            let [sd, sdx] = part[i * g.c + c];
            dbeta[c] += sd;
            dgamma[c] += sdx;
        }
    }
    (
        dx,
        dgamma.into_iter().map(|v| v as f32).collect(),
        dbeta.into_iter().map(|v| v as f32).collect(),
    )
}
