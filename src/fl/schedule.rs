//! The local learning-rate schedule (`local.lr_schedule`):
//! - `round` (the FedNAR code): `l = lr·d^(t+1)` for all of round t (t from 0; the decay is
//!   applied before the first round);
//! - `epoch` (the FedACG code, a LambdaLR stepped after each local epoch): `l = lr·d^(t+e)` in
//!   local epoch e of round t.

use crate::config::LocalSpec;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    lr: f64,
    decay: f64,
    per_epoch: bool,
}

impl Schedule {
    pub fn new(local: &LocalSpec) -> Schedule {
        Schedule {
            lr: local.lr,
            decay: local.lr_decay,
            per_epoch: local.lr_schedule == "epoch",
        }
    }

    /// The learning rate of local epoch `e` in round `t`.
    pub fn lr(&self, t: usize, e: usize) -> f64 {
        let power = if self.per_epoch { t + e } else { t + 1 };
        self.lr * self.decay.powi(power as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_and_epoch_schedules() {
        let mut local = LocalSpec {
            lr: 0.1,
            lr_decay: 0.5,
            ..Default::default()
        };
        let s = Schedule::new(&local);
        assert_eq!((s.lr(0, 0), s.lr(0, 3), s.lr(2, 1)), (0.05, 0.05, 0.0125));
        local.lr_schedule = "epoch".into();
        let s = Schedule::new(&local);
        assert_eq!((s.lr(0, 0), s.lr(0, 2), s.lr(2, 1)), (0.1, 0.025, 0.0125));
    }
}
