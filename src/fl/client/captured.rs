//! The steps of a device training from its [`Feed`] (`run.graph`): the first step eagerly (it
//! counts the model's dropout sites and the step's numbers; a training that takes a kept graph
//! knows them from it and replays its first step too), then each run of tabled steps (the full
//! ones; every one where the feed pads the short batches and the stopped clients) as one
//! closure that takes nothing from the host — the batch, the dropout seeds, the learning rate and
//! every per-row factor read from device tables at the step index, the parameters, the rule's
//! state, the index and the step's numbers written in place — captured once with burn's
//! `capture` and replayed: one CUDA graph launch a step on `cuda`, the closure run again
//! elsewhere (the same values either way). The other steps run eagerly from the same draws.
//!
//! The closure reads and writes a [`State`] that it owns. Where the clients train on the
//! cross-entropy alone (no local loss, no frozen model), the graph is kept for the trainer's next
//! training ([`Kept`]): when that training's state lists alike (the same buffers' shapes, the
//! same host numbers: [`crate::optim::buffers`]), its values are written into the kept state's
//! buffers in place and the graph replays from its first step on, with no new capture.
//!
//! A capture is process-global on CUDA (no other thread may allocate meanwhile): each eager
//! device step holds [`crate::kernels::capture::quiet`], and a capture holds it alone.
//!
//! A capture or replay that the backend refuses loses the state: the training reports
//! [`Fed::Refused`], and the trainer trains the clients again eagerly from their inputs. A
//! device that failed on the work ([`Fed::Device`]) ends the training.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use burn::tensor::{Device, Tensor};

use super::chain::DeviceChain;
use super::deferred::{Deferred, DeviceFailed};
use super::feed::Feed;
use super::objectives::Objectives;
use super::resident::{Resident, Trained, who};
use super::work::{LocalStats, Work};
use crate::kernels::capture::{self, Failed, Graph, WARMUP, quiet};
use crate::model::{Model, Seeds};
use crate::optim::buffers::{Buf, Buffers, alike, refill};

/// The tabled steps run by the captured closure in this process (a replay or a capture's run).
static FULL_STEPS: AtomicUsize = AtomicUsize::new(0);

/// The steps of captured trainings run eagerly in this process (a first step, a short batch).
static EAGER_STEPS: AtomicUsize = AtomicUsize::new(0);

/// How many steps of captured trainings ran eagerly in this process so far (the tests' proof
/// that a kept graph replays a training's first step too).
pub fn eager_steps() -> usize {
    EAGER_STEPS.load(Ordering::SeqCst)
}

/// How many steps the captured closure has run in this process so far (the tests' proof that a
/// training took the captured path).
pub fn full_steps() -> usize {
    FULL_STEPS.load(Ordering::SeqCst)
}

/// What the captured closure and the eager steps between its replays read and write.
pub(super) struct State {
    x: Vec<Tensor<2>>,
    start: Vec<Tensor<2>>,
    chain: DeviceChain,
    feed: Feed,
    /// The tabled steps' numbers `[S, w]`, each written at its step index.
    table: Tensor<2>,
}

impl State {
    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        self.x.buffers(out);
        self.start.buffers(out);
        self.chain.buffers(out);
        self.feed.buffers(out);
        out.push(Buf::F2(&mut self.table));
    }
}

type Replay = Box<dyn FnMut() + Send>;

/// A captured graph kept from one training to the trainer's next, with the state it replays on.
pub struct Kept {
    graph: Graph<Replay>,
    state: Arc<Mutex<State>>,
}

impl Kept {
    /// The kept training's numbers' width and its model's dropout sites.
    fn shape(&self) -> (usize, usize) {
        let st = lock(&self.state);
        (st.table.dims()[1], st.feed.sites())
    }

