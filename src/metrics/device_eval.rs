//! An evaluation scored on a GPU backend: each batch's correct count and summed loss stay on the
//! device, and the evaluation reads them once at its end (a read waits for every queued kernel).
//!
//! With `run.graph`, the *full* batches (every batch but a short last one) are one closure that
//! takes nothing from the host: the parameters in one buffer `[1, n]`, the batch's rows read
//! from a `[batches, b]` table at an index on the device, the split kept on the device, each
//! batch's pair written into a `[batches, 2]` table at the index. The closure is captured once
//! (burn's `capture`: a CUDA graph on `cuda`; its warm-up runs are real batches, and where there
//! are fewer batches than it runs, the tables' extra rows repeat the first) and replayed batch
//! after batch; the next evaluation of the same split writes its parameters into the same
//! buffer, sets the index and the table back to 0 in place, and replays with no new capture.
//! The short last batch, of its own shape, is a second closure of the same kind, captured and
//! kept the same way (its parameters copied on the device from the first's). Both ways score a
//! batch with the same kernels and sum the pairs on the host in batch order, so they give the
//! eager scoring's numbers. A capture, replay or read that the backend refuses drops the kept
//! states, and that evaluation scores eagerly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};

use crate::data::{self, Augment, Split};
use crate::error::DeviceFailed;
use crate::kernels::capture::{self, Failed, Graph, WARMUP, quiet};
use crate::model::Model;
use crate::model::copies::Stacked;
use crate::optim::buffers::{Buf, refill};

type Replay = Box<dyn FnMut() + Send>;

/// What the captured closure reads and writes.
struct State {
    params: Tensor<2>,
    rows: Tensor<2, Int>,
    index: Tensor<1, Int>,
    table: Tensor<2>,
    split: data::Kept,
}

/// A run of a split's batches captured as one batch's closure, kept across evaluations.
struct Kept {
    batches: Batches,
    state: Arc<Mutex<State>>,
    graph: Option<Graph<Replay>>,
}

/// The device scoring of an evaluator: eager, or with its full batches captured (`graph`).
#[derive(Default)]
pub struct DeviceEval {
    graph: bool,
    /// The full batches' captured closure.
    kept: Option<Kept>,
    /// The short last batch's (its own shape: its own graph).
    tail: Option<Kept>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DeviceEval {
    /// Scoring whose full batches are captured where `graph` is set.
    pub fn new(graph: bool) -> Self {
        DeviceEval {
            graph,
            kept: None,
            tail: None,
        }
    }

    /// (correct, summed loss) of `params` on `split` in batches of `batch`; None once `stop`
    /// is set (checked before each batch).
    ///
    /// # Errors
    /// [`DeviceFailed`] when the device failed on the eager scoring (a captured scoring that
    /// fails is dropped and scored eagerly).
    pub fn evaluate(
        &mut self,
        model: &Model,
        params: &[f32],
        split: &Split,
        batch: usize,
        device: &Device,
        stop: Option<&AtomicBool>,
    ) -> Result<Option<(usize, f64)>, DeviceFailed> {
        let full = split.len() / batch.max(1);
        if self.graph && full > 0 && data::kept(split, device).is_some() {
            match self.captured(model, params, split, batch, device, stop) {
                Ok(got) => return Ok(got),
                // the split's kept states are dropped: the next evaluation captures anew
                Err(_) => (self.kept, self.tail) = (None, None),
            }
        }
        eager(model, params, split, batch, device, stop)
    }

    /// [`DeviceEval::evaluate`] with the full batches replayed from the split's kept graph
    /// (captured now where there is none).
    ///
    /// # Errors
    /// [`Failed`] when the backend refused the capture or a replay, or the sums could not be
    /// read back: the kept state is then not to be trusted.
    fn captured(
        &mut self,
        model: &Model,
        params: &[f32],
        split: &Split,
        batch: usize,
        device: &Device,
        stop: Option<&AtomicBool>,
    ) -> Result<Option<(usize, f64)>, Failed> {
        let (at, full) = (std::ptr::from_ref(split) as usize, split.len() / batch);
        let tail = split.len() - full * batch;
        let whole = Batches::new((at, split.len(), batch), 0, full);
        let Some(main) = Kept::take(&mut self.kept, whole, split, device)? else {
            return Ok(None);
        };
        main.reset(params, None, device);
        if !main.run(model, device, stop)? {
            return Ok(None);
        }
        let mut parts = vec![main.pairs()];
        if tail > 0 {
            let last = Batches::new((at, split.len(), tail), full * batch, 1);
            let Some(end) = Kept::take(&mut self.tail, last, split, device)? else {
                return Ok(None);
            };
            // the parameters copied on the device from the full batches' buffer
            let source = lock(&main.state).params.clone();
            end.reset(params, Some(source), device);
            if !end.run(model, device, stop)? {
                return Ok(None);
            }
            parts.push(end.pairs());
        }
        let _shared = quiet();
        read_sums(parts)
            .map(Some)
            .map_err(|e| capture::refused(&e.0))
    }
}

/// [`DeviceEval::evaluate`] batch by batch, eagerly.
fn eager(
    model: &Model,
    params: &[f32],
    split: &Split,
    batch: usize,
    device: &Device,
    stop: Option<&AtomicBool>,
) -> Result<Option<(usize, f64)>, DeviceFailed> {
    let _shared = quiet();
    let flat = upload(params, device);
    let stacked = stacked(model, &flat);
    let idx: Vec<usize> = (0..split.len()).collect();
    let mut parts = Vec::new();
    for c in idx.chunks(batch.max(1)) {
        if stopped(stop) {
            return Ok(None);
        }
        let (x, y) = data::batch(split, c, Augment::None, None, device);
        parts.push(score(&stacked, x, y));
    }
    read_sums(parts).map(Some)
}

/// A run of equal batches of a split: `(split's address, its size, the batch size)`, the row
/// the first batch starts at, how many batches.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Batches {
    key: (usize, usize, usize),
    first: usize,
    count: usize,
}

