//! Softmax over the last axis of `f32` rows, with an `exp` that the compiler vectorises: the
//! attention softmax of the transformers, where burn-flex calls libm's scalar `expf` once per
//! score (and its slow underflow path for the many scores far below the row's maximum). The
//! backward pass works from the output, kept by the autodiff node. Each row is computed on its own, in a
//! fixed order: the same bits at any thread count.
//!
//! A row's maximum, sum and dot product are sequential chains (element 0, then 1, …: the order
//! that fixes the bits), each step waiting for the last. [`LANES`] rows therefore run side by
//! side, each chain in its own order, so that the chains overlap: the bits of one row at a
//! time, in a fraction of the time.

use super::exp::exp;
use super::scratch::{for_chunks, threads};
use super::wide::wide;

wide! {
    /// One row's softmax into `y`.
    fn row(x: &[f32], y: &mut [f32]) {
        let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for (o, &v) in y.iter_mut().zip(x) {
            *o = exp(v - m);
        }
        let inv = 1.0 / y.iter().sum::<f32>();
        for o in y.iter_mut() {
            *o *= inv;
        }
    }
}

wide! {
    /// One row's gradient into `o`, from its output `y` and `dy`.
    fn row_backward(y: &[f32], dy: &[f32], o: &mut [f32]) {
        o.copy_from_slice(y);
        let dot: f32 = o.iter().zip(dy).map(|(y, g)| y * g).sum();
        for (y, g) in o.iter_mut().zip(dy) {
            *y *= g - dot;
        }
    }
}

/// Rows computed side by side by [`rows`] and [`rows_backward`].
const LANES: usize = 8;

/// The `LANES` rows of `n` values of `x`.
fn split(x: &[f32], n: usize) -> [&[f32]; LANES] {
    std::array::from_fn(|j| &x[j * n..][..n])
}

wide! {
    /// `LANES` rows' softmax into `y`: per row the arithmetic of [`row`], in its order.
    fn rows(n: usize, x: &[f32], y: &mut [f32]) {
        let xs = split(x, n);
        let mut m = [f32::NEG_INFINITY; LANES];
        for k in 0..n {
            for (mj, xj) in m.iter_mut().zip(&xs) {
                *mj = mj.max(xj[k]);
            }
        }
        for ((yr, xr), mj) in y.chunks_exact_mut(n).zip(&xs).zip(&m) {
            for (o, &v) in yr.iter_mut().zip(*xr) {
                *o = exp(v - mj);
            }
        }
        // `Iterator::sum` of f32 starts from −0.0
        let mut sum = [-0.0f32; LANES];
        let ys = split(y, n);
        for k in 0..n {
            for (sj, yj) in sum.iter_mut().zip(&ys) {
                *sj += yj[k];
            }
        }
        for (yr, sj) in y.chunks_exact_mut(n).zip(&sum) {
            let inv = 1.0 / sj;
            for o in yr {
                *o *= inv;
            }
        }
    }
}

wide! {
    /// `LANES` rows' gradients into `o`: per row the arithmetic of [`row_backward`], in its order.
    fn rows_backward(n: usize, y: &[f32], dy: &[f32], o: &mut [f32]) {
        let (ys, gs) = (split(y, n), split(dy, n));
        let mut dot = [-0.0f32; LANES];
        for k in 0..n {
            for ((dj, yj), gj) in dot.iter_mut().zip(&ys).zip(&gs) {
                *dj += yj[k] * gj[k];
            }
        }
        for (((or, yr), gr), dj) in o.chunks_exact_mut(n).zip(&ys).zip(&gs).zip(&dot) {
            for ((v, &y), &g) in or.iter_mut().zip(*yr).zip(*gr) {
                *v = y * (g - dj);
            }
        }
    }
}

/// Softmax of each row of `n` values of `x`.
pub fn forward(n: usize, x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    let per = rows_per_chunk(n);
    for_chunks(threads(), &mut y, per * n, |i, out| {
        let src = &x[i * per * n..][..out.len()];
        let g = LANES * n;
        let done = src.len() / g * g;
        for (xg, yg) in src.chunks_exact(g).zip(out.chunks_exact_mut(g)) {
            rows(n, xg, yg);
        }
        for (xr, yr) in src[done..].chunks(n).zip(out[done..].chunks_mut(n)) {
            row(xr, yr);
        }
    });
    y
}

