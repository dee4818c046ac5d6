//! `fedrun check --time`: how long a spec's run will take on this machine and backend, from a
//! short timed probe of its model on its data: a warm-up round and timed rounds of a few local
//! steps on as many clients as the run trains at once (in a round that has the algorithm's
//! once-a-round work, and where that comes every few rounds one without it too), and the
//! evaluation of a slice of the test set, scaled to the spec's work (rounds, each client's
//! steps, evaluations).

use std::time::Instant;

use crate::config::Spec;
use crate::data::FedData;
use crate::error::Result;
use crate::fl::engine::Experiment;
use crate::metrics::summary::readable_duration;

/// Local steps of the timed round (after a warm-up round of as many).
const PROBE_STEPS: usize = 3;
/// Evaluation batches timed (after a warm-up evaluation of as many).
const PROBE_EVAL_BATCHES: usize = 2;

/// What the probe measured: a local step, a chunk's one-off work each round (what does not
/// grow with the steps: the parameters sent and received, Mime's full-data gradient), an
/// evaluation of the whole test set; in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    pub per_step: f64,
    pub per_chunk: f64,
    pub eval: f64,
}

/// The work of a run as the estimate counts it.
#[derive(Clone, Debug, PartialEq)]
pub struct Work {
    pub rounds: usize,
    pub clients_per_round: usize,
    /// Clients trained at once (a cohort, or the client workers): a chunk.
    pub width: usize,
    /// Each client's local steps a round (its epochs over its data, or `local.steps`).
    pub client_steps: Vec<usize>,
    pub evaluations: usize,
}

/// The expected largest of `k` draws (with replacement) from `values`: what a chunk of `k`
/// clients waits for. The mean for k = 1.
pub fn expected_max(values: &[usize], k: usize) -> f64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len() as f64;
    let k = k.max(1) as i32;
    v.iter()
        .enumerate()
        .map(|(i, &s)| s as f64 * (((i + 1) as f64 / n).powi(k) - (i as f64 / n).powi(k)))
        .sum()
}

/// A chunk's one-off work averaged over the rounds: `with` measured in a round that has the
/// algorithm's periodic once-a-round work, `without` in one that has not, the work coming every
/// `every` rounds.
pub fn periodic_chunk(with: f64, without: Option<f64>, every: usize) -> f64 {
    match without {
        None => with,
        Some(without) => without + (with - without).max(0.0) / every.max(1) as f64,
    }
}

/// `(a round's seconds, the run's seconds)`: each round's chunks, each its one-off work and its
/// longest client's steps; the evaluations on top.
pub fn run_seconds(w: &Work, p: &Probe) -> (f64, f64) {
    let width = w.width.clamp(1, w.clients_per_round.max(1));
    let chunks = w.clients_per_round.div_ceil(width) as f64;
    let longest = expected_max(&w.client_steps, width);
    let round = chunks * (p.per_chunk + p.per_step * longest);
    (
        round,
        w.rounds as f64 * round + w.evaluations as f64 * p.eval,
    )
}

/// The line `check --time` prints: the estimate, what it rests on and what it leaves out.
pub fn estimate(spec: &Spec, data: FedData) -> Result<String> {
    Ok(estimate_seconds(spec, data)?.1)
}

