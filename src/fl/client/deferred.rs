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

static READS: AtomicUsize = AtomicUsize::new(0);

/// How many reads of device tensors local training has made in this process so far.
pub fn reads() -> usize {
    READS.load(Ordering::SeqCst)
}

/// A device that failed while training (out of memory, a buffer over its limit, lost): what
/// burn said, its first and innermost lines. A read is where an asynchronous device's failure
/// shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFailed(pub String);

impl std::fmt::Display for DeviceFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl DeviceFailed {
    /// From a backend error's report: its first line and the first line of its innermost
    /// cause (the last "Caused by:" section).
    pub fn from_report(report: &str) -> Self {
        let head = |section: &str| {
            section
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.contains("acktrace") && !l.starts_with("Asked at"))
                .map(str::to_string)
        };
        let sections: Vec<&str> = report.split("Caused by:").collect();
        let first = sections.first().and_then(|s| head(s));
        let last = sections.last().and_then(|s| head(s));
        DeviceFailed(match (first, last) {
            (Some(a), Some(b)) if a != b => format!("{a} … {b}"),
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => "the device reported an error without a message".to_string(),
        })
    }
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

#[cfg(test)]
mod tests {
    use super::DeviceFailed;

    /// A failure's report as burn 0.22 words a failed allocation: its first line and its
    /// innermost cause, without the skip records and backtrace lines between.
    #[test]
    fn a_failure_is_its_first_line_and_innermost_cause() {
        let report = "An error happened during execution\nCaused by:\n  Several failures at once\nCaused by:\n  The bytes were never written (failure #377)\n  skipped `SliceAssignKernel`\nCaused by:\n  An IO error happened\nCaused by:\n  can't allocate buffer of size: 188743680\nNo backtrace available\nAsked at:\nNo backtrace available\n";
        assert_eq!(
            DeviceFailed::from_report(report).0,
            "An error happened during execution … can't allocate buffer of size: 188743680"
        );
        assert_eq!(DeviceFailed::from_report("lost\n").0, "lost");
        assert!(!DeviceFailed::from_report("").0.is_empty());
    }
}
