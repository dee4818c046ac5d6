//! How a transformed update moves the parameters.

use std::ops::Range;

use burn::tensor::Tensor;

use super::norm::global_norm;

/// The last step of a local optimizer.
#[derive(Clone, Debug, PartialEq)]
pub enum Descent {
    /// `x ← x − l·u`.
    Sgd,
    /// Per parameter tensor ℓ: `x_ℓ ← x_ℓ − (l·r_ℓ)·u_ℓ` with LAMB's trust ratio
    /// `r_ℓ = ‖x_ℓ‖/‖u_ℓ‖` (a per-tensor learning rate; `on_zero` where either norm is 0: 1 as
    /// LAMB implementations have it, 0 for the Fed-LAMB paper's literal φ(0) = 0).
    TrustRatio {
        tensors: Vec<Range<usize>>,
        on_zero: f64,
    },
}

impl Descent {
    /// Move `x` by `u` at learning rate `lr`.
    pub fn apply(&self, lr: f32, x: &mut [f32], u: &[f32]) {
        match self {
            Descent::Sgd => x.iter_mut().zip(u.iter()).for_each(|(x, u)| *x -= lr * u),
            Descent::TrustRatio { tensors, on_zero } => {
                for r in tensors {
                    let (xs, us) = (&mut x[r.clone()], &u[r.clone()]);
                    let (xn, un) = (global_norm(xs), global_norm(us));
                    let ratio = if xn > 0.0 && un > 0.0 {
                        xn / un
                    } else {
                        *on_zero
                    };
                    let s = (lr as f64 * ratio) as f32;
                    xs.iter_mut().zip(us.iter()).for_each(|(x, u)| *x -= s * u);
                }
            }
        }
    }

    /// The same on device tensors (SGD only: the caller keeps a trust-ratio step on the host).
    pub fn apply_tensors(lr: f32, x: &mut [Tensor<1>], u: &[Tensor<1>]) {
        for (x, u) in x.iter_mut().zip(u.iter()) {
            *x = x.clone() - u.clone() * lr;
        }
    }
}
