//! The steps of a device training from its [`Feed`] (`run.graph`): the first step eagerly (it
//! counts the model's dropout sites and the step's numbers), then each run of full steps as one
//! closure that takes nothing from the host — the batch, the dropout seeds, the learning rate and
//! every per-row factor read from device tables at the step index, the parameters, the rule's
//! state, the index and the step's numbers written in place — captured once with burn's
//! `capture` and replayed: one CUDA graph launch a step on `cuda`, the closure run again
//! elsewhere (the same values either way). The other steps run eagerly from the same draws.
//!
//! A capture is process-global on CUDA (no other thread may allocate meanwhile): each device step
//! of every worker holds [`QUIET`] shared, and a capture holds it alone.

use std::cell::RefCell;
use std::sync::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::tensor::{Tensor, capture};

use super::chain::DeviceChain;
use super::deferred::Deferred;
use super::feed::Feed;
use super::resident::{Resident, Trained, who};
use crate::data::FedData;
use crate::model::Seeds;

/// Held shared by a device step, alone by a capture.
pub(super) static QUIET: RwLock<()> = RwLock::new(());

/// The full steps run by the captured closure in this process (a replay or a capture's run).
static FULL_STEPS: AtomicUsize = AtomicUsize::new(0);

/// How many steps the captured closure has run in this process so far (the tests' proof that a
/// training took the captured path).
pub fn full_steps() -> usize {
    FULL_STEPS.load(Ordering::SeqCst)
}

/// The captures that recorded a hardware graph in this process.
static HARDWARE: AtomicUsize = AtomicUsize::new(0);

/// How many captures recorded a hardware graph in this process (a CUDA graph; on wgpu, cubecl's
/// capture window, which refuses any upload or read inside it).
pub fn hardware_graphs() -> usize {
    HARDWARE.load(Ordering::SeqCst)
}

/// The eager runs of the closure burn's `capture` makes before it records (each a real step).
const WARMUP: usize = 3;

/// What the captured closure and the eager steps between its replays share.
struct Live<'c> {
    x: Vec<Tensor<2>>,
    chain: &'c mut DeviceChain,
    /// The full steps' numbers `[S, w]`, each written at its step index.
    table: Tensor<2>,
}

impl Resident<'_> {
    /// The steps of `feed`: eager where a step is not full or too few full steps follow to
    /// capture, else replayed; the rows `x` trained in place.
    pub(super) fn run_fed(
        &self,
        feed: &mut Feed,
        data: &FedData,
        chain: &mut DeviceChain,
        works: &[super::work::Work],
        x: &mut Vec<Tensor<2>>,
        start: &[Tensor<2>],
    ) -> Trained {
        let (steps, k) = (feed.steps(), works.len());
        if steps == 0 || super::draw::stopped(works) {
            return Vec::new();
        }
        let mut pending = Deferred::default();
        let groups = feed.groups(0, data);
        let first = {
            let _shared = QUIET.read();
            let seeds = Some(Seeds::Host(feed.host_seeds(0)));
            let t = self.step(x, start, &groups, chain, seeds);
            chain.advance();
            t
        };
        let mut eager = vec![(0, who(&groups))];
        // a full step's numbers: K losses, and K norms when the first step had them
        let width = first
            .as_ref()
            .map_or(k, |t| match t.dims()[0] > eager[0].1.len() {
                true => 2 * k,
                false => k,
            });
        pending.push(first.unwrap_or_else(|| Tensor::zeros([0], &x[0].device())));
        feed.with_sites(self.sites.get() as usize);
        let feed: &Feed = feed;
        let live = RefCell::new(Live {
            x: std::mem::take(x),
            chain,
            table: Tensor::zeros([steps, width], &feed.device().clone().without_autodiff()),
        });
        let step = || self.full_step(&live, feed, start, data);
        let (mut graph, mut full, mut s) = (None, Vec::new(), 1);
        while s < steps && !super::draw::stopped(works) {
            let run = feed.full_run(s);
            if let (true, Some(g)) = (run > 0, graph.as_mut()) {
                let _shared = QUIET.read();
                // SAFETY: every tensor the closure touches is owned by `live`, `feed` or
                // `start`, which outlive `graph`; no other thread runs on the device now
                unsafe { burn::tensor::Graph::replay(g) };
                full.push(s);
                s += 1;
                continue;
            }
            if graph.is_none() && run > WARMUP {
                let _alone = QUIET.write();
                let g = capture(&self.device.clone().without_autodiff(), step);
                let done = if g.is_hardware() { WARMUP } else { WARMUP + 1 };
                if g.is_hardware() {
                    HARDWARE.fetch_add(1, Ordering::SeqCst);
                } else if !crate::kernels::is_flex(self.device) {
                    say_fallback();
                }
                full.extend(s..s + done);
                s += done;
                graph = Some(g);
                continue;
            }
            let _shared = QUIET.read();
            let mut l = live.borrow_mut();
            let groups = feed.groups(s, data);
            let seeds = Some(Seeds::Host(feed.host_seeds(s)));
            let Live { x, chain, .. } = &mut *l;
            if let Some(t) = self.step(x, start, &groups, chain, seeds) {
                pending.push(t);
                eager.push((s, who(&groups)));
            }
            l.chain.advance();
            s += 1;
        }
        drop(graph);
        let live = live.into_inner();
        *x = live.x;
        pending.push(live.table.reshape([steps * width]));
        collect(pending, eager, &full, width, feed)
    }

    /// One full step from `feed`'s tables at the chain's step index: nothing from the host.
    fn full_step(&self, live: &RefCell<Live>, feed: &Feed, start: &[Tensor<2>], data: &FedData) {
        FULL_STEPS.fetch_add(1, Ordering::SeqCst);
        let mut l = live.borrow_mut();
        let Live { x, chain, table } = &mut *l;
        let index = chain.index();
        let group = feed.full_group(&index, data).expect("the split is kept");
        let seeds = feed.seeds_at(&index);
        let numbers = self.step(x, start, &[group], chain, seeds.as_ref().map(Seeds::Device));
        if let Some(t) = numbers {
            let w = table.dims()[1];
            let row = t.reshape([1, w]);
            table
                .inplace(|tb| tb.select_assign(0, index, row, burn::tensor::IndexingUpdateOp::Add));
        }
        chain.advance();
    }
}

/// Say once in the process that a capture recorded no hardware graph.
fn say_fallback() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!(
            "run.graph: burn recorded no hardware graph on this device; the captured step runs again as a closure each step (the same values, without the graph's speed)"
        );
    });
}

/// Every trained step's numbers in step order, from one read: the eager steps' (each its own
/// part), then the full steps' rows of the table (the last part).
fn collect(
    pending: Deferred,
    eager: Vec<(usize, Vec<(usize, usize)>)>,
    full: &[usize],
    width: usize,
    feed: &Feed,
) -> Trained {
    let mut parts = pending.read();
    let table = parts.pop().unwrap_or_default();
    let all_k: Vec<(usize, usize)> = (0..width.min(feed.clients()))
        .map(|k| (k, feed.batch()))
        .collect();
    let mut out: Trained = (eager.into_iter().zip(parts))
        .filter(|(_, n)| !n.is_empty())
        .map(|((s, w), n)| (s, w, n))
        .collect();
    for &s in full {
        let row = table.get(s * width..(s + 1) * width).unwrap_or_default();
        out.push((s, all_k.clone(), row.to_vec()));
    }
    out.sort_by_key(|t| t.0);
    out
}
