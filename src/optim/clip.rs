//! `clip_by_global_norm`: `u ← u·min(1, A/(‖u‖ + 1e-6))`, one norm over all parameters
//! (PyTorch's `clip_grad_norm_`). A = 0 disables clipping; the norm is still recorded.

use super::rows::row_sums;
use super::transform::{Log, TensorStep, TensorTransform};

pub struct ClipByGlobalNorm(pub f32);

impl TensorTransform for ClipByGlobalNorm {
    fn buffers<'a>(&'a mut self, out: &mut Vec<super::buffers::Buf<'a>>) {
        out.extend([
            super::buffers::Buf::Host(1),
            super::buffers::host(f64::from(self.0)),
        ]);
    }

    fn update_tensors(&mut self, s: &mut TensorStep) {
        // each row's sum of squares over every tensor, `[K, 1]`, in pieces: an f32 sum over
        // millions of elements in one run loses digits
        let sq =
            s.u.iter()
                .map(|g| row_sums(g.clone() * g.clone()))
                .reduce(|a, b| a + b);
        let Some(n) = sq.map(|s| s.sqrt()) else {
            return;
        };
        s.norm = Some(n.clone());
        if self.0 > 0.0 {
            // min(1, A/(‖u‖ + 1e-6)) of each row, broadcast over its tensors
            let coef = (n + 1e-6).recip().mul_scalar(self.0).clamp_max(1.0);
            for g in s.u.iter_mut() {
                // in place (the update's own buffer, no allocation on flex)
                g.inplace(|g| g * coef.clone());
            }
        }
    }

    fn read_norm(&self, norm: f64, log: &mut Log) {
        log.pre_clip_norm = norm;
        log.clipped = self.0 > 0.0 && norm >= self.0 as f64;
    }
}
