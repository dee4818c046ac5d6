//! The compute threads' floating-point mode: subnormal floats flushed to zero.
//!
//! Intel cores take a slow microcode assist on every subnormal operand or result (tens to
//! hundreds of cycles); AMD cores do not. Training produces subnormals (small gradients,
//! attention probabilities, products of tiny weights), and on a Xeon they made the quickstart's
//! transformer step 2.5–3× slower. On x86-64 fedrun therefore runs every thread that computes
//! with the MXCSR bits FTZ (flush-to-zero: a subnormal result becomes ±0) and DAZ
//! (denormals-are-zero: a subnormal operand reads as ±0), as TensorFlow and XLA do in their CPU
//! thread pools. `run.flush_subnormals = false` keeps IEEE subnormals for a study that needs
//! them. The mode is a property of each thread, so it is set where a thread starts (the
//! `start_handler` of every pool fedrun builds), on the calling thread, and on each thread of
//! rayon's global pool (a broadcast). On other architectures nothing is set.

use std::sync::atomic::{AtomicBool, Ordering};

/// FTZ (bit 15) and DAZ (bit 6) of MXCSR.
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

/// The mode new threads take: flush (true, the default) or IEEE subnormals.
static FLUSH: AtomicBool = AtomicBool::new(true);

/// Whether this thread flushes subnormals (FTZ and DAZ both set); false off x86-64.
pub fn this_thread_flushes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(deprecated)] // the intrinsic is the documented way to read MXCSR
        // SAFETY: reading MXCSR has no precondition on x86-64 (SSE is baseline).
        let csr = unsafe { std::arch::x86_64::_mm_getcsr() };
        csr & FTZ_DAZ == FTZ_DAZ
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Put this thread in the recorded mode (`set_flush_subnormals`; flush by default).
pub fn apply_to_this_thread() {
    #[cfg(target_arch = "x86_64")]
    #[allow(deprecated)] // the intrinsics are the documented way to write MXCSR
    // SAFETY: only the FTZ and DAZ bits change; exception masks and rounding stay as they are.
    unsafe {
        use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
        let csr = _mm_getcsr();
        let csr = if FLUSH.load(Ordering::SeqCst) {
            csr | FTZ_DAZ
        } else {
            csr & !FTZ_DAZ
        };
        _mm_setcsr(csr);
    }
}

/// Record the mode (`run.flush_subnormals`) and apply it to this thread and to every thread of
/// rayon's global pool; pools built by `pool` afterwards start in it.
pub fn set_flush_subnormals(on: bool) {
    FLUSH.store(on, Ordering::SeqCst);
    apply_to_this_thread();
    rayon::broadcast(|_| apply_to_this_thread());
}

/// A rayon pool builder whose threads start in the recorded mode: every pool that computes is
/// built from this.
pub fn pool(threads: usize) -> rayon::ThreadPoolBuilder {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| apply_to_this_thread())
}

/// Whether every thread of `pool` flushes (each one checked, by a broadcast).
pub fn pool_flushes(pool: &rayon::ThreadPool) -> bool {
    pool.broadcast(|_| this_thread_flushes())
        .into_iter()
        .all(|f| f)
}

/// Whether every thread of rayon's global pool flushes.
pub fn global_pool_flushes() -> bool {
    rayon::broadcast(|_| this_thread_flushes())
        .into_iter()
        .all(|f| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the bits set, a subnormal result is flushed to zero and a subnormal operand reads as
    /// zero; without them both survive (IEEE). Run on its own thread, so that the process's
    /// other tests keep their mode.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_bits_flush_subnormal_results_and_operands() {
        std::thread::spawn(|| {
            let tiny = std::hint::black_box(f32::MIN_POSITIVE);
            let sub = std::hint::black_box(f32::MIN_POSITIVE / 4.0); // computed before the bits
            assert!(sub > 0.0 && sub < f32::MIN_POSITIVE);
            // SAFETY: FTZ and DAZ only, on this thread alone.
            #[allow(deprecated)]
            unsafe {
                use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
                _mm_setcsr(_mm_getcsr() | FTZ_DAZ);
            }
            assert!(this_thread_flushes());
            assert_eq!(std::hint::black_box(tiny) / 4.0, 0.0, "FTZ: result flushed");
            assert_eq!(
                std::hint::black_box(sub) * 1.0,
                0.0,
                "DAZ: operand read as 0"
            );
            #[allow(deprecated)]
            // SAFETY: as above.
            unsafe {
                use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
                _mm_setcsr(_mm_getcsr() & !FTZ_DAZ);
            }
            assert!(!this_thread_flushes());
            assert!(
                std::hint::black_box(tiny) / 4.0 > 0.0,
                "IEEE: subnormal kept"
            );
        })
        .join()
        .unwrap();
    }

    /// A pool from `pool` starts its threads flushing.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn pools_start_flushing() {
        let p = pool(2).build().unwrap();
        assert!(pool_flushes(&p));
    }
}
