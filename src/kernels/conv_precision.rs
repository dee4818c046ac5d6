//! The precision of a convolution's products on the GPU backends (`run.tf32_conv`): on CUDA, as
//! TF32 on the tensor cores (PyTorch's `cudnn.allow_tf32`, its default) or in f32, whatever
//! `run.tf32` sets for plain matrix products. It covers the implicit-GEMM convolutions
//! ([`super::ext_gpu_conv`]), the weight gradient's products where that does not apply
//! ([`super::gpu_wgrad`]) and a cohort's batched products ([`super::batched_conv`]). The other
//! GPU backends have no TF32.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether convolutions may run on the tensor cores as TF32 (`run.tf32_conv`).
static TF32_CONV: AtomicBool = AtomicBool::new(true);

/// Put `run.tf32_conv` in force for this process.
pub fn set_tf32_conv(on: bool) {
    TF32_CONV.store(on, Ordering::Relaxed);
}

/// Whether `run.tf32_conv` is in force.
pub(super) fn tf32_conv() -> bool {
    TF32_CONV.load(Ordering::Relaxed)
}

/// `f` with products in a convolution's precision.
pub(super) fn in_conv_precision<R>(f: impl FnOnce() -> R) -> R {
    tf32_scope(tf32_conv(), f)
}

/// `f` with f32 products allowed (or not) on the tensor cores as TF32 on this thread: the
/// setting of the kernels chosen while `f` runs.
#[cfg(feature = "cuda")]
pub(super) fn tf32_scope<R>(on: bool, f: impl FnOnce() -> R) -> R {
    cubek_matmul::with_tf32(on, f)
}

#[cfg(not(feature = "cuda"))]
pub(super) fn tf32_scope<R>(_on: bool, f: impl FnOnce() -> R) -> R {
    f()
}
