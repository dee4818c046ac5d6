//! FedPAQ's uplink quantizer (Reisizadeh et al., AISTATS 2020, Example 1: QSGD's low-precision
//! quantizer of Alistarh et al.): with s levels, coordinate i of x becomes
//! `‖x‖·sign(x_i)·ξ_i/s`, where ξ_i is `l` or `l + 1` for `l = ⌊s·|x_i|/‖x‖⌋`, rounded up with
//! probability `s·|x_i|/‖x‖ − l`. Unbiased (`E Q(x) = x`), with variance at most
//! `min(p/s², √p/s)·‖x‖²`. A client sends ‖x‖ (32 bits) and per coordinate a sign and a level
//! in 0..=s.

use crate::optim::global_norm;
use crate::rng::Rng;

/// `out = Q_s(x)`, drawing the rounding from `rng`; x = 0 gives 0.
pub fn quantize(x: &[f32], levels: usize, rng: &mut Rng, out: &mut [f32]) {
    let norm = global_norm(x);
    if norm == 0.0 {
        out.fill(0.0);
        return;
    }
    let s = levels as f64;
    for (o, &v) in out.iter_mut().zip(x) {
        let r = s * (v.abs() as f64) / norm;
        let l = r.floor();
        let level = if rng.uniform() < r - l { l + 1.0 } else { l };
        *o = (v.signum() as f64 * norm * level / s) as f32;
    }
}

/// `Q_s` over each range of `parts` (one norm each).
pub fn quantize_parts(
    x: &[f32],
    levels: usize,
    parts: &[std::ops::Range<usize>],
    rng: &mut Rng,
    out: &mut [f32],
) {
    for r in parts {
        quantize(&x[r.clone()], levels, rng, &mut out[r.clone()]);
    }
}

/// Bits of one quantized update of `dim` coordinates in `norms` parts: a 32-bit norm per part,
/// and a sign bit and ⌈log2(s + 1)⌉ level bits per coordinate.
pub fn bits(dim: usize, norms: usize, levels: usize) -> u64 {
    let level_bits = usize::BITS - levels.leading_zeros();
    32 * norms as u64 + dim as u64 * (1 + level_bits as u64)
}
