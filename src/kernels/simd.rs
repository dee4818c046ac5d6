//! The SIMD level fedrun's CPU kernels run at: the widest the CPU has (AVX-512, AVX2 with FMA,
//! or the x86-64 baseline's SSE2), or a lower one named in `FEDRUN_SIMD` (`avx512`, `avx2`,
//! `sse2`; `auto` or unset: the CPU's). The level decides which of gemm's kernels fedrun's
//! products call ([`super::gemm`]) and which build of the element-wise kernels runs
//! ([`super::wide`]), so that one machine can run the numbers of a smaller one: the tests run
//! the cohort and golden checks at the AVX2 level on an AVX-512 machine too. burn's own ops
//! (burn's `linear` for layers under a million weights, the attention's products, layer norm,
//! the loss, burn's reductions) keep the CPU's level: burn-flex picks its kernels itself.

use std::sync::OnceLock;

/// The environment variable that caps the level.
pub const ENV: &str = "FEDRUN_SIMD";

/// A SIMD level of x86-64, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The x86-64 baseline (SSE2): gemm's scalar kernels.
    Sse2,
    /// AVX2 with FMA (x86-64-v3): gemm's `fma` kernels, 8 lanes.
    Avx2,
    /// AVX-512F (x86-64-v4): gemm's `avx512f` kernels, 16 lanes.
    Avx512,
}

impl Level {
    /// Its name, as `FEDRUN_SIMD` and `run.json` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Sse2 => "sse2",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level `name` spells; None: `auto` (the CPU's).
    pub fn parse(name: &str) -> Result<Option<Level>, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(None),
            "sse2" => Ok(Some(Level::Sse2)),
            "avx2" => Ok(Some(Level::Avx2)),
            "avx512" => Ok(Some(Level::Avx512)),
            other => Err(format!(
                "{ENV}={other:?} is not a SIMD level: use auto, avx512, avx2 or sse2"
            )),
        }
    }
}

/// The widest level this CPU has.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Level::Avx2;
        }
    }
    Level::Sse2
}

/// The level that `FEDRUN_SIMD` and the CPU give: the lower of the two; an error naming the
/// variable when its value is not a level.
pub fn from_env() -> Result<Level, String> {
    let cap = match std::env::var(ENV) {
        Ok(v) => Level::parse(&v)?,
        Err(std::env::VarError::NotPresent) => None,
        Err(e) => return Err(format!("{ENV}: {e}")),
    };
    Ok(cap.map_or(detected(), |c| c.min(detected())))
}

static LEVEL: OnceLock<Level> = OnceLock::new();

/// The level fedrun's kernels run at in this process, read once. An unreadable `FEDRUN_SIMD`
/// counts as unset here: the run checks it first ([`from_env`]) and refuses it by name.
#[inline]
pub fn level() -> Level {
    *LEVEL.get_or_init(|| from_env().unwrap_or_else(|_| detected()))
}