/// The run's estimated seconds on this machine, and [`estimate`]'s line.
pub fn estimate_seconds(spec: &Spec, mut data: FedData) -> Result<(f64, String)> {
    let (fl, l) = (&spec.fl, &spec.local);
    let client_steps: Vec<usize> = match l.epochs {
        0 => vec![l.steps; data.client_sizes().len().max(1)],
        e => data
            .round_sizes(spec.data.deal, fl.clients_per_round)
            .iter()
            .map(|&n| e * n.div_ceil(l.batch_size.max(1)))
            .collect(),
    };
    let test = data.test.len();
    let slice = (fl.eval_batch_size * PROBE_EVAL_BATCHES).min(test).max(1);
    data.test = data.test.first(slice);
    let mut probe = spec.clone();
    probe.local.epochs = 0;
    probe.local.steps = PROBE_STEPS;
    let mut ex = Experiment::new(&probe, data)?;
    // the clients the run trains at once: its cohort, or its client workers
    let width = match ex.cohort {
        1 => ex.trainers.len(),
        k => k,
    }
    .clamp(1, fl.clients_per_round.max(1));
    ex.spec.fl.clients_per_round = width;
    // a warm-up round (a GPU backend compiles its kernels in it), then, in one round that has
    // the algorithm's once-a-round work, a chunk of the probe's steps and one of twice as many:
    // what grows with the steps, and what does not; where that work comes every few rounds
    // (Mime-LAMB's syncs), a chunk in a round without it too
    ex.round_stats(0)?;
    let mut timed = |t: usize, steps: usize| -> Result<f64> {
        ex.spec.local.steps = steps;
        let clock = Instant::now();
        ex.round_stats(t)?;
        Ok(clock.elapsed().as_secs_f64())
    };
    let every = crate::fl::algorithms::extra_work(spec).map_or(1, |e| e.every.max(1));
    let with = if every > 1 { every - 1 } else { 1 };
    let (short, long) = (timed(with, PROBE_STEPS)?, timed(with, 2 * PROBE_STEPS)?);
    let per_step = ((long - short) / PROBE_STEPS as f64).max(0.0);
    let steps = per_step * PROBE_STEPS as f64;
    let without = match every {
        1 => None,
        _ => Some(timed(with + 1, PROBE_STEPS)? - steps),
    };
    let per_chunk = periodic_chunk(short - steps, without, every).max(0.0);
    ex.evaluate()?;
    let t = Instant::now();
    ex.evaluate()?;
    let eval = t.elapsed().as_secs_f64() * test as f64 / slice as f64;
    let every = fl.eval_every.max(1);
    let work = Work {
        rounds: fl.rounds,
        clients_per_round: fl.clients_per_round,
        width,
        client_steps,
        evaluations: fl.rounds / every + usize::from(fl.rounds % every != 0),
    };
    let p = Probe {
        per_step,
        per_chunk,
        eval,
    };
    let (round, total) = run_seconds(&work, &p);
    let line = format!(
        "time: about {} on this machine with run.backend = \"{}\" ({:.3} s a round of training: {:.4} s a local step, {:.4} s of one-off work for each {width} client(s) trained at once, each such chunk waiting for its longest client; {:.3} s a test evaluation), timed on chunks of {PROBE_STEPS} and {} local steps and {slice} of the {test} test samples; loading, checkpoints and the warm-up round (where a GPU backend compiles its kernels) are not counted, and a run's rounds vary by a tenth or more",
        readable_duration(total),
        spec.run.backend,
        round,
        per_step,
        per_chunk,
        eval,
        2 * PROBE_STEPS
    );
    Ok((total, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(steps: Vec<usize>, width: usize) -> Work {
        Work {
            rounds: 10,
            clients_per_round: 8,
            width,
            client_steps: steps,
            evaluations: 2,
        }
    }

    const P: Probe = Probe {
        per_step: 0.5,
        per_chunk: 3.0,
        eval: 7.0,
    };

    /// Per-step work scales with the steps, a chunk's one-off work with the chunks and not with
    /// the steps (Mime's full-data gradient once a client, not once a step), per-round work
    /// with the rounds, evaluations on top.
    #[test]
    fn steps_chunks_and_rounds_scale_their_own_parts() {
        let (r1, t1) = run_seconds(&work(vec![4; 5], 1), &P);
        assert_eq!(r1, 8.0 * (3.0 + 0.5 * 4.0));
        assert_eq!(t1, 10.0 * r1 + 2.0 * 7.0);
        let (r2, _) = run_seconds(&work(vec![8; 5], 1), &P);
        assert_eq!(
            r2 - r1,
            8.0 * 0.5 * 4.0,
            "the steps' part doubles, the rest stays"
        );
        let mut more = work(vec![4; 5], 1);
        more.rounds = 20;
        assert_eq!(run_seconds(&more, &P).1, 20.0 * r1 + 2.0 * 7.0);
    }

    /// Work that comes every Z rounds (Mime-LAMB's full-data gradients at the syncs) counts a Z-th
    /// of itself a round; every round, all of it.
    #[test]
    fn periodic_work_counts_its_share_of_the_rounds() {
        assert_eq!(periodic_chunk(4.0, None, 1), 4.0);
        assert_eq!(periodic_chunk(4.0, Some(1.0), 3), 2.0);
        assert_eq!(periodic_chunk(4.0, Some(1.0), 1), 4.0);
        // a chunk timed a little faster in the round with the work is no negative share
        assert_eq!(periodic_chunk(1.0, Some(1.2), 5), 1.2);
    }

    /// A chunk (a cohort, or the client workers) takes as long as its longest client: with
    /// unequal clients, wider chunks wait for longer ones, and fewer chunks run.
    #[test]
    fn a_chunk_waits_for_its_longest_client() {
        let steps = vec![1, 1, 1, 10];
        assert!(
            (expected_max(&steps, 1) - 13.0 / 4.0).abs() < 1e-12,
            "k = 1: the mean"
        );
        let four = expected_max(&steps, 4);
        // 1 − (3/4)⁴ of the draws include the long client
        assert!((four - (1.0 + 9.0 * (1.0 - 0.75f64.powi(4)))).abs() < 1e-12);
        let (one, _) = run_seconds(&work(steps.clone(), 1), &P);
        let (cohort, _) = run_seconds(&work(steps, 4), &P);
        assert_eq!(one, 8.0 * (3.0 + 0.5 * 13.0 / 4.0));
        assert_eq!(cohort, 2.0 * (3.0 + 0.5 * four));
        // equal clients: a cohort of 4 is two chunks of the same steps
        let (even, _) = run_seconds(&work(vec![5; 4], 4), &P);
        assert_eq!(even, 2.0 * (3.0 + 0.5 * 5.0));
    }
}
