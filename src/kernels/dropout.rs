//! Dropout from a counter-based hash: element `i` of a call is kept iff `hash(seed, i)` falls
//! below `(1 − p)·2³²`, and kept values are scaled by `1/(1 − p)`, as burn's `Dropout` does.
//! burn draws one Bernoulli sample per element from its process-wide ChaCha generator, one
//! element at a time (a quarter of the FedNAR transformer's step); here the call draws one
//! 64-bit seed from that generator and the mask is a pure function of the seed and the index,
//! so it vectorises ([`wide!`]), splits over threads without changing a bit, and the backward
//! pass recomputes it from the seed instead of keeping it.

use super::scratch::{for_chunks, threads};
use super::wide::wide;

/// Elements per parallel task.
const CHUNK: usize = 16_384;

/// One call's mask: the seed's two halves, the keep threshold and the scale of kept values.
#[derive(Clone, Copy, Debug)]
pub struct Mask {
    lo: u32,
    hi: u32,
    threshold: u32,
    scale: f32,
}

impl Mask {
    /// The mask of drop probability `prob` (in (0, 1)) for `seed`.
    pub fn new(seed: u64, prob: f64) -> Self {
        Mask {
            lo: seed as u32,
            hi: (seed >> 32) as u32,
            // saturating: a keep probability of 1 keeps every element
            threshold: ((1.0 - prob) * 4_294_967_296.0) as u32,
            scale: (1.0 / (1.0 - prob)) as f32,
        }
    }
}

impl Mask {
    /// The keep threshold: element `i` is kept iff its hash is below it.
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// The value of a kept element of the mask, `1/(1 − p)`.
    pub fn scale(&self) -> f32 {
        self.scale
    }
}

/// A 32-bit integer hash with good avalanche (Wellons' "lowbias32").
#[inline(always)]
fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

wide! {
    /// `out[j] = x[j]·scale` where element `start + j` is kept, else 0.
    fn apply(x: &[f32], out: &mut [f32], m: Mask, start: u32) {
        for (j, (o, &v)) in out.iter_mut().zip(x).enumerate() {
            let i = start.wrapping_add(j as u32);
            let keep = mix(mix(i ^ m.lo).wrapping_add(m.hi)) < m.threshold;
            *o = if keep { v * m.scale } else { 0.0 };
        }
    }
}

/// The mask of `n` elements as values: `scale` where kept, else 0 (for the backends without
/// fedrun's kernel, so that every backend draws the same masks).
pub fn values(n: usize, m: Mask) -> Vec<f32> {
    forward(&vec![1.0; n], m)
}

/// `x` with the mask applied: the forward pass on the input, and the backward pass on the
/// output's gradient (the same mask and scale, so the same call).
pub fn forward(x: &[f32], m: Mask) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    for_chunks(threads(), &mut y, CHUNK, |i, out| {
        apply(&x[i * CHUNK..][..out.len()], out, m, (i * CHUNK) as u32);
    });
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_one_minus_p_scaled_and_the_same_at_any_thread_count() {
        let x: Vec<f32> = (0..100_000).map(|i| 1.0 + (i % 7) as f32).collect();
        for p in [0.1, 0.5, 0.9] {
            let m = Mask::new(0x1234_5678_9abc_def0, p);
            let y = forward(&x, m);
            let kept = y.iter().filter(|&&v| v != 0.0).count() as f64 / x.len() as f64;
            // binomial sd at n = 1e5 is at most 0.0016
            assert!((kept - (1.0 - p)).abs() < 0.01, "p {p}: kept {kept}");
            let scale = (1.0 / (1.0 - p)) as f32;
            assert!(y.iter().zip(&x).all(|(&y, &x)| y == 0.0 || y == x * scale));
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            assert_eq!(one.install(|| forward(&x, m)), y, "one thread");
        }
        // another seed, another mask; neighbouring elements not correlated
        let (a, b) = (
            forward(&x, Mask::new(1, 0.5)),
            forward(&x, Mask::new(2, 0.5)),
        );
        let same = a
            .iter()
            .zip(&b)
            .filter(|(a, b)| (**a == 0.0) == (**b == 0.0))
            .count();
        assert!((same as f64 / x.len() as f64 - 0.5).abs() < 0.01);
        let runs = a
            .windows(2)
            .filter(|w| (w[0] == 0.0) == (w[1] == 0.0))
            .count();
        assert!((runs as f64 / x.len() as f64 - 0.5).abs() < 0.01);
    }
}
