//! A dense layer `y = x·W + b` for a batch of few rows against a large weight (FEMNIST's
//! 3136 × 2048, 26 MB): gemm's kernels run along the destination's columns, so with `y` and the
//! input gradient computed column-major the gemm crate reads `W` in place, where burn's
//! row-major products repack the whole weight on every call (a fifth of FEMNIST's step). The
//! results are transposed back (a few hundred kB); the weight's gradient `xᵀ·dy` is an ordinary
//! product. The gemms split their output, never their sums: the same bits at any thread count.

use super::gemm::{View, matmul, matmul_col_major};
use super::scratch::{gather, threads};

/// The largest batch for which [`forward`] applies: above `2·MR` rows (128 for AVX-512's
/// microkernel) the gemm crate packs the weight anyway.
pub const MAX_ROWS: usize = 128;

/// The sizes: `m` rows of `k` inputs, `n` outputs.
#[derive(Clone, Copy, Debug)]
pub struct Dense {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// `x·w + b` (`x` `[m, k]`, `w` `[k, n]`, `b` `[n]`, row-major), row-major `[m, n]`.
pub fn forward(d: &Dense, x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let Dense { m, k, n } = *d;
    // column-major y: column j starts as b[j], then + x·w
    let mut ycm = vec![0.0f32; m * n];
    for (col, &bj) in ycm.chunks_mut(m.max(1)).zip(b) {
        col.fill(bj);
    }
    let (xv, wv) = (View::rows(x, k), View::rows(w, n));
    matmul_col_major([m, n, k], (&mut ycm, m), true, (xv, wv), threads());
    let mut y = vec![0.0f32; m * n];
    gather(&mut y, &ycm, m, m, n);
    y
}

/// `(dL/dx, dL/dw, dL/db)` of [`forward`] against `dy` (`[m, n]`).
pub fn backward(d: &Dense, x: &[f32], w: &[f32], dy: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let Dense { m, k, n } = *d;
    // dx = dy·wᵀ, column-major, wᵀ read in place along w's rows
    let mut dxcm = vec![0.0f32; m * k];
    let (dyv, wt) = (View::rows(dy, n), View::transposed(w, n));
    matmul_col_major([m, k, n], (&mut dxcm, m), false, (dyv, wt), threads());
    let mut dx = vec![0.0f32; m * k];
    gather(&mut dx, &dxcm, m, m, k);
    let mut dw = vec![0.0f32; k * n];
    matmul(
        k,
        n,
        m,
        &mut dw,
        n,
        false,
        View::transposed(x, k),
        dyv,
        threads(),
    );
    let mut db = vec![0.0f32; n];
    for row in dy.chunks(n.max(1)) {
        db.iter_mut().zip(row).for_each(|(a, &v)| *a += v);
    }
    (dx, dw, db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_naive_products() {
        let d = Dense { m: 7, k: 13, n: 5 };
        let f = |i: usize, s: f32| ((i * 7919 % 101) as f32 / 101.0 - 0.5) * s;
        let x: Vec<f32> = (0..d.m * d.k).map(|i| f(i, 2.0)).collect();
        let w: Vec<f32> = (0..d.k * d.n).map(|i| f(i + 3, 1.0)).collect();
        let b: Vec<f32> = (0..d.n).map(|i| f(i + 5, 1.0)).collect();
        let dy: Vec<f32> = (0..d.m * d.n).map(|i| f(i + 11, 1.0)).collect();
        let y = forward(&d, &x, &w, &b);
        let (dx, dw, db) = backward(&d, &x, &w, &dy);
        let close = |a: f32, b: f64| (a as f64 - b).abs() < 1e-5;
        for r in 0..d.m {
            for j in 0..d.n {
                let v: f64 = (0..d.k)
                    .map(|q| x[r * d.k + q] as f64 * w[q * d.n + j] as f64)
                    .sum();
                assert!(close(y[r * d.n + j], v + b[j] as f64));
            }
            for q in 0..d.k {
                let v: f64 = (0..d.n)
                    .map(|j| dy[r * d.n + j] as f64 * w[q * d.n + j] as f64)
                    .sum();
                assert!(close(dx[r * d.k + q], v));
            }
        }
        for q in 0..d.k {
            for j in 0..d.n {
                let v: f64 = (0..d.m)
                    .map(|r| x[r * d.k + q] as f64 * dy[r * d.n + j] as f64)
                    .sum();
                assert!(close(dw[q * d.n + j], v));
            }
        }
        for j in 0..d.n {
            let v: f64 = (0..d.m).map(|r| dy[r * d.n + j] as f64).sum();
            assert!(close(db[j], v));
        }
    }
}
