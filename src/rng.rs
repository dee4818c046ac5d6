//! Deterministic random numbers. Every stream of randomness in a run (partition, client
//! sampling, batch order, augmentation, initialisation, dropout) is a [`Rng`] derived from the
//! run seed and a stream label, so a stream does not depend on how many numbers another stream
//! consumed, nor on the thread that consumes it.

/// SplitMix64 step: used to expand seeds.
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
}

/// xoshiro256++ generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn from_seed(seed: u64) -> Self {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
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
        let result = (self.s[0].wrapping_add(self.s[3]))
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n). Unbiased (rejection).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.next_u64();
            if v < zone {
                return (v % n) as usize;
            }
        }
    }

    /// Standard normal (Box-Muller; one value per call, deterministic).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Gamma(shape, 1) by Marsaglia and Tsang; shape < 1 by the boost u^(1/shape).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        assert!(shape > 0.0);
        if shape < 1.0 {
            let u = 1.0 - self.uniform();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let mut x;
            let mut v;
            loop {
                x = self.normal();
                v = 1.0 + c * x;
                if v > 0.0 {
                    break;
                }
            }
            v = v * v * v;
            let u = 1.0 - self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    /// A draw from the symmetric Dirichlet(alpha, ..., alpha) over `k` categories.
    /// Computed in log space for tiny alpha so that it never returns all zeros.
    pub fn dirichlet(&mut self, alpha: f64, k: usize) -> Vec<f64> {
        let mut g: Vec<f64> = (0..k).map(|_| self.gamma(alpha)).collect();
        let sum: f64 = g.iter().sum();
        if sum > 0.0 && sum.is_finite() {
            g.iter_mut().for_each(|v| *v /= sum);
        } else {
            // every gamma underflowed: put the mass on one category, uniformly chosen
            g.iter_mut().for_each(|v| *v = 0.0);
            let j = self.below(k);
            g[j] = 1.0;
        }
        g
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }

    /// `k` distinct values of 0..n, in draw order (partial Fisher-Yates).
    pub fn choose_distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        assert!(k <= n, "choose {k} of {n}");
        let mut pool: Vec<usize> = (0..n).collect();
        for i in 0..k {
            let j = i + self.below(n - i);
            pool.swap(i, j);
        }
        pool.truncate(k);
        pool
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
