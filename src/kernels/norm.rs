//! GroupNorm with its affine transform, optionally followed by a ReLU, on NCHW `f32` slices:
//! one pass for the statistics and one for the output, instead of about ten whole-tensor ops.
//! The forward pass returns each block's mean and `1/σ`, which the backward pass reuses.
//! Statistics are accumulated in `f64`; every sum runs in an order fixed by the shapes (same
//! bits at any thread count).

use rayon::prelude::*;

use super::scratch::{threads, worth_parallel};

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

/// Mean and `1/sqrt(var + eps)` of one block (biased variance, two passes).
fn stats(x: &[f32], eps: f64) -> (f32, f32) {
    let m = x.len() as f64;
    let mean = sum_f64(x.iter().map(|&v| v as f64)) / m;
    let var = sum_f64(x.iter().map(|&v| {
        let d = v as f64 - mean;
        d * d
    })) / m;
    (mean as f32, (1.0 / (var + eps).sqrt()) as f32)
}

/// A sum with four running partial sums (the order is fixed by the length).
fn sum_f64(it: impl Iterator<Item = f64>) -> f64 {
    let mut acc = [0f64; 4];
    for (i, v) in it.enumerate() {
        acc[i & 3] += v;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// `(y, stats)`: `stats[2b], stats[2b + 1]` are block `b`'s mean and `1/sqrt(var + eps)`.
pub fn forward(g: &Gn, x: &[f32], gamma: &[f32], beta: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut y = vec![0.0f32; x.len()];
    let mut st = vec![0.0f32; 2 * g.n * g.groups];
    let (bl, cpg, hw) = (g.block(), g.cpg(), g.hw);
    let body = |(b, (out, st)): (usize, (&mut [f32], &mut [f32]))| {
        let src = &x[b * bl..(b + 1) * bl];
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
    let (bl, cpg, hw) = (g.block(), g.cpg(), g.hw);
    // per (sample, channel): Σ dy' and Σ dy'·x̂, where dy' is dy masked by the ReLU
    let mut part = vec![[0f64; 2]; g.n * g.c];
    let body = |(b, (out, sums)): (usize, (&mut [f32], &mut [[f64; 2]]))| {
        let src = &x[b * bl..(b + 1) * bl];
        let d = &dy[b * bl..(b + 1) * bl];
        let (mean, rstd) = (st[2 * b], st[2 * b + 1]);
        let c0 = (b % g.groups) * cpg;
        let (mut s1, mut s2) = (0f64, 0f64);
        for k in 0..cpg {
            let (xi, di) = (&src[k * hw..(k + 1) * hw], &d[k * hw..(k + 1) * hw]);
            let (gk, bk) = (gamma[c0 + k], beta[c0 + k]);
            let (mut sd, mut sdx) = (0f64, 0f64);
            let o = &mut out[k * hw..(k + 1) * hw];
            for ((o, &v), &dv) in o.iter_mut().zip(xi).zip(di) {
                let xh = (v - mean) * rstd;
                let dv = if g.relu && xh * gk + bk <= 0.0 {
                    0.0
                } else {
                    dv
                };
                *o = dv; // the masked dy, reused below
                sd += dv as f64;
                sdx += (dv * xh) as f64;
            }
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