/// The gradient of `y = softmax(x)` against `dy`, from `y`: `y ⊙ (dy − Σ dy ⊙ y)` per row.
pub fn backward(n: usize, y: &[f32], dy: &[f32]) -> Vec<f32> {
    let mut dx = vec![0.0f32; y.len()];
    let per = rows_per_chunk(n);
    for_chunks(threads(), &mut dx, per * n, |i, out| {
        let at = i * per * n;
        let (src, d) = (&y[at..][..out.len()], &dy[at..][..out.len()]);
        let g = LANES * n;
        let done = src.len() / g * g;
        for ((yg, dg), og) in src
            .chunks_exact(g)
            .zip(d.chunks_exact(g))
            .zip(out.chunks_exact_mut(g))
        {
            rows_backward(n, yg, dg, og);
        }
        for ((yr, dr), o) in src[done..]
            .chunks(n)
            .zip(d[done..].chunks(n))
            .zip(out[done..].chunks_mut(n))
        {
            row_backward(yr, dr, o);
        }
    });
    dx
}

/// Rows per parallel task: about 16k values.
fn rows_per_chunk(n: usize) -> usize {
    (16_384 / n.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_rows_and_gradient() {
        let n = 7;
        let x: Vec<f32> = (0..3 * n)
            .map(|i| ((i * 37 % 11) as f32 - 5.0) * 0.7)
            .collect();
        let y = forward(n, &x);
        for r in 0..3 {
            let xr = &x[r * n..(r + 1) * n];
            let m = xr.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let s: f32 = xr.iter().map(|v| (v - m).exp()).sum();
            for j in 0..n {
                let want = (xr[j] - m).exp() / s;
                assert!((y[r * n + j] - want).abs() < 1e-6);
            }
        }
        // the gradient against finite differences of L = Σ w ⊙ softmax(x)
        let w: Vec<f32> = (0..3 * n).map(|i| (i % 5) as f32 - 2.0).collect();
        let dx = backward(n, &y, &w);
        let loss = |x: &[f32]| -> f64 {
            forward(n, x)
                .iter()
                .zip(&w)
                .map(|(a, b)| (a * b) as f64)
                .sum()
        };
        for k in [0, 5, 9, 20] {
            let (mut p, mut m) = (x.clone(), x.clone());
            p[k] += 1e-2;
            m[k] -= 1e-2;
            let fd = (loss(&p) - loss(&m)) / 2e-2;
            assert!((fd - dx[k] as f64).abs() < 1e-3, "{k}: {fd} vs {}", dx[k]);
        }
    }

    /// Rows side by side give each row's bits from the one-row code (signed zeros included).
    #[test]
    fn rows_side_by_side_equal_one_row_at_a_time_bitwise() {
        for n in [1, 7, 80] {
            let count = 2 * LANES + 3;
            let x: Vec<f32> = (0..count * n)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 0.013)
                .collect();
            let dy: Vec<f32> = (0..count * n)
                .map(|i| match i % 5 {
                    0 => -0.0,
                    1 => 0.0,
                    _ => ((i * 104_729 % 97) as f32 - 48.0) * 0.03,
                })
                .collect();
            let (y, dx) = (forward(n, &x), backward(n, &forward(n, &x), &dy));
            for r in 0..count {
                let at = r * n..(r + 1) * n;
                let (mut y1, mut dx1) = (vec![0.0; n], vec![0.0; n]);
                row(&x[at.clone()], &mut y1);
                row_backward(&y[at.clone()], &dy[at.clone()], &mut dx1);
                let bits = |v: &[f32]| v.iter().map(|a| a.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y[at.clone()]), bits(&y1), "n {n}, row {r}");
                assert_eq!(bits(&dx[at]), bits(&dx1), "n {n}, row {r} (backward)");
            }
        }
    }
}
