//! A test binary run again at another SIMD level: with `FEDRUN_SIMD` at the level below the
//! one in use, so that every machine's suite checks two of the kernel sets fedrun's products
//! and element-wise kernels have (an AVX-512 machine checks the AVX2 one that other machines,
//! CI's among them, run; an AVX2 machine the SSE2 baseline's).

use fedrun::kernels::simd::{ENV, Level, level};

/// The level below the one in use; None on the baseline.
pub fn below() -> Option<Level> {
    match level() {
        Level::Avx512 => Some(Level::Avx2),
        Level::Avx2 => Some(Level::Sse2),
        Level::Sse2 => None,
    }
}

/// Every test of this binary but `me`, run again at [`below`] in a child process: panics,
/// with the child's output, unless the child passed and ran at least one test. On the
/// baseline (no level below it; not an x86-64 CPU of the last fifteen years) it says so.
///
/// When the level below is the baseline (an AVX2 machine's rerun), the tests whose names hold
/// one of `heavy` are left out, and the output says which: at the baseline gemm's products are
/// its scalar kernels, and ResNet-18's tests took most of the rerun there (cohort.rs's 97 s and
/// golden.rs's 94 s on a 2-vCPU EPYC Zen 3, gemm's scalar kernel 42 % and 63 % of the binaries'
/// time). An AVX-512 machine's rerun, at AVX2, runs them all. What the baseline then leaves
/// unchecked is ResNet-18's Winograd convolutions at that level, whose products are gemm's
/// (`kernels::gemm`'s unit tests check every level's).
pub fn rerun_below(me: &str, heavy: &[&str]) {
    let Some(lower) = below() else {
        eprintln!("{me}: the SIMD level in use is the baseline: no level below it to run");
        return;
    };
    let skipped = if lower == Level::Sse2 { heavy } else { &[] };
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .env(ENV, lower.name())
        // a bless is the calling run's: the child compares only
        .env_remove("FEDRUN_BLESS")
        // the golden files' bytes are those of gemm's FMA kernels (AVX2's and AVX-512's
        // alike); the baseline's multiply and add round apart: its values are compared
        .env_remove(if lower == Level::Sse2 {
            "FEDRUN_GOLDEN_EXACT"
        } else {
            "-"
        })
        .args(["--skip", me])
        .args(skipped.iter().flat_map(|h| ["--skip", h]))
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let passed = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum::<usize>();
    assert!(
        out.status.success() && passed > 0,
        "at {ENV}={}: {passed} passed\n{stdout}\n{}",
        lower.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "{me}: {passed} tests passed again at {ENV}={} (left out there: {skipped:?})",
        lower.name()
    );
}
