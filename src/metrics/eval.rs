//! Test evaluation: accuracy (%) and mean cross-entropy of a parameter vector on a split, on a
//! device without autodiff, without an autodiff graph. (Spreading the batches over two
//! single-thread workers was measured no faster than flex's own two threads.) On flex each
//! batch's logits are scored on the host in f64; on a GPU backend the batches are scored on the
//! device and read once ([`super::device_eval`], where `run.graph` captures the full batches).

use burn::tensor::{Device, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};

use super::device_eval::DeviceEval;
use crate::data::{self, Augment, Split};
use crate::error::DeviceFailed;
use crate::model::Model;
use crate::model::copies::Stacked;

pub struct Evaluator {
    model: Model,
    device: Device,
    batch: usize,
    /// Where the batches are scored: on the host (flex) or on the device.
    on_device: bool,
    scoring: DeviceEval,
}

/// (correct, summed loss) of one batch.
fn eval_batch(model: &Stacked, split: &Split, chunk: &[usize], device: &Device) -> (usize, f64) {
    let (x, _) = data::batch(split, chunk, Augment::None, None, device);
    let logits = logits(model, x);
    let [b, k] = logits.dims();
    let data = logits.into_data().convert::<f32>();
    let v = data.as_slice::<f32>().expect("f32");
    let (mut correct, mut loss) = (0usize, 0f64);
    for r in 0..b {
        let row = &v[r * k..(r + 1) * k];
        let y = split.y[chunk[r]] as usize;
        let (mut best, mut mx) = (0, f32::NEG_INFINITY);
        for (j, &z) in row.iter().enumerate() {
            if z > mx {
                mx = z;
                best = j;
            }
        }
        correct += usize::from(best == y);
        let lse = mx as f64
            + row
                .iter()
                .map(|&z| ((z - mx) as f64).exp())
                .sum::<f64>()
                .ln();
        loss += lse - row[y] as f64;
    }
    (correct, loss)
}

/// One model's logits `[b, classes]`.
fn logits(model: &Stacked, x: data::Input) -> Tensor<2> {
    let l = model.logits(x);
    let [_, b, c] = l.dims();
    l.reshape([b, c])
}

impl Evaluator {
    /// `model` evaluated on `device`, a device without autodiff.
    pub fn new(model: Model, device: Device, batch: usize) -> Self {
        Evaluator {
            on_device: !crate::kernels::is_flex(&device),
            model,
            device,
            batch,
            scoring: DeviceEval::new(false),
        }
    }

    /// The device scoring's full batches captured once and replayed (`run.graph`).
    pub fn with_graph(mut self, graph: bool) -> Self {
        self.scoring = DeviceEval::new(graph);
        self
    }

    /// Score on the device on flex too (f32 sums, as a GPU backend scores; the tests'
    /// reference for the device scoring without a GPU).
    pub fn scored_on_device(mut self) -> Self {
        self.on_device = true;
        self
    }

    /// (accuracy in %, mean loss) of `params` on `split`. Batches are summed in order.
    ///
    /// # Errors
    /// [`DeviceFailed`] when the device failed on the scoring.
    pub fn evaluate(&mut self, params: &[f32], split: &Split) -> Result<(f64, f64), DeviceFailed> {
        self.evaluate_until(params, split, None)
            .map(|got| got.expect("an evaluation without a stop flag ends"))
    }

    /// As [`Evaluator::evaluate`], or None once `stop` is set: checked before each batch, so a
    /// signal ends an evaluation within one batch.
    ///
    /// # Errors
    /// [`DeviceFailed`] when the device failed on the scoring.
    pub fn evaluate_until(
        &mut self,
        params: &[f32],
        split: &Split,
        stop: Option<&AtomicBool>,
    ) -> Result<Option<(f64, f64)>, DeviceFailed> {
        let n = split.len();
        let scored = match self.on_device {
            true => (self.scoring).evaluate(
                &self.model,
                params,
                split,
                self.batch,
                &self.device,
                stop,
            )?,
            false => self.on_host(params, split, stop),
        };
        Ok(scored.map(|(correct, loss)| {
            (
                100.0 * correct as f64 / n.max(1) as f64,
                loss / n.max(1) as f64,
            )
        }))
    }

    /// (correct, summed loss) scored on the host in f64, batch by batch; None once `stop` is
    /// set.
    fn on_host(
        &self,
        params: &[f32],
        split: &Split,
        stop: Option<&AtomicBool>,
    ) -> Option<(usize, f64)> {
        let model = Stacked::frozen(&self.model, &[params], &self.device);
        let idx: Vec<usize> = (0..split.len()).collect();
        let (mut correct, mut loss) = (0usize, 0f64);
        for c in idx.chunks(self.batch) {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return None;
            }
            let (k, l) = eval_batch(&model, split, c, &self.device);
            correct += k;
            loss += l;
        }
        Some((correct, loss))
    }
}
