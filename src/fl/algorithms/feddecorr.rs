//! FedDecorr (§5, the FedACG code's `Decorr` client), β = 0.01: loss `CE + β·L_decorr(f)`
//! with f the batch's features (ResNet-18's pooled 512-d, the CNN's last hidden layer),
//! `L_decorr = mean(offdiag(zᵀz)²)/N` over the batch-standardised features (see
//! `fl::losses::decorrelation`). β = 0 is FedAvg. Server as FedAvg.

use burn::tensor::Tensor;

use crate::config::validate::non_negative;
use crate::error::Result;
use crate::fl::losses::{cross_entropy, decorrelation};
use crate::fl::plan::{ClientPlan, LocalLoss, LossInput};
use crate::fl::strategy::{FromSetup, Setup, Strategy};

crate::key_table! {
    /// `[feddecorr]`
    pub struct Keys in "feddecorr" {
        pub beta: f64 = 0.01 => non_negative;
    }
}

pub struct FedDecorr {
    beta: f64,
}

impl LocalLoss for FedDecorr {
    fn loss(&self, input: &LossInput) -> Tensor<1> {
        let ce = cross_entropy(input.out.logits.clone(), input.targets.clone(), input.kept);
        let dec = decorrelation(input.out.features.clone());
        ce + dec.mul_scalar(self.beta as f32)
    }

    /// The decorrelation reads the batch's statistics: a padded batch would change them.
    fn pads(&self) -> bool {
        false
    }
}

impl FromSetup for FedDecorr {
    const AVERAGES: bool = true;

    fn from_setup(s: &Setup) -> Result<Self> {
        Ok(FedDecorr {
            beta: s.keys::<Keys>()?.beta,
        })
    }
}

impl Strategy for FedDecorr {
    fn plan(&self, _client: usize) -> ClientPlan<'_> {
        ClientPlan {
            loss: (self.beta != 0.0).then_some(self as &dyn LocalLoss),
            ..ClientPlan::default()
        }
    }
}
