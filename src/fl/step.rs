//! The local optimizer as a chain of small gradient transformations over flat vectors, in the
//! style of optax. The baseline and FedNAR differ only in the order of two links:
//!
//! - baseline: `[clip_by_global_norm(A), add_decayed_weights(wd)]` → `x ← x − l·(clip_A(g) + wd·x)`
//! - FedNAR:   `[add_decayed_weights(wd), clip_by_global_norm(A)]` → `x ← x − l·clip_A(g + wd·x)`
//!
//! followed by the SGD update `x ← x − l·u`. Algorithm terms (FedProx, SCAFFOLD, …) are added
//! to `g` before the chain, so they are clipped with it, as in the official code (§2.2).
//!
//! Each link has two forms with the same meaning: over flat host vectors (the host step) and
//! over the parameter tensors on the training device (the device-resident step,
//! `fl/resident.rs`), where the global norm stays a one-element tensor until the step's one
//! read.

use burn::tensor::Tensor;

/// What one step reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepStats {
    /// Pre-clip global norm of the clipped vector (‖g‖ baseline, ‖g + wd·x‖ FedNAR).
    pub pre_clip_norm: f64,
    /// Whether the step was clipped (pre-clip norm ≥ A).
    pub clipped: bool,
}

pub trait GradTransform: Send + Sync {
    /// Transform the update direction `g` in place, given the current parameters `x`.
    fn apply(&self, x: &[f32], g: &mut [f32], stats: &mut StepStats);
    /// The same on the device: `x` and `g` hold one flat tensor per parameter tensor; a link
    /// that measures a norm leaves it in `norm` (one element, not read here).
    fn apply_tensors(&self, x: &[Tensor<1>], g: &mut [Tensor<1>], norm: &mut Option<Tensor<1>>);
    /// Fill `stats` from the norm that `apply_tensors` left, once read (default: nothing).
    fn read_norm(&self, _norm: f64, _stats: &mut StepStats) {}
}

/// `g ← g + wd·x` (coupled L2 weight decay over all parameters).
pub struct AddDecayedWeights(pub f32);

impl GradTransform for AddDecayedWeights {
    fn apply(&self, x: &[f32], g: &mut [f32], _stats: &mut StepStats) {
        if self.0 != 0.0 {
            let wd = self.0;
            g.iter_mut().zip(x).for_each(|(g, x)| *g += wd * x);
        }
    }

    fn apply_tensors(&self, x: &[Tensor<1>], g: &mut [Tensor<1>], _norm: &mut Option<Tensor<1>>) {
        if self.0 != 0.0 {
            for (g, x) in g.iter_mut().zip(x) {
                *g = g.clone() + x.clone() * self.0;
            }
        }
    }
}

/// Global L2 norm, accumulated in f64 in a fixed order (deterministic at any thread count).
pub fn global_norm(v: &[f32]) -> f64 {
    let mut acc = [0f64; 4];
    let chunks = v.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            acc[k] += c[k] as f64 * c[k] as f64;
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for &r in rest {
        s += r as f64 * r as f64;
    }
    s.sqrt()
}

/// `g ← g·min(1, A/(‖g‖ + 1e-6))` with one norm over all parameters (PyTorch
/// `clip_grad_norm_`). A = 0 disables clipping; the norm is still recorded.
pub struct ClipByGlobalNorm(pub f32);

impl GradTransform for ClipByGlobalNorm {
    fn apply(&self, _x: &[f32], g: &mut [f32], stats: &mut StepStats) {
        let norm = global_norm(g);
        stats.pre_clip_norm = norm;
        if self.0 > 0.0 {
            stats.clipped = norm >= self.0 as f64;
            let coef = (self.0 as f64 / (norm + 1e-6)).min(1.0) as f32;
            if coef < 1.0 {
                g.iter_mut().for_each(|v| *v *= coef);
            }
        }
    }

    fn apply_tensors(&self, _x: &[Tensor<1>], g: &mut [Tensor<1>], norm: &mut Option<Tensor<1>>) {
        let sq = g
            .iter()
            .map(|g| (g.clone() * g.clone()).sum())
            .reduce(|a, b| a + b);
        let Some(n) = sq.map(|s| s.sqrt()) else {
            return;
        };
        *norm = Some(n.clone());
        if self.0 > 0.0 {
            // min(1, A/(‖g‖ + 1e-6)), broadcast over each tensor
            let coef = (n + 1e-6).recip().mul_scalar(self.0).clamp_max(1.0);
            for g in g.iter_mut() {
                *g = g.clone() * coef.clone();
            }
        }
    }

