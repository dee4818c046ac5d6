//! The global L2 norm of a flat vector.

/// `‖v‖`, accumulated in f64 in a fixed order (the same at any thread count).
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
