//! Device work recorded once as a graph and replayed (burn's `capture`), shared by the local
//! steps and the evaluations (`run.graph`): on `cuda` a CUDA graph, one launch a replay; on wgpu
//! cubecl's capture window; elsewhere the closure runs again at each replay (the same values).
//!
//! A capture is process-global on CUDA: no other thread may allocate or synchronise while it
//! records. Every eager piece of device work that may run beside a capture holds [`quiet`]
//! (shared), and [`record`] holds the lock alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use burn::tensor::{Device, Graph, capture};

/// Held shared by eager device work, alone by a capture.
static QUIET: RwLock<()> = RwLock::new(());

/// The captures that recorded a hardware graph in this process.
static HARDWARE: AtomicUsize = AtomicUsize::new(0);

/// The captures made in this process (hardware or not).
static CAPTURES: AtomicUsize = AtomicUsize::new(0);

/// The eager runs of the closure that burn's `capture` makes before it records (each a real
/// run: the closure's state moves on with each).
pub const WARMUP: usize = 3;

/// Hold while running device work that a capture on another thread must not see.
pub fn quiet() -> RwLockReadGuard<'static, ()> {
    QUIET.read().unwrap_or_else(|e| e.into_inner())
}

/// `closure` recorded on `device` (without autodiff) with no other device work meanwhile; with
/// how many times it ran for real: the warm-up runs, and the recorded run where no hardware
/// graph was made (a hardware recording runs nothing). A capture without a hardware graph off
/// flex is said once in the log.
pub fn record<F: FnMut()>(device: &Device, closure: F) -> (Graph<(), F>, usize) {
    let _alone = QUIET.write().unwrap_or_else(|e| e.into_inner());
    let g = capture(&device.clone().without_autodiff(), closure);
    CAPTURES.fetch_add(1, Ordering::SeqCst);
    if g.is_hardware() {
        HARDWARE.fetch_add(1, Ordering::SeqCst);
        return (g, WARMUP);
    }
    if !super::is_flex(device) {
        say_fallback();
    }
    (g, WARMUP + 1)
}

/// Replay `graph` with no capture recording meanwhile.
///
/// # Safety
/// Every tensor the closure touches must outlive the call (burn's `Graph::replay`).
pub unsafe fn replay<F: FnMut()>(graph: &mut Graph<(), F>) {
    let _shared = quiet();
    // SAFETY: the caller keeps what the closure touches alive
    unsafe { graph.replay() };
}

/// How many captures recorded a hardware graph in this process (a CUDA graph; on wgpu, cubecl's
/// capture window, which refuses any upload or read inside it).
pub fn hardware_graphs() -> usize {
    HARDWARE.load(Ordering::SeqCst)
}

/// How many captures this process has made (a kept graph serves later work without one).
pub fn captures() -> usize {
    CAPTURES.load(Ordering::SeqCst)
}

/// Say once in the process that a capture recorded no hardware graph.
fn say_fallback() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!(
            "run.graph: burn recorded no hardware graph on this device; the captured work runs again as a closure each time (the same values, without the graph's speed)"
        );
    });
}
