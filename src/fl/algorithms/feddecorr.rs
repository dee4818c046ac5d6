//! FedDecorr (§5, the FedACG code's `Decorr` client), β = 0.01: loss `CE + β·L_decorr(f)`
//! with f the batch's features (ResNet-18's pooled 512-d, the CNN's last hidden layer),
//! `L_decorr = mean(offdiag(zᵀz)²)/N` over the batch-standardised features (see
//! `fl::losses::decorrelation`). β = 0 is FedAvg. Server as FedAvg.

use burn::tensor::Tensor;

use super::FedAvg;
use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::algorithm::{Aggregate, Algorithm, LossInput, RoundInfo, ServerLog, Setup};
use crate::fl::losses::{cross_entropy, decorrelation};

crate::key_table! {
    /// `[feddecorr]`
    pub struct Keys in "feddecorr" {
        pub beta: f64 = 0.01 => non_negative;
    }
}

pub struct FedDecorr {
    beta: f64,
    server: FedAvg,
}

impl FedDecorr {
    pub fn new(s: &Setup) -> Result<Self> {
        Ok(FedDecorr {
            beta: s.spec.keys::<Keys>()?.beta,
            server: FedAvg::new(s.spec.fl.global_lr),
        })
    }
}

impl Algorithm for FedDecorr {
    fn local_loss(&self, input: &LossInput) -> Option<Tensor<1>> {
        if self.beta == 0.0 {
            return None;
        }
        let ce = cross_entropy(input.out.logits.clone(), input.targets.clone());
        let dec = decorrelation(input.out.features.clone());
        Some(ce + dec.mul_scalar(self.beta as f32))
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
