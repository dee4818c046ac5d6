//! Device work recorded once as a graph and replayed (burn's `capture`), shared by the local
//! steps and the evaluations (`run.graph`): on `cuda` a CUDA graph, one launch a replay; on wgpu
//! cubecl's capture window; elsewhere the closure runs again at each replay (the same values).
//!
//! A capture is process-global on CUDA: no other thread may allocate or synchronise while it
//! records. Every eager piece of device work that may run beside a capture holds [`quiet`]
//! (shared), and [`record`] holds the lock alone.
//!
//! [`record`] runs burn's capture sequence itself (prepare, warm-up runs, start, the recorded
//! run, stop), because burn's `capture` reports a recording the backend refused part-way as "no
//! hardware graph", after which the recorded run's work is silently missing. Here a refusal is a
//! [`Failed`] that the caller answers by doing the work again without a graph.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use burn::backend::{Backend, DispatchDevice};
use burn::tensor::kind::Basic;
use burn::tensor::{Device, Tensor};
use burn_dispatch::{Dispatch, DispatchGraph};

/// `dst` set to `f(dst)`, written into `dst`'s own buffer off flex: a state that a graph replays
/// on (parameters, moments, a step index, a kept graph's inputs) must stay in the buffer the
/// recording saw. burn writes an op's output over an input it alone holds where it can, but that
/// is the backend's choice, not a promise: burn's fusion writes a fused kernel's output into a
/// new buffer where the kernel also reduces the same tensor (LAMB's trust ratio reads the
/// parameters' norms), and each replay then reads the old buffer and writes the new one, the
/// state never moving on. So the new value is copied back by a slice assignment over the whole
/// tensor, which no burn backend fuses: it runs alone and writes into the buffer of the tensor it
/// consumes (one more kernel). On flex (no hardware graph: a replay runs the closure again) `f`
/// runs on `dst` itself, in place where flex can.
pub fn in_place<const D: usize, K: Basic>(
    dst: &mut Tensor<D, K>,
    f: impl FnOnce(Tensor<D, K>) -> Tensor<D, K>,
) {
    if super::is_flex(&dst.device()) {
        dst.inplace(f);
        return;
    }
    let value = f(dst.clone());
    let whole = dst.dims().map(|n| 0..n);
    dst.inplace(|d| d.slice_assign(whole, value));
}

/// Held shared by eager device work, alone by a capture.
static QUIET: RwLock<()> = RwLock::new(());

/// The captures that recorded a hardware graph in this process.
static HARDWARE: AtomicUsize = AtomicUsize::new(0);

/// The captures made in this process (hardware or not).
static CAPTURES: AtomicUsize = AtomicUsize::new(0);

/// The captures or replays the backend refused in this process.
static FAILURES: AtomicUsize = AtomicUsize::new(0);

/// The recordings still to refuse ([`refuse_captures`]).
static REFUSE: AtomicUsize = AtomicUsize::new(0);

/// The eager runs of the closure that burn's `capture` makes before it records (each a real
/// run: the closure's state moves on with each).
pub const WARMUP: usize = 3;

/// Hold while running device work that a capture on another thread must not see.
pub fn quiet() -> RwLockReadGuard<'static, ()> {
    QUIET.read().unwrap_or_else(|e| e.into_inner())
}

/// Work recorded once and replayed: a hardware graph, or the closure run again at each replay
/// where the backend records none (flex).
pub struct Graph<F> {
    device: DispatchDevice,
    closure: F,
    hardware: Option<DispatchGraph>,
}

/// A capture whose recording the backend refused part-way (an allocation no held page could
/// serve, say): the recorded run executed nothing, and whatever it wrote is lost, so the work
/// that gave it its state must be done again without a graph.
#[derive(Debug)]
pub struct Failed(pub String);

