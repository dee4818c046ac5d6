//! Kernel launches counted on the GPU backends: cubecl tells an installed observer of every
//! kernel a thread issues (`cubecl::logging::LaunchObserver`), on every runtime (wgpu on
//! lavapipe as on CUDA), so a machine without a GPU counts what a step launches on one. With
//! burn's fusion the kernels are issued when its queue is flushed, so the count is read after
//! the device is synchronised. Without a GPU backend compiled in there is nothing to count.
//! `FEDRUN_LAUNCH_LOG=1` prints each counted kernel's name to stderr (`launch <name>`), for a
//! per-kernel breakdown (`sort | uniq -c`).

use burn::tensor::Device;

/// Launches issued while `f` ran (the device synchronised first), with `f`'s result; None in a
/// build without a GPU backend, or when `device` is flex.
pub fn count<R>(device: &Device, f: impl FnOnce() -> R) -> (R, Option<u64>) {
    imp::count(device, f)
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod imp {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use burn::cubecl::logging::{LaunchObservation, LaunchObserver};
    use burn::tensor::Device;

    /// The launches, and whether each kernel's name is printed (`FEDRUN_LAUNCH_LOG=1`).
    struct Count(AtomicU64, bool);

    impl LaunchObserver for Count {
        fn launched(&self, kernel: &'static str) {
            if self.1 {
                eprintln!("launch {kernel}");
            }
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn count<R>(device: &Device, f: impl FnOnce() -> R) -> (R, Option<u64>) {
        if crate::kernels::is_flex(device) {
            return (f(), None);
        }
        let _ = device.sync();
        let log = std::env::var_os("FEDRUN_LAUNCH_LOG").is_some_and(|v| v == "1");
        let c = Arc::new(Count(AtomicU64::new(0), log));
        let guard = LaunchObservation::new(c.clone());
        let r = f();
        let _ = device.sync();
        drop(guard);
        (r, Some(c.0.load(Ordering::Relaxed)))
    }
}

#[cfg(not(any(feature = "wgpu", feature = "cuda")))]
mod imp {
    use burn::tensor::Device;

    pub fn count<R>(_device: &Device, f: impl FnOnce() -> R) -> (R, Option<u64>) {
        (f(), None)
    }
}
