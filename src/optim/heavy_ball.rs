//! Local heavy-ball momentum (`local.momentum`) over K clients' rows: `b ← β·b + u`, `u ← b`,
//! PyTorch's `SGD(momentum=β)` (no dampening, no Nesterov: its first step's buffer is the
//! update itself, as `β·0 + u` is here). b starts at 0 with each training: a new optimizer every
//! round, as MOON's code makes one.

use std::ops::Range;

use burn::tensor::{Device, Tensor};

use super::buffers::{Buf, Buffers, host};
use super::rows::set_rows;
use super::transform::{TensorStep, TensorTransform};

pub struct HeavyBall {
    beta: f32,
    b: Vec<Tensor<2>>,
}

impl HeavyBall {
    /// β's link over K rows of the parameter tensors at `ranges`, its buffer at 0.
    pub fn new(beta: f32, k: usize, ranges: &[Range<usize>], device: &Device) -> Self {
        let device = device.clone().without_autodiff();
        let b = ranges
            .iter()
            .map(|r| Tensor::<2>::zeros([k, r.len()], &device))
            .collect();
        HeavyBall { beta, b }
    }
}

impl TensorTransform for HeavyBall {
    fn update_tensors(&mut self, s: &mut TensorStep) {
        for (u, b) in s.u.iter_mut().zip(&mut self.b) {
            // a new tensor for u: b keeps its own buffer, written in place in the rows that step
            let next = b.clone().mul_scalar(self.beta) + u.clone();
            set_rows(b, next.clone(), &s.active);
            *u = next;
        }
    }

    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        out.extend([Buf::Host(6), host(f64::from(self.beta))]);
        self.b.buffers(out);
    }
}