/// `closure` recorded on `device` (without autodiff) with no other device work meanwhile, after
/// [`WARMUP`] real runs (burn's `capture`, step by step); with how many times it ran for real:
/// the warm-up runs, and the recorded run where the backend records no graph (a hardware
/// recording runs nothing). A backend without graphs off flex is said once in the log.
///
/// # Errors
/// [`Failed`] when a recording began and was refused: its run did nothing, its state is lost.
pub fn record<F: FnMut()>(device: &Device, mut closure: F) -> Result<(Graph<F>, usize), Failed> {
    let _alone = QUIET.write().unwrap_or_else(|e| e.into_inner());
    let flex = super::is_flex(device);
    let device = device.clone().without_autodiff().as_dispatch().clone();
    let _ = Dispatch::graph_prepare(&device);
    for _ in 0..WARMUP {
        closure();
        let _ = Dispatch::sync(&device);
    }
    CAPTURES.fetch_add(1, Ordering::SeqCst);
    if take_refusal() {
        // as a refused recording leaves it: the state moved on by a run that is not counted
        closure();
        return Err(refused("refused by refuse_captures"));
    }
    let runs = match Dispatch::graph_start_capture(&device) {
        Ok(()) => {
            closure();
            let graph = Dispatch::graph_stop_capture(&device).map_err(|e| refused(&compact(&e)))?;
            HARDWARE.fetch_add(1, Ordering::SeqCst);
            return Ok((graph_of(device, closure, Some(graph)), WARMUP));
        }
        Err(_) => {
            closure();
            WARMUP + 1
        }
    };
    if !flex {
        say_fallback();
    }
    Ok((graph_of(device, closure, None), runs))
}

fn graph_of<F>(device: DispatchDevice, closure: F, hardware: Option<DispatchGraph>) -> Graph<F> {
    Graph {
        device,
        closure,
        hardware,
    }
}

/// Replay `graph` with no capture recording meanwhile.
///
/// # Safety
/// Every tensor the closure touches must outlive the replay's work (burn's `Graph::replay`).
///
/// # Errors
/// [`Failed`] when the backend refused to launch the graph (nothing ran).
pub unsafe fn replay<F: FnMut()>(graph: &mut Graph<F>) -> Result<(), Failed> {
    let _shared = quiet();
    match &graph.hardware {
        // SAFETY: the caller keeps what the closure touches alive
        Some(g) => {
            unsafe { Dispatch::graph_replay(&graph.device, g) }.map_err(|e| refused(&compact(&e)))
        }
        None => {
            (graph.closure)();
            Ok(())
        }
    }
}

impl<F> Graph<F> {
    /// Whether the graph replays as one hardware launch (else the closure runs again).
    pub fn is_hardware(&self) -> bool {
        self.hardware.is_some()
    }
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

/// The tests' stand-in for a backend that refuses a recording (which flex never does): the next
/// `n` captures in this process run their warm-up and their recorded run for real, then report
/// [`Failed`], so that what gave the closure its state must be done again without a graph.
#[doc(hidden)]
pub fn refuse_captures(n: usize) {
    REFUSE.store(n, Ordering::SeqCst);
}

fn take_refusal() -> bool {
    (REFUSE.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))).is_ok()
}

/// How many captures or replays the backend refused in this process.
pub fn failures() -> usize {
    FAILURES.load(Ordering::SeqCst)
}

/// Count a refused capture or replay and say the first in the log; its message as a [`Failed`].
pub fn refused(message: &str) -> Failed {
    if FAILURES.fetch_add(1, Ordering::SeqCst) == 0 {
        eprintln!(
            "run.graph: the backend refused a graph ({message}); the work it held runs again eagerly (the same values), and later work tries to capture again"
        );
    }
    Failed(message.to_string())
}

/// A backend error's chain of causes on one line, without its backtrace sections.
pub fn compact(e: &dyn std::fmt::Debug) -> String {
    let text = format!("{e:?}");
    let mut parts: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        let skip = line.is_empty() || line == "Caused by:" || line.contains("acktrace");
        if !skip && parts.last() != Some(&line) {
            parts.push(line);
        }
    }
    parts.join(": ")
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
