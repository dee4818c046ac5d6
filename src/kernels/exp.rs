//! `eˣ`, `σ(x)` and `tanh x` without a branch or a call, so that a loop of them vectorises:
//! burn-flex calls libm's scalar `expf`/`tanhf` once per element (and `expf`'s slow underflow
//! path for arguments far below zero).

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
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let e = poly(r);
    // `t`'s low mantissa bits hold `n` as an integer (|n| ≤ 128, far below 2²²), so 2ⁿ's
    // exponent field comes from them by integer arithmetic: the `n as i32` it replaces gives
    // the same bits but does not vectorise (Rust's `as` saturates, lane by lane)
    let biased = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127);
    e * f32::from_bits(biased << 23)
}

/// `eʳ` for the reduced `|r| ≤ ln 2 / 2`: Cephes' degree-6 polynomial.
#[inline(always)]
fn poly(r: f32) -> f32 {
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    p * r * r + r + 1.0
}

/// `σ(x) = 1/(1 + e⁻ˣ)`, from [`exp`].
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `tanh x = 1 − 2/(e²ˣ + 1)`, from [`exp`] (absolute error below 3e-7; relative error grows
/// near 0, where the subtraction cancels).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    1.0 - 2.0 / (exp(2.0 * x) + 1.0)
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

    /// 2ⁿ from `t`'s bits is the `n as i32` construction, bit for bit, over the whole range.
    #[test]
    fn exponent_from_the_rounding_bits_equals_the_integer_conversion() {
        let by_cast = |x: f32| {
            let x = x.clamp(-87.336_54, 88.722_83);
            let n = (x * LOG2E + ROUND) - ROUND;
            let r = x - n * LN2_HI - n * LN2_LO;
            poly(r) * f32::from_bits(((n as i32 + 127) as u32) << 23)
        };
        let edges = [
            f32::NEG_INFINITY,
            f32::INFINITY,
            -1e4,
            1e4,
            -87.4,
            88.8,
            0.0,
            -0.0,
        ];
        let grid = (0..400_000).map(|i| -90.0 + 180.0 * i as f32 / 400_000.0);
        for x in grid.chain(edges) {
            assert_eq!(exp(x).to_bits(), by_cast(x).to_bits(), "exp({x})");
        }
    }

    #[test]
    fn sigmoid_and_tanh_within_3e7_of_f64() {
        for i in 0..100_000 {
            let x = -30.0 + 60.0 * i as f32 / 100_000.0;
            let v = x as f64;
            let (s, t) = (1.0 / (1.0 + (-v).exp()), v.tanh());
            assert!((sigmoid(x) as f64 - s).abs() < 2e-7, "sigmoid({x})");
            assert!((tanh(x) as f64 - t).abs() < 3e-7, "tanh({x})");
        }
        assert!(sigmoid(-200.0) < 1e-38 && sigmoid(200.0) == 1.0);
        assert_eq!((tanh(-200.0), tanh(200.0)), (-1.0, 1.0));
    }
}
