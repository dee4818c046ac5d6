//! Summary statistics of an accuracy curve, as the papers report them.
//!
//! - FedNAR Table 1: the final accuracy. Fed-LAMB Table 1: the best accuracy.
//! - FedACG Table 1: an exponential moving average of the per-round curve with β = 0.9, read at
//!   given rounds, and the rounds it needs to reach a target.
//!
//! EMA form (FedACG does not state it): `s_t = β·s_{t−1} + (1−β)·a_t` with `s_{−1} = 0`,
//! de-biased by default (`fedrun report`; wandb's display form), that is divided by
//! `1 − β^(t+1)`; `--no-debias` gives the plain form. The EMA runs over rounds: a row evaluated
//! g rounds after the one before counts as g rounds at its value (`fl.eval_every > 1`).

/// EMA of `values`, one per evaluated row at `rounds` (increasing, counted from 1): a row g
/// rounds after the one before weighs `1 − β^g`, as g rounds at its value would
/// (`s ← β^g·s + (1 − β^g)·a`); de-biased, divided by the weight taken so far. Every round
/// evaluated, this is `s_t = β·s_{t−1} + (1−β)·a_t` over `1 − β^(t+1)`. A row at or before the
/// row before it (a round-0 row, say) counts as one round.
pub fn ema(rounds: &[usize], values: &[f64], beta: f64, debias: bool) -> Vec<f64> {
    let (mut s, mut w, mut last) = (0.0, 0.0, 0usize);
    rounds
        .iter()
        .zip(values)
        .map(|(&r, &a)| {
            let keep = beta.powi(r.saturating_sub(last).max(1) as i32);
            last = r;
            s = keep * s + (1.0 - keep) * a;
            w = keep * w + (1.0 - keep);
            if debias { s / w } else { s }
        })
        .collect()
}

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Higher,
    Lower,
}

impl Direction {
    /// A loss is better lower; anything else (an accuracy) higher.
    pub fn of(metric: &str) -> Direction {
        if metric.contains("loss") {
            Direction::Lower
        } else {
            Direction::Higher
        }
    }

    /// Whether `a` is better than `b`.
    fn better(self, a: f64, b: f64) -> bool {
        match self {
            Direction::Higher => a > b,
            Direction::Lower => a < b,
        }
    }

    /// Whether `v` has reached `target`.
    pub fn reached(self, v: f64, target: f64) -> bool {
        match self {
            Direction::Higher => v >= target,
            Direction::Lower => v <= target,
        }
    }
}

/// Best value and the round it was reached at (the first such round).
pub fn best(rounds: &[usize], values: &[f64], dir: Direction) -> Option<(f64, usize)> {
    let mut out: Option<(f64, usize)> = None;
    for (&r, &v) in rounds.iter().zip(values) {
        if out.is_none_or(|b| dir.better(v, b.0)) {
            out = Some((v, r));
        }
    }
    out
}

/// The value after `n` rounds (rounds count completed rounds, from 1): the last row whose round
/// is ≤ n; None when the run has fewer than `n` rounds, or no row by round `n`.
pub fn at_round(rounds: &[usize], values: &[f64], n: usize) -> Option<f64> {
    let done = rounds.last().copied().unwrap_or(0);
    if done < n {
        return None;
    }
    rounds
        .iter()
        .zip(values)
        .rev()
        .find(|(r, _)| **r <= n)
        .map(|(_, v)| *v)
}

/// Rounds needed to reach `target`: the round of the first row that reaches it (from below
/// for `Higher`, from above for `Lower`), or None when never reached.
pub fn rounds_to_target(
    rounds: &[usize],
    values: &[f64],
    target: f64,
    dir: Direction,
) -> Option<usize> {
    rounds
        .iter()
        .zip(values)
        .find(|(_, v)| dir.reached(**v, target))
        .map(|(r, _)| *r)
}

