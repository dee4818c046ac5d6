//! `fedrun check --time`: how long a spec's run will take on this machine and backend, from a
//! short timed probe of its model on its data: a warm-up round and a timed round of a few local
//! steps on as many clients as the run trains at once, and the evaluation of a slice of the
//! test set, scaled to the spec's work (rounds, each client's steps, evaluations).

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

/// The line `check --time` prints: the estimate, what it rests on and what it leaves out.
pub fn estimate(spec: &Spec, mut data: FedData) -> Result<String> {
    let (fl, l) = (&spec.fl, &spec.local);
    let sizes = data.client_sizes();
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    let steps = match l.epochs {
        0 => l.steps as f64,
        e => e as f64 * (mean / l.batch_size.max(1) as f64).ceil(),
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
        Some(_) => spec.run.cohort,
        None => ex.trainers.len(),
    }
    .clamp(1, fl.clients_per_round.max(1));
    ex.spec.fl.clients_per_round = width;
    ex.round_stats(0)?;
    let t = Instant::now();
    ex.round_stats(1)?;
    let step = t.elapsed().as_secs_f64() / PROBE_STEPS as f64;
    ex.evaluate();
    let t = Instant::now();
    ex.evaluate();
    let eval = t.elapsed().as_secs_f64() * test as f64 / slice as f64;
    let batches = fl.clients_per_round.div_ceil(width) as f64;
    let round = batches * steps * step;
    let every = fl.eval_every.max(1);
    let evals = (fl.rounds / every + usize::from(fl.rounds % every != 0)) as f64;
    let total = fl.rounds as f64 * round + evals * eval;
    Ok(format!(
        "time: about {} on this machine with run.backend = \"{}\" ({:.3} s a round of training, {:.3} s a test evaluation), timed on {PROBE_STEPS} local steps of {width} client(s) at once and {slice} of the {test} test samples; loading, checkpoints and the first round's warm-up are not counted, and a run's rounds vary by a tenth or more",
        readable_duration(total),
        spec.run.backend,
        round,
        eval
    ))
}
