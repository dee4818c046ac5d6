//! Softmax over the last axis of `f32` rows, with an `exp` that the compiler vectorises: the
//! attention softmax of the transformers, where burn-flex calls libm's scalar `expf` once per
//! score (and its slow underflow path for the many scores far below the row's maximum). The
//! backward pass recomputes the output from the input. Each row is computed on its own, in a
//! fixed order: the same bits at any thread count.

use super::scratch::{for_chunks, threads};

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two so that `x − n·ln 2` is exact for the `n` that occur.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5 · 2²³: adding and subtracting it rounds an `f32` of magnitude below 2²² to an integer.
const ROUND: f32 = 12_582_912.0;

/// `eˣ` within 2 ulp on [−87.3, 88.7], clamped there (so `e^−∞` is about 1e−38, not 0):
/// Cephes' `expf`, range reduction by `n = round(x·log₂e)` and a degree-6 polynomial, with no
/// branch and no call, so a loop of it vectorises.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.336_54, 88.722_83);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    e * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// One row's softmax into `y`.
fn row(x: &[f32], y: &mut [f32]) {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for (o, &v) in y.iter_mut().zip(x) {
        *o = exp(v - m);
    }
    let inv = 1.0 / y.iter().sum::<f32>();
    y.iter_mut().for_each(|o| *o *= inv);
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

/// The gradient of `softmax(x)` against `dy`: `y ⊙ (dy − Σ dy ⊙ y)` per row.
pub fn backward(n: usize, x: &[f32], dy: &[f32]) -> Vec<f32> {
    let mut dx = vec![0.0f32; x.len()];
    let rows = rows_per_chunk(n);
    for_chunks(threads(), &mut dx, rows * n, |i, out| {
        let at = i * rows * n;
        let (src, d) = (&x[at..][..out.len()], &dy[at..][..out.len()]);
        for ((xr, dr), o) in src.chunks(n).zip(d.chunks(n)).zip(out.chunks_mut(n)) {
            row(xr, o);
            let dot: f32 = o.iter().zip(dr).map(|(y, g)| y * g).sum();
            o.iter_mut().zip(dr).for_each(|(y, g)| *y *= g - dot);
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
    fn exp_is_libm_exp_within_two_ulp() {
        let mut worst = 0f32;
        for i in 0..200_000 {
            let x = -87.0 + 175.0 * i as f32 / 200_000.0;
            let (a, b) = (exp(x), x.exp());
            worst = worst.max((a - b).abs() / b);
        }
        assert!(worst < 2.5e-7, "relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NEG_INFINITY) < 1.2e-38 && exp(-1e4) >= 0.0);
    }

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
        let dx = backward(n, &x, &w);
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
