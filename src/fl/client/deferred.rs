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
