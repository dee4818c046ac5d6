//! FedLC (§5, the FedACG code's `LC` client), τ = 1: the cross-entropy is replaced by the
//! calibrated one, `−mean_b log softmax(z − τ·n_c^{−1/4})_y` with `n_c` the client's raw
//! **count** of class c; a class the client does not hold gets −∞ (probability 0; here
//! −1e9, whose exp is 0 exactly, because −∞ gives NaN in the one-hot product). The code
//! computes it with plain `exp`; here log-softmax, which is the same value unless a logit
//! exceeds ~88 (where the code overflows). τ = 0 is plain cross-entropy. Server as FedAvg.

use burn::tensor::{Tensor, TensorData};

use super::FedAvg;
use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::algorithm::{Aggregate, Algorithm, LossInput, RoundInfo, ServerLog, Setup};
use crate::fl::losses::{MASKED, calibrated_cross_entropy};

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

pub struct FedLc {
    on: bool,
    offsets: Vec<Vec<f32>>,
    server: FedAvg,
}

impl FedLc {
    pub fn new(s: &Setup) -> Result<Self> {
        let tau = s.spec.keys::<Keys>()?.tau;
        Ok(FedLc {
            on: tau > 0.0,
            offsets: s.class_counts.iter().map(|c| offsets(tau, c)).collect(),
            server: FedAvg::new(s.spec.fl.global_lr),
        })
    }
}

impl Algorithm for FedLc {
    fn local_loss(&self, input: &LossInput) -> Option<Tensor<1>> {
        if !self.on {
            return None;
        }
        let off = &self.offsets[input.client];
        let logits = input.out.logits.clone();
        let offsets = Tensor::<2>::from_data(
            TensorData::new(off.clone(), [1, off.len()]),
            &logits.device(),
        );
        Some(calibrated_cross_entropy(
            logits,
            offsets,
            input.targets.clone(),
        ))
    }

    fn server_update(
        &mut self,
        info: &RoundInfo,
        global: &mut [f32],
        agg: &Aggregate,
    ) -> ServerLog {
        self.server.server_update(info, global, agg)
    }
}
