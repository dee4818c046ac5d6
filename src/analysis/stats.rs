//! Summary statistics of an accuracy curve, as the papers report them.
//!
//! - FedNAR Table 1: the final accuracy. Fed-LAMB Table 1: the best accuracy.
//! - FedACG Table 1: an exponential moving average of the per-round curve with β = 0.9, read at
//!   given rounds, and the rounds it needs to reach a target.
//!
//! EMA form (FedACG does not state it, §9): plain `s_t = β·s_{t−1} + (1−β)·a_t` with `s_{−1} = 0`
//! by default (wandb's smoothing before de-biasing); the de-biased form divides by `1 − β^(t+1)`.

/// EMA of `values` (one per evaluated row, in order).
pub fn ema(values: &[f64], beta: f64, debias: bool) -> Vec<f64> {
    let mut s = 0.0;
    values
        .iter()
        .enumerate()
        .map(|(t, &a)| {
            s = beta * s + (1.0 - beta) * a;
            if debias {
                s / (1.0 - beta.powi(t as i32 + 1))
            } else {
                s
            }
        })
        .collect()
}

/// Best value and the round it was reached at (the first such round).
pub fn best(rounds: &[usize], values: &[f64]) -> Option<(f64, usize)> {
    let mut out: Option<(f64, usize)> = None;
    for (&r, &v) in rounds.iter().zip(values) {
        if out.is_none_or(|b| v > b.0) {
            out = Some((v, r));
        }
    }
    out
}

/// The value after `n` rounds: the last row whose round index is < n.
pub fn at_round(rounds: &[usize], values: &[f64], n: usize) -> Option<f64> {
    rounds
        .iter()
        .zip(values)
        .rev()
        .find(|(r, _)| **r < n)
        .map(|(_, v)| *v)
}

/// Rounds needed to reach `target` (round index + 1 of the first row with value ≥ target), or
/// None when never reached.
pub fn rounds_to_target(rounds: &[usize], values: &[f64], target: f64) -> Option<usize> {
    rounds
        .iter()
        .zip(values)
        .find(|(_, v)| **v >= target)
        .map(|(r, _)| r + 1)
}

/// Mean and sample standard deviation (n − 1; 0 for one value).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = v.iter().sum::<f64>() / n;
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ema_plain_and_debiased_by_hand() {
        let a = [10.0, 20.0, 30.0];
        let p = ema(&a, 0.9, false);
        assert!((p[0] - 1.0).abs() < 1e-12);
        assert!((p[1] - (0.9 * 1.0 + 2.0)).abs() < 1e-12);
        assert!((p[2] - (0.9 * 2.9 + 3.0)).abs() < 1e-12);
        let d = ema(&a, 0.9, true);
        assert!((d[0] - 10.0).abs() < 1e-12);
        assert!((d[1] - 2.9 / 0.19).abs() < 1e-12);
        assert!((d[2] - 5.61 / 0.271).abs() < 1e-12);
    }

    #[test]
    fn best_final_and_targets() {
        let r = [0, 1, 2, 3, 4];
        let v = [10.0, 30.0, 25.0, 30.0, 28.0];
        assert_eq!(best(&r, &v), Some((30.0, 1)));
        assert_eq!(at_round(&r, &v, 3), Some(25.0));
        assert_eq!(at_round(&r, &v, 100), Some(28.0));
        assert_eq!(at_round(&r, &v, 0), None);
        assert_eq!(rounds_to_target(&r, &v, 26.0), Some(2));
        assert_eq!(rounds_to_target(&r, &v, 31.0), None);
        // rows only every 5 rounds
        assert_eq!(
            rounds_to_target(&[4, 9, 14], &[1.0, 2.0, 3.0], 2.0),
            Some(10)
        );
    }

    #[test]
    fn mean_and_sd_on_known_values() {
        let (m, s) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((m - 5.0).abs() < 1e-12);
        assert!((s - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
    }
}