    fn read_norm(&self, norm: f64, stats: &mut StepStats) {
        stats.pre_clip_norm = norm;
        stats.clipped = self.0 > 0.0 && norm >= self.0 as f64;
    }
}

/// The local optimizer: a chain of transforms, then SGD.
pub struct LocalOptimizer {
    pub chain: Vec<Box<dyn GradTransform>>,
}

impl LocalOptimizer {
    /// The baseline (`nar = false`) or FedNAR chain for weight decay `wd` and clip `max_norm`.
    pub fn sgd(wd: f64, max_norm: f64, nar: bool) -> Self {
        let clip: Box<dyn GradTransform> = Box::new(ClipByGlobalNorm(max_norm as f32));
        let decay: Box<dyn GradTransform> = Box::new(AddDecayedWeights(wd as f32));
        let chain = if nar {
            vec![decay, clip]
        } else {
            vec![clip, decay]
        };
        LocalOptimizer { chain }
    }

    /// One step: transform `g` through the chain and apply `x ← x − lr·g`.
    pub fn step(&self, lr: f32, x: &mut [f32], g: &mut [f32]) -> StepStats {
        let stats = self.transform(x, g);
        x.iter_mut().zip(g.iter()).for_each(|(x, g)| *x -= lr * g);
        stats
    }

    /// The chain on the device, then SGD: `x ← x − lr·chain(g)` for each parameter tensor.
    /// Returns the pre-clip norm as a one-element tensor (read by the caller with the loss).
    pub fn step_tensors(
        &self,
        lr: f32,
        x: &mut [Tensor<1>],
        g: &mut [Tensor<1>],
    ) -> Option<Tensor<1>> {
        let mut norm = None;
        for t in &self.chain {
            t.apply_tensors(x, g, &mut norm);
        }
        for (x, g) in x.iter_mut().zip(g.iter()) {
            *x = x.clone() - g.clone() * lr;
        }
        norm
    }

    /// The statistics of a device step whose norm (from `step_tensors`) was read as `norm`.
    pub fn read_norm(&self, norm: f64) -> StepStats {
        let mut stats = StepStats::default();
        for t in &self.chain {
            t.read_norm(norm, &mut stats);
        }
        stats
    }

    /// The chain alone: transform `g` in place (for a stateful rule that takes over the step).
    pub fn transform(&self, x: &[f32], g: &mut [f32]) -> StepStats {
        let mut stats = StepStats::default();
        for t in &self.chain {
            t.apply(x, g, &mut stats);
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_clips_then_decays() {
        // g = (30, 40): ‖g‖ = 50 > A = 5 → clip to (3, 4); then + wd·x
        let opt = LocalOptimizer::sgd(0.5, 5.0, false);
        let mut x = vec![2.0, -2.0];
        let mut g = vec![30.0, 40.0];
        let s = opt.step(0.1, &mut x, &mut g);
        assert!(s.clipped);
        assert!((s.pre_clip_norm - 50.0).abs() < 1e-9);
        let c = 5.0 / (50.0 + 1e-6);
        assert!((x[0] - (2.0 - 0.1 * (30.0 * c + 1.0)) as f32).abs() < 1e-6);
        assert!((x[1] - (-2.0 - 0.1 * (40.0 * c - 1.0)) as f32).abs() < 1e-6);
    }

    #[test]
    fn nar_step_norm_is_lr_times_a() {
        let opt = LocalOptimizer::sgd(0.5, 5.0, true);
        let x0 = vec![2.0f32, -2.0];
        let mut x = x0.clone();
        let mut g = vec![30.0, 40.0];
        let s = opt.step(0.1, &mut x, &mut g);
        // pre-clip norm is that of g + wd·x = (31, 39)
        assert!((s.pre_clip_norm - (31.0f64.powi(2) + 39.0f64.powi(2)).sqrt()).abs() < 1e-5);
        let step: Vec<f32> = x.iter().zip(&x0).map(|(a, b)| a - b).collect();
        assert!(
            (global_norm(&step) - 0.5).abs() < 1e-5,
            "step norm {}",
            global_norm(&step)
        );
    }

    #[test]
    fn nar_with_huge_a_equals_baseline() {
        let x0 = vec![1.0f32, -3.0, 0.25];
        let g0 = vec![0.5f32, 2.0, -1.0];
        let run = |nar| {
            let mut x = x0.clone();
            let mut g = g0.clone();
            LocalOptimizer::sgd(0.01, 1e9, nar).step(0.1, &mut x, &mut g);
            x
        };
        assert_eq!(run(true), run(false));
    }
}
