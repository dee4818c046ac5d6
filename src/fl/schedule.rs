//! The local learning-rate schedule (`local.lr_schedule`):
//! - `round` (the FedNAR code): `l = lr·d^(t+1)` for all of round t (t from 0; the decay is
//!   applied before the first round);
//! - `epoch` (the FedACG code, a LambdaLR stepped after each local epoch): `l = lr·d^(t+e)` in
//!   local epoch e of round t;
//! - `step` (Fed-LAMB): `l = lr·f^k` in round t, k the number of `local.lr_milestones` ≤ t
//!   (f = `local.lr_step_factor`, 0.1: the rate is divided by 10 at rounds 30 and 70).

use crate::config::{LocalSpec, LrSchedule};

#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    lr: f64,
    decay: f64,
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Round,
    Epoch,
    Step { milestones: Vec<usize>, factor: f64 },
}

impl Schedule {
    pub fn new(local: &LocalSpec) -> Schedule {
        let kind = match local.lr_schedule {
            LrSchedule::Round => Kind::Round,
            LrSchedule::Epoch => Kind::Epoch,
            LrSchedule::Step => Kind::Step {
                milestones: local.lr_milestones.clone(),
                factor: local.lr_step_factor,
            },
        };
        Schedule {
            lr: local.lr,
            decay: local.lr_decay,
            kind,
        }
    }

    /// The learning rate of local epoch `e` in round `t`.
    pub fn lr(&self, t: usize, e: usize) -> f64 {
        match &self.kind {
            Kind::Round => self.lr * self.decay.powi(t as i32 + 1),
            Kind::Epoch => self.lr * self.decay.powi((t + e) as i32),
            Kind::Step { milestones, factor } => {
                let k = milestones.iter().filter(|&&m| m <= t).count();
                self.lr * factor.powi(k as i32)
            }
        }
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
        local.lr_schedule = LrSchedule::Epoch;
        let s = Schedule::new(&local);
        assert_eq!((s.lr(0, 0), s.lr(0, 2), s.lr(2, 1)), (0.1, 0.025, 0.0125));
        local.lr_schedule = LrSchedule::Step;
        local.lr_milestones = vec![30, 70];
        let s = Schedule::new(&local);
        let at = |t| s.lr(t, 4);
        assert_eq!((at(0), at(29)), (0.1, 0.1));
        assert!((at(30) - 0.01).abs() < 1e-15 && (at(69) - 0.01).abs() < 1e-15);
        assert!((at(70) - 0.001).abs() < 1e-15);
    }
}