    /// Write `fresh`'s values into the kept state in place, if the two list alike.
    fn take(&self, fresh: &mut State) -> bool {
        let mut kept = lock(&self.state);
        let (mut to, mut from) = (Vec::new(), Vec::new());
        kept.buffers(&mut to);
        fresh.buffers(&mut from);
        if !alike(&to, &from) {
            return false;
        }
        refill(to, from);
        kept.feed.adopt(&mut fresh.feed);
        true
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a training from a feed ended without its stats.
pub(super) enum Fed {
    /// The backend refused a capture or a replay (said in the log when refused): train again
    /// without a graph.
    Refused,
    /// The device failed on the training's work.
    Device(DeviceFailed),
}

impl From<Failed> for Fed {
    fn from(_: Failed) -> Self {
        Fed::Refused
    }
}

impl From<DeviceFailed> for Fed {
    fn from(d: DeviceFailed) -> Self {
        Fed::Device(d)
    }
}

/// The numbers of a training's steps so far: the eager steps' (each its own part, with its
/// clients), and the tabled steps run by the closure (their numbers in the state's table).
#[derive(Default)]
struct Run {
    pending: Deferred,
    eager: Vec<(usize, Vec<(usize, usize)>)>,
    full: Vec<usize>,
}

impl Resident<'_> {
    /// The training of `works` from `feed` (their steps drawn ahead) with `chain`: the first
    /// step eager, then the captured closure for the tabled steps (the trainer's `kept` graph
    /// where the clients' objectives are plain and the state lists alike); Δ_k lands in
    /// `out[k]`.
    ///
    /// # Errors
    /// [`Fed::Refused`] when the backend refused a capture or a replay: the training's state is
    /// lost (and `kept` with it), and the caller trains again from its inputs without a graph;
    /// [`Fed::Device`] when the device failed on the training's work.
    pub(super) fn train_fed(
        &self,
        feed: Feed,
        chain: DeviceChain,
        works: &[Work],
        kept: &mut Option<Kept>,
        out: &mut [Vec<f32>],
    ) -> Result<Vec<LocalStats>, Fed> {
        let (x, start) = self.rows(works, &chain);
        let (steps, k) = (feed.steps(), works.len());
        let inner = feed.device().clone().without_autodiff();
        let table = Tensor::zeros([1, 1], &inner);
        let mut st = State {
            x,
            start,
            chain,
            feed,
            table,
        };
        let mut run = Run::default();
        let fresh = super::draw::stopped(works) || steps == 0;
        let reuse = self.objectives.is_plain() && !fresh;
        if let Some(kp) = kept.take_if(|_| reuse) {
            // the kept graph's shape: its numbers' width and the model's dropout sites
            let (width, sites) = kp.shape();
            st.feed.with_sites(sites);
            st.table = Tensor::zeros([steps, width], &inner);
            if kp.take(&mut st) {
                let mut graph = Some(kp.graph);
                let state = kp.state;
                self.drive(
                    &state,
                    &mut graph,
                    || unreachable_make(),
                    0,
                    works,
                    &mut run,
                )?;
                let done = self.finish(&state, run, width, works, out)?;
                *kept = graph.map(|graph| Kept { graph, state });
                return Ok(done);
            }
        }
        let width = match fresh {
            true => k,
            false => self.first_step(&mut st, &mut run, k),
        };
        st.feed.with_sites(self.sites.get() as usize);
        st.table = Tensor::zeros([steps.max(1), width], &inner);
        if !self.objectives.is_plain() {
            let state = Mutex::new(st);
            let mut graph = None;
            self.drive(
                &state,
                &mut graph,
                || || self.full_step(&mut lock(&state)),
                1,
                works,
                &mut run,
            )?;
            drop(graph);
            return self
                .finish(&state, run, width, works, out)
                .map_err(Fed::from);
        }
        let (state, mut graph) = (Arc::new(Mutex::new(st)), None);
        let (model, device, s) = (self.model.clone(), self.device.clone(), Arc::clone(&state));
        let make = move || -> Replay {
            let (model, device, s) = (model.clone(), device.clone(), Arc::clone(&s));
            Box::new(move || plain_step(&model, &device, &s, k))
        };
        self.drive(&state, &mut graph, make, 1, works, &mut run)?;
        let done = self.finish(&state, run, width, works, out)?;
        *kept = graph.map(|graph| Kept { graph, state });
        Ok(done)
    }

    /// Step 0, eager, on `st`: the width of a full step's numbers (K losses, and K norms when
    /// the chain has them, as step 0's numbers show).
    fn first_step(&self, st: &mut State, run: &mut Run, k: usize) -> usize {
        match self.eager_step(st, 0, run) {
            Some((numbers, clients)) if numbers > clients => 2 * k,
            _ => k,
        }
    }

    /// Steps `from` on: replayed where tabled and a graph exists, captured (`make`'s closure)
    /// at the first run of enough tabled steps, else eager.
    ///
    /// # Errors
    /// [`Failed`] when the backend refused the capture or a replay (the state is lost).
    fn drive<F: FnMut()>(
        &self,
        state: &Mutex<State>,
        graph: &mut Option<Graph<F>>,
        mut make: impl FnMut() -> F,
        from: usize,
        works: &[Work],
        run: &mut Run,
    ) -> Result<(), Failed> {
        let steps = lock(state).feed.steps();
        let mut s = from;
        while s < steps && !super::draw::stopped(works) {
            let tabled = lock(state).feed.tabled_run(s);
            if let (true, Some(g)) = (tabled > 0, graph.as_mut()) {
                // SAFETY: every tensor the closure touches is owned by the state, which the
                // closure (or this call) holds past the replay
                unsafe { capture::replay(g) }?;
                run.full.push(s);
                s += 1;
                continue;
            }
            if graph.is_none() && tabled > WARMUP {
                let (g, done) = capture::record(self.device, make())?;
                run.full.extend(s..s + done);
                s += done;
                *graph = Some(g);
                continue;
            }
            let _ = self.eager_step(&mut lock(state), s, run);
            s += 1;
        }
        Ok(())
    }

    /// Step `s` eagerly from the feed's draws: how many numbers it left and for how many
    /// clients, when it trained any.
    fn eager_step(&self, st: &mut State, s: usize, run: &mut Run) -> Option<(usize, usize)> {
        EAGER_STEPS.fetch_add(1, Ordering::SeqCst);
        let _shared = quiet();
        let groups = st.feed.groups(s);
        let seeds = Some(Seeds::Host(st.feed.host_seeds(s)));
        let State {
            x, start, chain, ..
        } = st;
        let numbers = self.step(x, start, &groups, chain, seeds);
        chain.advance();
        let t = numbers?;
        let who = who(&groups);
        let got = (t.dims()[0], who.len());
        run.pending.push(t);
        run.eager.push((s, who));
        Some(got)
    }

    /// One tabled step from the feed's tables at the chain's step index: nothing from the host.
    fn full_step(&self, st: &mut State) {
        FULL_STEPS.fetch_add(1, Ordering::SeqCst);
        let State {
            x,
            start,
            chain,
            feed,
            table,
        } = st;
        let index = chain.index();
        let group = feed.tabled_group(&index).expect("the split is kept");
        let seeds = feed.seeds_at(&index);
        let numbers = self.step(x, start, &[group], chain, seeds.as_ref().map(Seeds::Device));
        if let Some(t) = numbers {
            let w = table.dims()[1];
            let row = t.reshape([1, w]);
            capture::in_place(table, |tb| {
                tb.select_assign(0, index, row, burn::tensor::IndexingUpdateOp::Add)
            });
        }
        chain.advance();
    }

    /// The training's end from `state`: its numbers in one read, the rows in one more (Δ_k into
    /// `out[k]`), the rule's moments in one more; each client's stats.
    fn finish(
        &self,
        state: &Mutex<State>,
        mut run: Run,
        width: usize,
        works: &[Work],
        out: &mut [Vec<f32>],
    ) -> Result<Vec<LocalStats>, DeviceFailed> {
        let st = lock(state);
        let steps = st.feed.steps().max(1);
        run.pending.push(st.table.clone().reshape([steps * width]));
        let trained = collect(run, width, works.len(), &st.feed)?;
        self.end(&st.chain, &trained, st.x.clone(), works, out)
    }
}

/// A kept graph is never captured again: its `make` is not called.
fn unreachable_make() -> Replay {
    Box::new(|| unreachable!("a kept graph is replayed, not captured"))
}

/// A tabled step of clients that train on the cross-entropy alone, from what a kept graph owns.
fn plain_step(model: &Model, device: &Device, state: &Mutex<State>, k: usize) {
    let objectives = Objectives::plain(model, k);
    let r = Resident::new(model, device, &objectives);
    r.full_step(&mut lock(state));
}

/// Every trained step's numbers in step order, from one read: the eager steps' (each its own
/// part), then the tabled steps' rows of the table (the last part), each of `width` numbers (the
/// `k` clients' losses, then their norms), of which a step's clients' losses are kept ([`Feed::who`]).
fn collect(run: Run, width: usize, k: usize, feed: &Feed) -> Result<Trained, DeviceFailed> {
    let mut parts = run.pending.read()?;
    let table = parts.pop().unwrap_or_default();
    let mut out: Trained = (run.eager.into_iter().zip(parts))
        .filter(|(_, n)| !n.is_empty())
        .map(|((s, w), n)| (s, w, n))
        .collect();
    for &s in &run.full {
        let row = table.get(s * width..(s + 1) * width).unwrap_or_default();
        let (losses, norms) = row.split_at(k.min(row.len()));
        let who = feed.who(s);
        let numbers = (who.iter().map(|&(c, _)| losses[c]))
            .chain(norms.iter().copied())
            .collect();
        out.push((s, who, numbers));
    }
    out.sort_by_key(|t| t.0);
    Ok(out)
}
