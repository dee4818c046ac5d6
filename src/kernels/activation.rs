//! The LSTM's gate activations, σ and tanh, over `f32` slices with [`super::exp`]'s branch-free
//! functions, and their gradients from the output (σ′ = y(1 − y), tanh′ = 1 − y²), the output
//! kept by the autodiff node. Element by element: the same bits at any thread count.

use super::exp::{sigmoid, tanh};
use super::scratch::{for_chunks, threads};
use super::wide::wide;

/// Elements per parallel task.
const CHUNK: usize = 16_384;

/// `tanh(x)` if `is_tanh`, else `σ(x)`, element by element.
pub fn forward(x: &[f32], is_tanh: bool) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    for_chunks(threads(), &mut y, CHUNK, |i, out| {
        apply(&x[i * CHUNK..][..out.len()], out, is_tanh);
    });
    y
}

wide! {
    /// `out = tanh(x)` or `σ(x)`, element by element.
    fn apply(x: &[f32], out: &mut [f32], is_tanh: bool) {
        if is_tanh {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = tanh(v);
            }
        } else {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = sigmoid(v);
            }
        }
    }
}

wide! {
    /// `out = dy·(1 − y²)` or `dy·y(1 − y)`, element by element.
    fn gradient(y: &[f32], dy: &[f32], out: &mut [f32], is_tanh: bool) {
        for ((o, &y), &g) in out.iter_mut().zip(y).zip(dy) {
            *o = if is_tanh {
                g * (1.0 - y * y)
            } else {
                g * y * (1.0 - y)
            };
        }
    }
}

/// The gradient of `y = forward(x)` against `dy`, from `y`.
pub fn backward(y: &[f32], dy: &[f32], is_tanh: bool) -> Vec<f32> {
    let mut dx = vec![0.0f32; y.len()];
    for_chunks(threads(), &mut dx, CHUNK, |i, out| {
        let at = i * CHUNK;
        gradient(&y[at..][..out.len()], &dy[at..][..out.len()], out, is_tanh);
    });
    dx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradients_are_the_derivatives() {
        let x: Vec<f32> = (0..40_000)
            .map(|i| (i as f32 - 20_000.0) / 2_000.0)
            .collect();
        let dy = vec![1.0f32; x.len()];
        for is_tanh in [false, true] {
            let y = forward(&x, is_tanh);
            let dx = backward(&y, &dy, is_tanh);
            for k in (0..x.len()).step_by(997) {
                let h = 1e-2f64;
                let f = |v: f64| {
                    if is_tanh {
                        v.tanh()
                    } else {
                        1.0 / (1.0 + (-v).exp())
                    }
                };
                let v = x[k] as f64;
                let fd = (f(v + h) - f(v - h)) / (2.0 * h);
                assert!(
                    (fd - dx[k] as f64).abs() < 1e-4,
                    "{is_tanh} {v}: {fd} vs {}",
                    dx[k]
                );
                assert!((y[k] as f64 - f(v)).abs() < 2e-7);
            }
        }
    }
}