impl Batches {
    fn new(key: (usize, usize, usize), first: usize, count: usize) -> Self {
        Batches { key, first, count }
    }
}

impl Kept {
    /// `slot`'s state for `batches` of `split` (made now where it holds another run's).
    ///
    /// # Errors
    /// [`Failed`] where the split is not kept on the device.
    fn take<'k>(
        slot: &'k mut Option<Kept>,
        batches: Batches,
        split: &Split,
        device: &Device,
    ) -> Result<Option<&'k mut Kept>, Failed> {
        if slot.as_ref().is_none_or(|k| k.batches != batches) {
            let kept = Kept::new(batches, split, device);
            *slot = Some(kept.ok_or_else(|| Failed("the split is not kept".into()))?);
        }
        Ok(slot.as_mut())
    }

    /// The state of `batches` of `split` on `device` (its rows table made now); None where the
    /// split is not kept on the device.
    fn new(batches: Batches, split: &Split, device: &Device) -> Option<Kept> {
        let (b, count) = (batches.key.2, batches.count);
        // at least as many rows as a capture runs the closure (its warm-up and its recording):
        // past the batches, the first ones again, their pairs not read
        let n = count.max(WARMUP + 1);
        let rows: Vec<i64> = (0..n * b)
            .map(|i| (batches.first + i % (count * b)) as i64)
            .collect();
        let state = State {
            params: Tensor::zeros([1, 1], device),
            rows: Tensor::from_data(TensorData::new(rows, [n, b]), device),
            index: Tensor::zeros([1], device),
            table: Tensor::zeros([n, 2], device),
            split: data::kept(split, device)?,
        };
        Some(Kept {
            batches,
            state: Arc::new(Mutex::new(state)),
            graph: None,
        })
    }

    /// Every batch of the run, replayed from the kept graph (captured now where there is none);
    /// false once `stop` is set (checked before each batch).
    ///
    /// # Errors
    /// [`Failed`] when the backend refused the capture or a replay.
    fn run(
        &mut self,
        model: &Model,
        device: &Device,
        stop: Option<&AtomicBool>,
    ) -> Result<bool, Failed> {
        let mut b = 0;
        while b < self.batches.count {
            if stopped(stop) {
                return Ok(false);
            }
            if let Some(g) = self.graph.as_mut() {
                // SAFETY: the closure owns its state through an Arc held past the replay
                unsafe { capture::replay(g) }?;
                b += 1;
                continue;
            }
            let (m, d, s) = (model.clone(), device.clone(), Arc::clone(&self.state));
            let closure: Replay = Box::new(move || full_batch(&m, &d, &mut lock(&s)));
            let (g, done) = capture::record(device, closure)?;
            self.graph = Some(g);
            b += done;
        }
        Ok(true)
    }

    /// The run's batches' pairs, `[2 · count]` (a capture's warm-up may have run past them, on
    /// rows not read).
    fn pairs(&self) -> Tensor<1> {
        let count = self.batches.count;
        let _shared = quiet();
        let st = lock(&self.state);
        st.table.clone().narrow(0, 0, count).reshape([2 * count])
    }

    /// `params` into the parameters' buffer (copied from `source` on the device where given and
    /// a graph replays), the index and the table to 0, each in place (the buffers a kept graph
    /// replays on); the buffers made where there is no graph yet.
    fn reset(&mut self, params: &[f32], source: Option<Tensor<2>>, device: &Device) {
        let _shared = quiet();
        let mut st = lock(&self.state);
        if self.graph.is_none() {
            st.params = upload(params, device);
            st.index = Tensor::zeros([1], device);
            st.table = Tensor::zeros(st.table.dims(), device);
            return;
        }
        let mut flat = source.unwrap_or_else(|| upload(params, device));
        let mut index = Tensor::zeros([1], device);
        let mut table = Tensor::zeros(st.table.dims(), device);
        let State {
            params: p,
            index: i,
            table: t,
            ..
        } = &mut *st;
        refill(
            vec![Buf::F2(p), Buf::I1(i), Buf::F2(t)],
            vec![Buf::F2(&mut flat), Buf::I1(&mut index), Buf::F2(&mut table)],
        );
    }
}

