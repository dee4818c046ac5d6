//! Matrix multiplication kernels.
//!
//! Two architectures live here, and the crate branches between them at its root:
//! `tiled` holds routines written on the tile DSL, `multi_level` holds routines
//! written on the batch/global/stage/tile levels. Everything outside those two
//! modules is vocabulary both of them speak. Each is behind a feature of its own
//! name, both on by default, and either compiles without the other.

/// The problem, its element types, and the errors either architecture can raise.
pub mod definition;

// fedrun's patch: the TF32 switch (see Cargo.toml).
static ALLOW_TF32: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(true);

/// fedrun's patch: whether f32 products may run on the tensor cores as TF32 where the device has
/// them (the published crate's behaviour, and the default). Set it once, before the first
/// product: an autotune cache filled under the other setting may name kernels this one refuses.
pub fn set_allow_tf32(allow: bool) {
    ALLOW_TF32.store(allow, core::sync::atomic::Ordering::Relaxed);
}

std::thread_local! {
    // fedrun's patch: a scope's own setting (`with_tf32`), over the process's.
    static SCOPE_TF32: core::cell::Cell<Option<bool>> = const { core::cell::Cell::new(None) };
}

/// fedrun's patch: `f` with f32 products allowed (or not) on the tensor cores as TF32 on this
/// thread, whatever the process's setting: the setting of the kernels chosen while `f` runs
/// (a convolution's implicit GEMM, while plain products keep `set_allow_tf32`'s).
pub fn with_tf32<R>(allow: bool, f: impl FnOnce() -> R) -> R {
    let before = SCOPE_TF32.with(|s| s.replace(Some(allow)));
    let r = f();
    SCOPE_TF32.with(|s| s.set(before));
    r
}

/// fedrun's patch: the switch's value on this thread (a `with_tf32` scope's, else the process's).
pub fn allow_tf32() -> bool {
    SCOPE_TF32
        .with(|s| s.get())
        .unwrap_or_else(|| ALLOW_TF32.load(core::sync::atomic::Ordering::Relaxed))
}
/// The public launch entry point.
pub mod launch;
/// The contract a routine implements, and what it reads about the device.
pub mod routine;
/// The user-facing [`Strategy`](strategy::Strategy) enum: the branch point.
pub mod strategy;
/// Autotune key.
pub mod tune_key;

#[cfg(feature = "multi-level")]
pub mod multi_level;
#[cfg(feature = "tiled")]
pub mod tiled;

#[cfg(not(any(feature = "tiled", feature = "multi-level")))]
compile_error!("cubek-matmul needs at least one of the `tiled` and `multi-level` features");

#[cfg(any(feature = "cpu-reference", feature = "benchmarks"))]
pub mod eval;
