//! The per-step numbers of a device-resident training (each step's losses and pre-clip norms),
//! kept on the training device and read back once when the training ends, so that no step
//! waits for the device: on a GPU a read inside a step stalls the host until every queued
//! kernel has run, and the next step's work cannot be queued meanwhile. The numbers are the
//! same f32 values a read per step would give, recorded in the same order afterwards, so
//! the CSV does not move.
//!
//! Every read of local training's device tensors goes through [`read_f32`], which counts them
//! ([`reads`]): the tests count the reads of a client's training (one for the steps' numbers,
//! one for the trained parameters), whatever its steps.

use std::sync::atomic::{AtomicUsize, Ordering};

use burn::tensor::Tensor;

pub use crate::error::DeviceFailed;

static READS: AtomicUsize = AtomicUsize::new(0);

/// How many reads of device tensors local training has made in this process so far.
pub fn reads() -> usize {
    READS.load(Ordering::SeqCst)
}

/// Read `t` back to the host as f32 (one device read, counted).
///
/// # Errors
/// [`DeviceFailed`] when the device failed on the work that gave `t`.
pub fn read_f32<const D: usize>(t: Tensor<D>) -> Result<Vec<f32>, DeviceFailed> {
    READS.fetch_add(1, Ordering::SeqCst);
    let data = t
        .try_into_data()
        .map_err(|e| DeviceFailed::from_report(&format!("{e:?}")))?;
    Ok(data
        .convert::<f32>()
        .try_into_vec::<f32>()
        .unwrap_or_default())
}

/// Rows `[K, n]` held as tensors side by side (`[K, n_i]` each), read back as one row-major
/// `K×n` vector: in one read where `K·n` floats fit `max_floats` (a device's largest buffer;
/// None: no limit), else in a read for each run of consecutive tensors that fits, interleaved
/// row by row on the host (the same values).
///
/// # Errors
/// [`DeviceFailed`] when the device failed on the work that gave them.
pub fn read_rows(
    parts: Vec<Tensor<2>>,
    max_floats: Option<usize>,
) -> Result<Vec<f32>, DeviceFailed> {
    let k = parts.first().map_or(0, |t| t.dims()[0]);
    let max = max_floats.unwrap_or(usize::MAX);
    let mut runs: Vec<(usize, Vec<Tensor<2>>)> = Vec::new();
    for t in parts {
        let width = t.dims()[1];
        match runs.last_mut() {
            Some((w, run)) if k * (*w + width) <= max => {
                *w += width;
                run.push(t);
            }
            _ => runs.push((width, vec![t])),
        }
    }
    if runs.len() <= 1 {
        return match runs.pop() {
            Some((_, run)) => read_f32(Tensor::cat(run, 1)),
            None => Ok(Vec::new()),
        };
    }
    let read: Vec<(usize, Vec<f32>)> = runs
        .into_iter()
        .map(|(w, run)| Ok((w, read_f32(Tensor::cat(run, 1))?)))
        .collect::<Result<_, DeviceFailed>>()?;
    let mut out = Vec::with_capacity(read.iter().map(|(w, _)| k * w).sum());
    for row in 0..k {
        for (w, v) in &read {
            out.extend_from_slice(&v[row * w..(row + 1) * w]);
        }
    }
    Ok(out)
}

/// Each step's numbers, one small device tensor per step, read together at the end.
#[derive(Default)]
pub struct Deferred {
    parts: Vec<Tensor<1>>,
    lens: Vec<usize>,
}

impl Deferred {
    /// Keep a step's numbers (`[n]`) until [`Deferred::read`].
    pub fn push(&mut self, t: Tensor<1>) {
        self.lens.push(t.dims()[0]);
        self.parts.push(t);
    }

    /// All steps' numbers in one read, each step's as its own slice, in push order.
    ///
    /// # Errors
    /// [`DeviceFailed`] when the device failed on the steps.
    pub fn read(self) -> Result<Vec<Vec<f32>>, DeviceFailed> {
        if self.parts.is_empty() {
            return Ok(Vec::new());
        }
        let all = read_f32(Tensor::cat(self.parts, 0))?;
        let mut at = 0;
        Ok(self
            .lens
            .iter()
            .map(|&n| {
                let s = all.get(at..at + n).map(<[f32]>::to_vec).unwrap_or_default();
                at += n;
                s
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::read_rows;
    use burn::tensor::{Device, Tensor, TensorData};

    /// Rows read in runs of tensors are the rows read at once: three `[3, w]` tensors side by
    /// side, with room for one, two or all of them a read.
    #[test]
    fn rows_read_in_runs_are_the_rows_read_at_once() {
        let device = Device::flex();
        let part = |w: usize, at: f32| {
            let v: Vec<f32> = (0..3 * w).map(|i| at + i as f32).collect();
            Tensor::<2>::from_data(TensorData::new(v, [3, w]), &device)
        };
        let parts = || vec![part(2, 0.0), part(4, 100.0), part(1, 200.0)];
        let whole = read_rows(parts(), None).unwrap();
        assert_eq!(whole.len(), 21);
        assert_eq!(&whole[..7], &[0.0, 1.0, 100.0, 101.0, 102.0, 103.0, 200.0]);
        for max in [3 * 4, 3 * 6, 3 * 7, 1] {
            assert_eq!(
                read_rows(parts(), Some(max)).unwrap(),
                whole,
                "at most {max} floats a read"
            );
        }
    }
}
