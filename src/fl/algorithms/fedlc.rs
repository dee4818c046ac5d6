//! FedLC (§5, the FedACG code's `LC` client), τ = 1: the cross-entropy is replaced by the
//! calibrated one, `−mean_b log softmax(z − τ·n_c^{−1/4})_y` with `n_c` the client's raw
//! **count** of class c; a class the client does not hold gets −∞ (probability 0; here
//! −1e9, whose exp is 0 exactly, because −∞ gives NaN in the one-hot product). The code
//! computes it with plain `exp`; here log-softmax, which is the same value unless a logit
//! exceeds ~88 (where the code overflows). τ = 0 is plain cross-entropy. Server as FedAvg.

use burn::tensor::{Tensor, TensorData};

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::losses::{MASKED, calibrated_cross_entropy};
use crate::fl::plan::{ClientPlan, LocalLoss, LossInput};
use crate::fl::strategy::{FromSetup, Setup, Strategy};

crate::key_table! {
    /// `[fedlc]`
    pub struct Keys in "fedlc" {
        pub tau: f64 = 1.0 => non_negative;
    }
}

/// The per-class offsets `−τ·n_c^{−1/4}` of a client with class counts `counts`.
pub fn offsets(tau: f64, counts: &[usize]) -> Vec<f32> {
    counts
        .iter()
        .map(|&n| {
            if n == 0 {
                MASKED
            } else {
                (-tau * (n as f64).powf(-0.25)) as f32
            }
        })
        .collect()
}

/// A client's calibrated cross-entropy.
pub struct Calibrated {
    offsets: Vec<f32>,
    /// The offsets on each training device, uploaded at its first step (no step uploads them
    /// again: a captured step may not).
    on_device: std::sync::Mutex<Vec<(String, Tensor<2>)>>,
}

impl LocalLoss for Calibrated {
    fn loss(&self, input: &LossInput) -> Tensor<1> {
        let logits = input.out.logits.clone();
        let device = logits.device();
        let key = format!("{device:?}");
        let mut held = self.on_device.lock().unwrap_or_else(|e| e.into_inner());
        let offsets = match held.iter().find(|(d, _)| *d == key) {
            Some((_, t)) => t.clone(),
            None => {
                let data = TensorData::new(self.offsets.clone(), [1, self.offsets.len()]);
                let t = Tensor::<2>::from_data(data, &device);
                held.push((key, t.clone()));
                t
            }
        };
        drop(held);
        calibrated_cross_entropy(logits, offsets, input.targets.clone(), input.kept)
    }
}

pub struct FedLc {
    tau: f64,
    /// Each client's loss; empty when τ = 0 (plain cross-entropy).
    losses: Vec<Calibrated>,
}

impl FromSetup for FedLc {
    const AVERAGES: bool = true;

    fn from_setup(s: &Setup) -> Result<Self> {
        let tau = s.keys::<Keys>()?.tau;
        let losses = if tau > 0.0 {
            s.class_counts
                .iter()
                .map(|c| Calibrated {
                    offsets: offsets(tau, c),
                    on_device: Default::default(),
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(FedLc { tau, losses })
    }
}

impl Strategy for FedLc {
    fn dealt(&mut self, client: usize, class_counts: &[usize]) -> Result<()> {
        if let Some(l) = self.losses.get_mut(client) {
            *l = Calibrated {
                offsets: offsets(self.tau, class_counts),
                on_device: Default::default(),
            };
        }
        Ok(())
    }

    fn plan(&self, client: usize) -> ClientPlan<'_> {
        ClientPlan {
            loss: self.losses.get(client).map(|l| l as &dyn LocalLoss),
            ..ClientPlan::default()
        }
    }
}
