//! Deterministic random numbers. Every stream of randomness in a run (partition, client
//! sampling, batch order, augmentation, initialisation, dropout) is a [`Rng`] derived from the
//! run seed and a stream label, so a stream does not depend on how many numbers another stream
//! consumed, nor on the thread that consumes it.

use rand::seq::SliceRandom;
use rand::{Rng as _, RngExt, SeedableRng};
use rand_distr::multi::Dirichlet;
use rand_distr::{Distribution, Gamma, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

/// SplitMix64 step: mixes the seed, the stream label and the keys into one stream seed.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Named streams derived from the run seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Partition = 1,
    Sampling = 2,
    Init = 3,
    /// Batch order and augmentation of one client in one round.
    Local = 4,
    /// Dropout and other in-model randomness.
    Dropout = 5,
    /// Data-set construction (e.g. picking Shakespeare users).
    DataSelect = 6,
    /// The stochastic rounding of one client's quantized uplink in one round.
    Quantize = 7,
    /// The dynamic client set: the first active set, and who leaves and joins at a stage.
    Membership = 8,
    /// The training split dealt anew among round t's clients (`data.deal = "round"`).
    Deal = 9,
}

/// A seeded generator: `rand_xoshiro`'s xoshiro256++ (value-stable across platforms and
/// versions of that crate), with `rand`'s ranges and shuffles and `rand_distr`'s Normal, Gamma
/// and Dirichlet. The versions are pinned in `Cargo.toml`; `tests/rng.rs` holds golden values
/// so that an upgrade that changes the numbers fails loudly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    inner: Xoshiro256PlusPlus,
}

impl Rng {
    pub fn from_seed(seed: u64) -> Self {
        Rng {
            inner: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// The stream `stream` of run `seed`, further keyed by `keys` (round, client, ...).
    pub fn derive(seed: u64, stream: Stream, keys: &[u64]) -> Self {
        let mut h = seed ^ 0x6A09_E667_F3BC_C908;
        let mut acc = splitmix64(&mut h) ^ (stream as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for &k in keys {
            let mut t = acc ^ k.wrapping_mul(0xD6E8_FEB8_6659_FD93);
            acc = splitmix64(&mut t);
        }
        Rng::from_seed(acc)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.inner.random::<f64>()
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        self.inner.random_range(0..n)
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        StandardNormal.sample(&mut self.inner)
    }

    /// Gamma(shape, 1).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        Gamma::new(shape, 1.0)
            .expect("gamma shape > 0")
            .sample(&mut self.inner)
    }

    /// A draw from the symmetric Dirichlet(alpha, ..., alpha) over `k` categories.
    pub fn dirichlet(&mut self, alpha: f64, k: usize) -> Vec<f64> {
        if k == 1 {
            return vec![1.0];
        }
        Dirichlet::new(&vec![alpha; k])
            .expect("dirichlet alpha > 0, k >= 2")
            .sample(&mut self.inner)
    }

    /// A uniform random permutation in place.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        v.shuffle(&mut self.inner);
    }

    /// `k` distinct values of 0..n, in draw order.
    pub fn choose_distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        assert!(k <= n, "choose {k} of {n}");
        rand::seq::index::sample(&mut self.inner, n, k).into_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_independent_and_repeatable() {
        let a: Vec<u64> = {
            let mut r = Rng::derive(7, Stream::Local, &[3, 4]);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::derive(7, Stream::Local, &[3, 4]);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::derive(7, Stream::Local, &[4, 3]);
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn gamma_mean_is_shape() {
        let mut r = Rng::from_seed(1);
        for shape in [0.3, 1.0, 4.0] {
            let n = 20000;
            let m: f64 = (0..n).map(|_| r.gamma(shape)).sum::<f64>() / n as f64;
            assert!(
                (m - shape).abs() < 0.05 * shape.max(1.0),
                "shape {shape}: mean {m}"
            );
        }
    }

    #[test]
    fn choose_distinct_is_distinct() {
        let mut r = Rng::from_seed(2);
        let mut v = r.choose_distinct(100, 20);
        v.sort();
        v.dedup();
        assert_eq!(v.len(), 20);
    }
}