/// The bytes communicated until each evaluated round: a row's `down_bytes + up_bytes` (those of
/// its round) times the rounds since the row before, summed; exact when every round is
/// evaluated, or when an algorithm's traffic is the same every round.
pub fn cumulative_bytes(rounds: &[usize], per_round: &[f64]) -> Vec<f64> {
    let mut last = 0;
    let mut total = 0.0;
    rounds
        .iter()
        .zip(per_round)
        .map(|(&r, &b)| {
            total += b * r.saturating_sub(last) as f64;
            last = r;
            total
        })
        .collect()
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
        let p = ema(&[1, 2, 3], &a, 0.9, false);
        assert!((p[0] - 1.0).abs() < 1e-12);
        assert!((p[1] - (0.9 * 1.0 + 2.0)).abs() < 1e-12);
        assert!((p[2] - (0.9 * 2.9 + 3.0)).abs() < 1e-12);
        let d = ema(&[1, 2, 3], &a, 0.9, true);
        assert!((d[0] - 10.0).abs() < 1e-12);
        assert!((d[1] - 2.9 / 0.19).abs() < 1e-12);
        assert!((d[2] - 5.61 / 0.271).abs() < 1e-12);
    }

    #[test]
    fn ema_of_rows_every_few_rounds_is_the_ema_of_the_held_curve() {
        // rows at rounds 5, 10, 15 (`fl.eval_every = 5`): the EMA of the per-round curve that
        // holds each row's value for the 5 rounds it stands for
        let (r, a) = ([5, 10, 15], [10.0, 40.0, 25.0]);
        let held: Vec<f64> = a.iter().flat_map(|&v| [v; 5]).collect();
        let every: Vec<usize> = (1..=15).collect();
        for debias in [false, true] {
            let full = ema(&every, &held, 0.9, debias);
            let rows = ema(&r, &a, 0.9, debias);
            for (k, &round) in r.iter().enumerate() {
                assert!(
                    (rows[k] - full[round - 1]).abs() < 1e-12,
                    "{debias} {round}"
                );
            }
            // read as one row a round, the rows would weigh a tenth each: a different curve
            let naive = ema(&[1, 2, 3], &a, 0.9, debias);
            assert!((naive[1] - rows[1]).abs() > 1.0, "{debias}");
        }
        // a constant curve's de-biased EMA is that constant, at any spacing
        let d = ema(&[0, 1, 4, 9], &[7.0; 4], 0.9, true);
        assert!(d.iter().all(|v| (v - 7.0).abs() < 1e-12), "{d:?}");
    }

    #[test]
    fn best_final_and_targets() {
        // rounds count rounds completed, from 1
        let r = [1, 2, 3, 4, 5];
        let v = [10.0, 30.0, 25.0, 30.0, 28.0];
        let up = Direction::Higher;
        assert_eq!(best(&r, &v, up), Some((30.0, 2)));
        assert_eq!(best(&r, &v, Direction::Lower), Some((10.0, 1)));
        assert_eq!(at_round(&r, &v, 3), Some(25.0));
        assert_eq!(at_round(&r, &v, 5), Some(28.0));
        // past the run's end there is no value (a 5-round run has no value after 100 rounds)
        assert_eq!(at_round(&r, &v, 6), None);
        assert_eq!(at_round(&r, &v, 100), None);
        assert_eq!(at_round(&r, &v, 0), None);
        assert_eq!(rounds_to_target(&r, &v, 26.0, up), Some(2));
        assert_eq!(rounds_to_target(&r, &v, 31.0, up), None);
        // a loss reaches its target from above
        assert_eq!(rounds_to_target(&r, &v, 26.0, Direction::Lower), Some(1));
        assert_eq!(
            rounds_to_target(&[1, 2], &[3.0, 2.0], 2.5, Direction::Lower),
            Some(2)
        );
        // rows only every 5 rounds: the value after 7 rounds is the row of round 5
        assert_eq!(
            rounds_to_target(&[5, 10, 15], &[1.0, 2.0, 3.0], 2.0, up),
            Some(10)
        );
        assert_eq!(at_round(&[5, 10, 15], &[1.0, 2.0, 3.0], 7), Some(1.0));
        assert_eq!(at_round(&[5, 10, 15], &[1.0, 2.0, 3.0], 4), None);
    }

    #[test]
    fn mean_and_sd_on_known_values() {
        let (m, s) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((m - 5.0).abs() < 1e-12);
        assert!((s - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
    }
}
