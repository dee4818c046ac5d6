//! A split's copy on a GPU, kept for the whole run (what `device_batch.rs` gathers batches
//! from), and the budget all the copies of a process share (`run.device_data_mb`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use burn::tensor::{Device, Int, Tensor};

/// The bytes of splits the devices may hold (`run.device_data_mb`), and the bytes held.
static BUDGET: AtomicU64 = AtomicU64::new(2_048_000_000);
static HELD: AtomicU64 = AtomicU64::new(0);

/// Put `run.device_data_mb` in force for this process (0: every batch gathered on the host).
pub fn set_budget_mb(mb: f64) {
    BUDGET.store((mb.max(0.0) * 1e6) as u64, Ordering::Relaxed);
}

/// A split's copy on one device (without autodiff), made when a batch is first gathered on a GPU
/// backend; refused (and not tried again) beyond the budget or for a second device.
#[derive(Default)]
pub struct Resident(Mutex<Option<Option<OnDevice>>>);

impl Clone for Resident {
    /// A copy of a split uploads its own, when asked.
    fn clone(&self) -> Self {
        Resident::default()
    }
}

impl std::fmt::Debug for Resident {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.lock().map(|g| matches!(*g, Some(Some(_))));
        write!(f, "Resident({})", held.unwrap_or(false))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        if let Ok(Some(Some(on))) = self.0.get_mut() {
            HELD.fetch_sub(on.bytes, Ordering::Relaxed);
        }
    }
}

/// A split on one device: its features, its labels, the bytes it holds.
#[derive(Clone)]
pub(super) struct OnDevice {
    pub device: Device,
    pub x: Held,
    pub y: Tensor<1, Int>,
    pub bytes: u64,
    /// What every image batch reads: the identity pixel map `[1, h·w]` (no augmentation) and
    /// each channel's fill `[c]`, 0 and FedACG's black; None for tokens.
    pub constants: Option<Constants>,
}

#[derive(Clone)]
pub(super) struct Constants {
    pub identity: Tensor<2, Int>,
    pub zero: Tensor<1>,
    pub black: Tensor<1>,
}

#[derive(Clone)]
pub(super) enum Held {
    /// `[n, c, h·w]`, normalised.
    Images(Tensor<3>),
    /// `[n, len]`.
    Tokens(Tensor<2, Int>),
}

impl Resident {
    /// The copy on `device` (without autodiff): made by `make` the first time (None: refused,
    /// not tried again), None where another device holds it.
    pub(super) fn on(
        &self,
        device: &Device,
        make: impl FnOnce() -> Option<OnDevice>,
    ) -> Option<OnDevice> {
        let mut cell = self.0.lock().ok()?;
        if cell.is_none() {
            *cell = Some(make());
        }
        match cell.as_ref() {
            Some(Some(on)) if on.device == *device => Some(on.clone()),
            _ => None,
        }
    }
}

/// Take `bytes` of the budget; false (and nothing taken) where they do not fit.
pub(super) fn reserve(bytes: u64) -> bool {
    let held = HELD.fetch_add(bytes, Ordering::Relaxed) + bytes;
    if held > BUDGET.load(Ordering::Relaxed) {
        HELD.fetch_sub(bytes, Ordering::Relaxed);
        return false;
    }
    true
}