/// One full batch at the state's index: scored, its pair written at the index, the index moved
/// on. Nothing from the host.
fn full_batch(model: &Model, device: &Device, st: &mut State) {
    let b = st.rows.dims()[1];
    let rows = st.rows.clone().select(0, st.index.clone()).reshape([b]);
    let Some((x, y)) = st.split.gather(rows, None, Augment::None, device) else {
        return;
    };
    let pair = score(&stacked(model, &st.params), x, y).reshape([1, 2]);
    let index = st.index.clone();
    capture::in_place(&mut st.table, |t| {
        t.select_assign(0, index, pair, IndexingUpdateOp::Add)
    });
    capture::in_place(&mut st.index, |i| i.add_scalar(1));
}

fn stopped(stop: Option<&AtomicBool>) -> bool {
    stop.is_some_and(|s| s.load(Ordering::Relaxed))
}

/// `params` as one `[1, n]` tensor on `device`.
fn upload(params: &[f32], device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(params.to_vec(), [1, params.len()]), device)
}

/// One copy of `model` whose parameters are the views of `flat` (`[1, n]`) at the layout's
/// ranges.
fn stacked<'m>(model: &'m Model, flat: &Tensor<2>) -> Stacked<'m> {
    let n = flat.dims()[1];
    let flat = flat.clone().reshape([n]);
    let params = (model.layout().ranges().into_iter())
        .map(|r| flat.clone().slice(r))
        .collect();
    Stacked::of(model, params, 1)
}

/// One batch's `[correct, summed loss]` (f32).
fn score(model: &Stacked, x: data::Input, y: Tensor<1, Int>) -> Tensor<1> {
    let l = model.logits(x);
    let [_, b, c] = l.dims();
    let logits = l.reshape([b, c]);
    let correct = logits.clone().argmax(1).reshape([b]).equal(y.clone());
    let correct = correct.int().sum().float();
    let picked = log_softmax(logits, 1).gather(1, y.reshape([b, 1]));
    Tensor::cat(vec![correct, picked.sum().neg()], 0)
}

/// The batches' `[correct, summed loss]` pairs read once, summed in batch order.
///
/// # Errors
/// [`DeviceFailed`] when the device could not give them (a buffer a refused recording left
/// unbound, a failed allocation).
fn read_sums(parts: Vec<Tensor<1>>) -> Result<(usize, f64), DeviceFailed> {
    if parts.is_empty() {
        return Ok((0, 0.0));
    }
    let data = Tensor::cat(parts, 0)
        .try_into_data()
        .map_err(|e| DeviceFailed::from_report(&format!("{e:?}")))?;
    let v = (data.convert::<f32>().try_into_vec::<f32>())
        .map_err(|e| DeviceFailed::from_report(&format!("{e:?}")))?;
    Ok(v.chunks(2).fold((0, 0.0), |(c, l), p| {
        (c + p[0].round() as usize, l + f64::from(p[1]))
    }))
}
