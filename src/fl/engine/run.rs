//! The outer run loop: rounds, evaluation, the CSV, checkpoints, divergence and progress, in a
//! run folder ([`RunDir`]).

use std::time::Instant;

use super::experiment::Experiment;
use super::options::RunOptions;
use super::resources::{available_memory, check_batches, check_spec, check_state};
use super::round::Stop;
use super::run_dir::{Progress, RunDir};
use crate::config::Spec;
use crate::data;
use crate::error::Result;
use crate::metrics::csv::{CsvWriter, Row};
use crate::metrics::summary::{Status, Summary};

/// The message of a run that has not ended (yet).
const RUNNING: &str = "running, or stopped before the end";

/// The message of a run stopped by a signal after `round` rounds.
pub fn stopped_message(round: usize) -> String {
    format!("stopped by a signal after round {round}; run the same command to resume")
}

/// Run the experiment a spec describes, writing `<out>/<name>/`: `spec.toml`, `rounds.csv`,
/// `summary.json` and `checkpoint.bin`. An existing folder with a checkpoint is resumed (its
/// spec must match); `force` starts afresh. Nothing is written before the spec and the data
/// have been checked.
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<Summary> {
    let mut dir = RunDir::open(&opts.out, &spec.run.name)?;
    if let Some(s) = dir.finished(spec, opts.force)? {
        eprintln!(
            "{} is already {} (use --force to run it again)",
            dir.path().display(),
            s.status
        );
        return Ok(s);
    }
    let resume = dir.resume_point(spec, opts.force)?;
    let budget = opts.memory_budget.or_else(available_memory);
    if let Some(b) = budget {
        check_spec(spec, b)?;
    }
    let data = data::load(spec, opts.data_dir.as_deref())?;
    eprintln!("{}", data.describe());
    if let Some(b) = budget {
        check_batches(spec, &data, b)?;
    }
    let mut ex = Experiment::new(spec, data)?;
    if let Some(b) = budget {
        let (clients, vectors) = (ex.data.clients.len(), ex.alg.per_client_vectors());
        check_state(spec, clients, vectors, ex.layout.total, b)?;
    }
    eprintln!(
        "model {}: {} parameters; algorithm {}{}",
        spec.model.kind,
        ex.layout.total,
        spec.fl.algorithm,
        if spec.local.nar { " + FedNAR" } else { "" }
    );
    // Only now touch the output folder.
    dir.prepare(opts.force)?;
    let restored = match resume {
        Some(_) => {
            let (p, csv) = dir.restore(&mut ex)?;
            eprintln!("resuming {} at round {}", dir.path().display(), p.next);
            Some((p, csv))
        }
        None => None,
    };
    dir.write_spec(spec)?;
    let (progress, mut csv) = match restored {
        Some(r) => r,
        None => (Progress::default(), dir.new_csv()?),
    };
    dir.write_summary(&Summary {
        status: Status::Interrupted,
        name: spec.run.name.clone(),
        message: RUNNING.into(),
        ..Default::default()
    })?;
    rounds(&mut ex, &dir, &mut csv, progress, opts)
}

/// Round t, and the test evaluation when `evaluate`: the CSV row and (accuracy, loss). A
/// non-finite loss in training or evaluation stops the run the same way.
fn round_and_eval(
    ex: &mut Experiment,
    t: usize,
    evaluate: bool,
) -> std::result::Result<(Row, Option<(f64, f64)>), Stop> {
    let row = ex.round(t)?;
    if !evaluate {
        return Ok((row, None));
    }
    let (acc, loss) = ex.evaluate();
    if loss.is_finite() {
        Ok((row, Some((acc, loss))))
    } else {
        Err(Stop::Diverged {
            round: t,
            client: None,
            message: format!("non-finite test loss in round {t}"),
        })
    }
}

/// The rounds of this call, from `p.next`; the run's summary.
fn rounds(
    ex: &mut Experiment,
    dir: &RunDir,
    csv: &mut CsvWriter,
    mut p: Progress,
    opts: &RunOptions,
) -> Result<Summary> {
    let (total, eval_every, every) = (
        ex.spec.fl.rounds,
        ex.spec.fl.eval_every,
        ex.spec.run.checkpoint_every,
    );
    let name = ex.spec.run.name.clone();
    let start = p.next;
    let bar = Bar::new(opts.progress, total, start);
    let (t0, elapsed0) = (Instant::now(), p.elapsed_s);
    let now = || elapsed0 + t0.elapsed().as_secs_f64();
    let stop_at = opts
        .max_rounds_this_call
        .map(|m| (start + m).min(total))
        .unwrap_or(total);
    for t in start..stop_at {
        let is_last = t + 1 == total;
        let evaluate = (t + 1) % eval_every == 0 || is_last;
        let (mut row, eval) = match round_and_eval(ex, t, evaluate) {
            Ok(r) => r,
            Err(Stop::Failed(e)) => return Err(e),
            Err(Stop::Diverged {
                round,
                client,
                message,
            }) => {
                bar.abandon();
                p.elapsed_s = now();
                let mut s = p.summary(&name, Status::Diverged, message.clone());
                s.rounds = round;
                s.diverged_round = Some(round);
                s.diverged_client = client;
                dir.write_summary(&s)?;
                eprintln!("diverged: {message}");
                return Ok(s);
            }
        };
        p.next = t + 1;
        if let Some((acc, loss)) = eval {
            (row.test_acc, row.test_loss, row.elapsed_s) = (acc, loss, now());
            p.evaluated(t, acc, loss);
            csv.write(&row)?;
            bar.accuracy(acc);
        }
        bar.position(p.next);
        if is_last || (every > 0 && p.next.is_multiple_of(every)) {
            p.elapsed_s = now();
            dir.save(ex, csv, &p)?;
        }
        if opts.stopping() {
            break;
        }
    }
    bar.finish();
    p.elapsed_s = now();
    // this call's pace; a call that had nothing left to run reports the whole run's
    let pace = if p.next > start {
        t0.elapsed().as_secs_f64() / (p.next - start) as f64
    } else {
        p.elapsed_s / p.next.max(1) as f64
    };
    let complete = p.next == total;
    let mut s = if complete {
        p.summary(&name, Status::Complete, String::new())
    } else {
        dir.save(ex, csv, &p)?;
        let message = match opts.stopping() {
            true => stopped_message(p.next),
            false => RUNNING.into(),
        };
        p.summary(&name, Status::Interrupted, message)
    };
    s.seconds_per_round = pace;
    dir.write_summary(&s)?;
    Ok(s)
}

/// The progress bar, when asked for.
struct Bar(Option<indicatif::ProgressBar>);

impl Bar {
    fn new(show: bool, rounds: usize, start: usize) -> Self {
        Bar(show.then(|| {
            let b = indicatif::ProgressBar::new(rounds as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} rounds [{elapsed_precise} < {eta_precise}] {msg}",
            ) {
                b.set_style(style);
            }
            b.set_position(start as u64);
            b
        }))
    }

    fn accuracy(&self, acc: f64) {
        if let Some(b) = &self.0 {
            b.set_message(format!("test acc {acc:.2}%"));
        }
    }

    fn position(&self, done: usize) {
        if let Some(b) = &self.0 {
            b.set_position(done as u64);
        }
    }

    fn abandon(&self) {
        if let Some(b) = &self.0 {
            b.abandon();
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
