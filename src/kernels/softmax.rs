//! Softmax over the last axis of `f32` rows, with an `exp` that the compiler vectorises: the
//! attention softmax of the transformers, where burn-flex calls libm's scalar `expf` once per
//! score (and its slow underflow path for the many scores far below the row's maximum). The
//! backward pass works from the output, kept by the autodiff node. Each row is computed on its own, in a
//! fixed order: the same bits at any thread count.

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

/// Softmax of each row of `n` values of `x`.
pub fn forward(n: usize, x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    let rows = rows_per_chunk(n);
    for_chunks(threads(), &mut y, rows * n, |i, out| {
        let src = &x[i * rows * n..][..out.len()];
        for (xr, yr) in src.chunks(n).zip(out.chunks_mut(n)) {
            row(xr, yr);
        }
    });
    y
}

/// The gradient of `y = softmax(x)` against `dy`, from `y`: `y ⊙ (dy − Σ dy ⊙ y)` per row.
pub fn backward(n: usize, y: &[f32], dy: &[f32]) -> Vec<f32> {
    let mut dx = vec![0.0f32; y.len()];
    let rows = rows_per_chunk(n);
    for_chunks(threads(), &mut dx, rows * n, |i, out| {
        let at = i * rows * n;
        let (src, d) = (&y[at..][..out.len()], &dy[at..][..out.len()]);
        for ((yr, dr), o) in src.chunks(n).zip(d.chunks(n)).zip(out.chunks_mut(n)) {
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
}
