//! The moving-average moment update, written once, in f32 or f64: `a ← β·a + (1−β)·x` for a
//! first moment and `a ← β·a + (1−β)·g·g` for a second; and AMSGrad's second moment of the
//! server, `v` and `v̂ = max(v̂, v)` (Fed-LAMB, Mime-LAMB and both forms of Mime keep one).

use num_traits::Float;

/// `β·a + (1−β)·x`.
#[inline]
pub fn ema<F: Float>(beta: F, a: F, x: F) -> F {
    beta * a + (F::one() - beta) * x
}

/// `β·a + (1−β)·g·g`.
#[inline]
pub fn ema_sq<F: Float>(beta: F, a: F, g: F) -> F {
    beta * a + (F::one() - beta) * g * g
}

/// The fraction of `vhat`'s coordinates at the floor `eps` (v̂ starts at ε and only grows).
pub fn fraction_at_floor(vhat: &[f32], eps: f32) -> f64 {
    let n = vhat.iter().filter(|&&v| v <= eps).count();
    n as f64 / vhat.len().max(1) as f64
}

/// AMSGrad's second moment on the server: `v` (0 at start) and `v̂` (ε at start, never lower).
pub struct SecondMoment {
    beta2: f64,
    eps: f32,
    v: Vec<f32>,
    vhat: Vec<f32>,
}

impl SecondMoment {
    pub fn new(beta2: f64, eps: f64, dim: usize) -> Self {
        SecondMoment {
            beta2,
            eps: eps as f32,
            v: vec![0.0; dim],
            vhat: vec![eps as f32; dim],
        }
    }

    /// `v̂ ← max(v̂, x)` (the clients' mean v_i).
    pub fn raise(&mut self, x: impl Iterator<Item = f32>) {
        self.vhat.iter_mut().zip(x).for_each(|(h, x)| *h = h.max(x));
    }

    /// `v ← β2·v + (1−β2)·g²`, `v̂ ← max(v̂, v)`, computed in `F`'s precision.
    pub fn step<F: Float>(&mut self, g: impl Iterator<Item = F>) {
        let b2 = F::from(self.beta2).unwrap_or_else(F::zero);
        for ((v, h), g) in self.v.iter_mut().zip(&mut self.vhat).zip(g) {
            let next = ema_sq(b2, F::from(*v).unwrap_or_else(F::nan), g);
            *v = next.to_f32().unwrap_or(f32::NAN);
            *h = h.max(*v);
        }
    }

    pub fn vhat(&self) -> &[f32] {
        &self.vhat
    }

    /// `1/√v̂`.
    pub fn inv_sqrt(&self) -> Vec<f32> {
        self.vhat.iter().map(|v| 1.0 / v.sqrt()).collect()
    }

    /// The fraction of v̂'s coordinates at its floor ε.
    pub fn at_floor(&self) -> f64 {
        fraction_at_floor(&self.vhat, self.eps)
    }

    /// `v` and `v̂`, for a checkpoint.
    pub fn vectors(&mut self) -> (&mut Vec<f32>, &mut Vec<f32>) {
        (&mut self.v, &mut self.vhat)
    }
}
