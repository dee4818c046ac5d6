//! What the benchmarks share: the thread count they report and the median they print.
/// The threads a benchmark runs with: `RAYON_NUM_THREADS`, else the cores.
pub fn threads() -> String {
    std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| {
        std::thread::available_parallelism()
            .map(|n| n.get().to_string())
            .unwrap_or_default()
    })
}

/// The median of `v` (the upper one of an even count); NaN when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
