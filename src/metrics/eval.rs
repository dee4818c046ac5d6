//! Test evaluation: accuracy (%) and mean cross-entropy of a parameter vector on a split, on a
//! device without autodiff, without an autodiff graph. (Spreading the batches over two
//! single-thread workers was measured no faster than flex's own two threads.) On flex each
//! batch's logits are scored on the host in f64; on a GPU backend each batch's correct count and
//! summed loss stay on the device and the evaluation reads them once at its end, not a batch's
//! logits each batch (a read waits for every queued kernel).

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::data::{self, Augment, Split};
use crate::model::Model;
use crate::model::copies::Stacked;

pub struct Evaluator {
    model: Model,
    device: Device,
    batch: usize,
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

/// One batch's `[correct, summed loss]` on the device (f32; a GPU backend's evaluation).
fn eval_batch_device(
    model: &Stacked,
    split: &Split,
    chunk: &[usize],
    device: &Device,
) -> Tensor<1> {
    let (x, y) = data::batch(split, chunk, Augment::None, None, device);
    let logits = logits(model, x);
    let b = chunk.len();
    let correct = logits.clone().argmax(1).reshape([b]).equal(y.clone());
    let correct = correct.int().sum().float();
    let picked = log_softmax(logits, 1).gather(1, y.reshape([b, 1]));
    Tensor::cat(vec![correct, picked.sum().neg()], 0)
}

/// One model's logits `[b, classes]`.
fn logits(model: &Stacked, x: data::Input) -> Tensor<2> {
    let l = model.logits(x);
    let [_, b, c] = l.dims();
    l.reshape([b, c])
}

/// The batches' `[correct, summed loss]` pairs read once, summed in batch order.
fn read_sums(parts: Vec<Tensor<1>>) -> (usize, f64) {
    if parts.is_empty() {
        return (0, 0.0);
    }
    let v = Tensor::cat(parts, 0)
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .unwrap_or_default();
    v.chunks(2).fold((0, 0.0), |(c, l), p| {
        (c + p[0].round() as usize, l + f64::from(p[1]))
    })
}

impl Evaluator {
    /// `model` evaluated on `device`, a device without autodiff.
    pub fn new(model: Model, device: Device, batch: usize) -> Self {
        Evaluator {
            model,
            device,
            batch,
        }
    }

    /// (accuracy in %, mean loss) of `params` on `split`. Batches are summed in order.
    pub fn evaluate(&mut self, params: &[f32], split: &Split) -> (f64, f64) {
        self.evaluate_until(params, split, None)
            .expect("an evaluation without a stop flag ends")
    }

    /// As [`Evaluator::evaluate`], or None once `stop` is set: checked before each batch, so a
    /// signal ends an evaluation within one batch.
    pub fn evaluate_until(
        &mut self,
        params: &[f32],
        split: &Split,
        stop: Option<&AtomicBool>,
    ) -> Option<(f64, f64)> {
        let n = split.len();
        let model = Stacked::frozen(&self.model, &[params], &self.device);
        let idx: Vec<usize> = (0..n).collect();
        let (mut correct, mut loss) = (0usize, 0f64);
        let on_device = !crate::kernels::is_flex(&self.device);
        let (mut stopped, mut parts) = (false, Vec::new());
        for c in idx.chunks(self.batch) {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                stopped = true;
                break;
            }
            if on_device {
                parts.push(eval_batch_device(&model, split, c, &self.device));
                continue;
            }
            let (k, l) = eval_batch(&model, split, c, &self.device);
            correct += k;
            loss += l;
        }
        if on_device && !stopped {
            (correct, loss) = read_sums(parts);
        }
        let result = (
            100.0 * correct as f64 / n.max(1) as f64,
            loss / n.max(1) as f64,
        );
        (!stopped).then_some(result)
    }
}
