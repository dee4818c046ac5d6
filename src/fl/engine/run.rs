//! The outer run loop: rounds, evaluation, the CSV, checkpoints, divergence and progress, in a
//! run folder ([`RunDir`]).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::experiment::Experiment;
use super::options::RunOptions;
use super::resources::{available_memory, check_batches, check_spec, check_state, check_work};
use super::round::Stop;
use super::run_dir::{Progress, RunDir};
use crate::config::Spec;
use crate::data;
use crate::error::{Error, Result};
use crate::metrics::csv::{CsvWriter, Row};
use crate::metrics::provenance::{Invocation, Phases, Record};
use crate::metrics::summary::{Status, Summary};

/// The message of a run that has not ended (yet).
const RUNNING: &str = "running, or stopped before the end";

/// The message of a run stopped by a signal after `round` rounds.
pub fn stopped_message(round: usize) -> String {
    format!(
        "stopped by a signal after round {round}; run the same command to resume from the checkpoint after round {round}"
    )
}

/// Run the experiment a spec describes, writing `<out>/<name>/`: `spec.toml`, `rounds.csv`,
/// `summary.json` and `checkpoint.bin`. An existing folder with a checkpoint is resumed (its
/// spec must match); `force` starts afresh. Nothing is written before the spec and the data
/// have been checked.
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<Summary> {
    let started = Instant::now();
    let spec = &data::recorded(spec, opts.data_dir.as_deref());
    let mut dir = RunDir::open(&opts.out, &spec.run.name, opts.parse_spec)?;
    if let Some(s) = dir.finished(spec, opts.force)? {
        eprintln!(
            "{} is already {} (use --force to run it again)",
            dir.path().display(),
            s.status
        );
        return Ok(s);
    }
    let resume = dir.resume_point(spec, opts.force)?;
    check_work(spec, None)?;
    let budget = opts.memory_budget.or_else(available_memory);
    if let Some(b) = budget {
        check_spec(spec, b)?;
    }
    let mut phases = Phases::default();
    let data = data::load(spec, opts.data_dir.as_deref())?;
    phases.load_data_s = started.elapsed().as_secs_f64();
    eprintln!("{}", data.describe());
    check_work(spec, Some(&data))?;
    if let Some(b) = budget {
        check_batches(spec, &data, b)?;
    }
    let mut ex = Experiment::new(spec, data)?;
    ex.stop = opts.stop.clone();
    phases.build_s = started.elapsed().as_secs_f64() - phases.load_data_s;
    if let Some(b) = budget {
        let (clients, vectors) = (ex.members.size(), ex.alg.state().per_client_vectors());
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
    ex.spill_client_state(dir.path(), resume.is_none())?;
    let restored = match resume {
        Some(_) => {
            let (p, csv) = dir.restore(&mut ex)?;
            eprintln!(
                "resuming {} after round {} of {} (its checkpoint): round {} next",
                dir.path().display(),
                p.next,
                spec.fl.rounds,
                p.next + 1
            );
            Some((p, csv))
        }
        None => {
            say_restart(dir.path());
            None
        }
    };
    dir.write_spec(spec)?;
    let (progress, mut csv) = match restored {
        Some(r) => r,
        None => (Progress::default(), dir.new_csv()?),
    };
    // where the run stands (a resumed run's rounds, not 0), until its next summary
    dir.write_summary(&progress.summary(&spec.run.name, Status::Interrupted, RUNNING.into()))?;
    let data_dir = data::path_of(spec, opts.data_dir.as_deref());
    let inv = Invocation::start(&data_dir, spec.run.backend.as_str(), progress.next + 1);
    let mut record = Record::start(dir.path(), inv, started)?;
    let s = rounds(&mut ex, &dir, &mut csv, progress, opts, &mut phases)?;
    record.finish(dir.path(), s.rounds, phases)?;
    Ok(s)
}

/// Round t, and the test evaluation when `evaluate`: the CSV row and (accuracy, loss). A
/// non-finite loss in training or evaluation stops the run the same way.
fn round_and_eval(
    ex: &mut Experiment,
    t: usize,
    evaluate: bool,
    phases: &mut Phases,
) -> std::result::Result<(Row, Option<(f64, f64)>), Stop> {
    let clock = Instant::now();
    let row = ex.round(t)?;
    phases.train_s += clock.elapsed().as_secs_f64();
    let stopping = ex.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
    if !evaluate || stopping {
        return Ok((row, None));
    }
    let clock = Instant::now();
    let evaluated = ex.evaluate_or_stop().map_err(Stop::Failed)?;
    phases.eval_s += clock.elapsed().as_secs_f64();
    // stopped by a signal within the evaluation: the caller discards the round
    let Some((acc, loss)) = evaluated else {
        return Ok((row, None));
    };
    if loss.is_finite() {
        Ok((row, Some((acc, loss))))
    } else {
        Err(Stop::Diverged {
            round: t + 1,
            client: None,
            message: format!("non-finite test loss in round {}", t + 1),
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
    phases: &mut Phases,
) -> Result<Summary> {
    let (total, eval_every, every) = (
        ex.spec.fl.rounds,
        ex.spec.fl.eval_every,
        ex.spec.run.checkpoint_every,
    );
    let name = ex.spec.run.name.clone();
    let start = p.next;
    let bar = Bar::new(opts.progress, &name, total, start);
    let (t0, elapsed0) = (Instant::now(), p.elapsed_s);
    let now = || elapsed0 + t0.elapsed().as_secs_f64();
    let stop_at = opts
        .max_rounds_this_call
        .map(|m| (start + m).min(total))
        .unwrap_or(total);
    // the round the last checkpoint was written after (a resume starts at one), and where the
    // run stood at the last row rounds.csv holds
    let mut saved = (start > 0).then_some(start);
    let mut written = p;
    let (minutes, mut last_save) = (ex.spec.run.checkpoint_minutes, Instant::now());
    for t in start..stop_at {
        let is_last = t + 1 == total;
        let evaluate = (t + 1) % eval_every == 0 || is_last;
        let mark = ex.mark();
        let (mut row, eval) = match round_and_eval(ex, t, evaluate, phases) {
            Ok(r) => r,
            Err(stop) => {
                bar.abandon();
                p.elapsed_s = now();
                return diverged(&p, &name, dir, stop);
            }
        };
        if opts.stopping() {
            // a signal came while the round ran: its clients stopped mid-way, so it is undone,
            // and the run is checkpointed after its last finished round
            bar.abandon();
            ex.rollback(mark)?;
            return discarded(ex, dir, csv, (&p, &written), t, saved);
        }
        ex.keep(mark);
        p.next = t + 1;
        if let Some((acc, loss)) = eval {
            (row.test_acc, row.test_loss, row.elapsed_s) = (acc, loss, now());
            p.evaluated(t + 1, acc, loss);
            csv.write(&row)
                .map_err(|e| write_failed(dir, &name, &written, saved, e))?;
            written = p;
            bar.evaluated(t + 1, acc, loss, row.elapsed_s);
        }
        bar.position(p.next);
        // where the run stands: its checkpoint's, or a round stopped by a signal's to go back to
        p.elapsed_s = now();
        let due = minutes > 0.0 && last_save.elapsed().as_secs_f64() >= 60.0 * minutes;
        if is_last || due || (every > 0 && p.next.is_multiple_of(every)) {
            let clock = Instant::now();
            dir.save(ex, csv, &p)
                .map_err(|e| write_failed(dir, &name, &written, saved, e))?;
            saved = Some(p.next);
            last_save = Instant::now();
            phases.checkpoint_s += clock.elapsed().as_secs_f64();
        }
        if opts.stopping() {
            break;
        }
    }
    bar.finish();
    p.elapsed_s = now();
    let pace = pace(t0.elapsed().as_secs_f64(), start, &p);
    finish(ex, dir, csv, &p, opts, pace)
}

/// Say that a folder's rows are written over: a run stopped before its first checkpoint (kill -9,
/// a node lost) left rounds in `rounds.csv` that no checkpoint can resume, so it starts again.
fn say_restart(dir: &std::path::Path) {
    let rows = crate::metrics::csv::read(&dir.join("rounds.csv")).map_or(0, |(_, r)| r.len());
    if rows > 0 {
        eprintln!(
            "starting {} again from round 1: its rounds.csv holds {rows} round(s) but it has no checkpoint (the run stopped before its first), so they run again and are replaced",
            dir.display()
        );
    }
}

/// Seconds a round: this call's pace (`took` for its rounds from `start`); a call that had
/// nothing left to run reports the whole run's.
fn pace(took: f64, start: usize, p: &Progress) -> f64 {
    match p.next > start {
        true => took / (p.next - start) as f64,
        false => p.elapsed_s / p.next.max(1) as f64,
    }
}

/// After a failed write (a full disk): the summary, if it can still be written, says what
/// rounds.csv holds (`written`, where the run stood at its last row) and that the same command
/// resumes from the last checkpoint (after round `saved`), as an interrupted run does; the
/// error goes on up.
fn write_failed(
    dir: &RunDir,
    name: &str,
    written: &Progress,
    saved: Option<usize>,
    e: Error,
) -> Error {
    let resume = match saved {
        Some(k) => format!("the same command resumes from the checkpoint after round {k}"),
        None => "no checkpoint was written yet, so the same command starts afresh".into(),
    };
    let message = format!(
        "a write failed ({e}); rounds.csv holds the rows up to round {}; {resume}",
        written.next
    );
    let _ = dir.write_summary(&written.summary(name, Status::Interrupted, message));
    e
}

/// The summary of a run stopped by a signal while round `t` was in flight, its state undone to
/// where the last finished round left it (`p`; `written`: where the last row of rounds.csv left
/// it): that round is discarded (its clients stopped before their next step), the run is
/// checkpointed after its last finished round unless the last checkpoint (after round `saved`)
/// is that one, and the same command resumes from there.
fn discarded(
    ex: &mut Experiment,
    dir: &RunDir,
    csv: &mut CsvWriter,
    (p, written): (&Progress, &Progress),
    t: usize,
    saved: Option<usize>,
) -> Result<Summary> {
    let name = ex.spec.run.name.clone();
    let saved = match p.next > 0 && saved != Some(p.next) {
        true => {
            dir.save(ex, csv, p)
                .map_err(|e| write_failed(dir, &name, written, saved, e))?;
            Some(p.next)
        }
        false => saved,
    };
    let resume = match saved {
        Some(k) => format!("run the same command to resume from the checkpoint after round {k}"),
        None => "no round had finished, so the same command starts afresh".into(),
    };
    let message = format!(
        "stopped by a signal during round {}, which is discarded; {resume}",
        t + 1
    );
    let mut s = p.summary(&name, Status::Interrupted, message);
    // the pace of the rounds kept (the discarded one's time is not in `p`)
    s.seconds_per_round = pace(0.0, p.next, p);
    dir.write_summary(&s)?;
    Ok(s)
}

/// The summary of a run stopped by `stop` (a divergence, reported as such; a failure, returned).
fn diverged(p: &Progress, name: &str, dir: &RunDir, stop: Stop) -> Result<Summary> {
    let Stop::Diverged {
        round,
        client,
        message,
    } = stop
    else {
        return Err(stop.into());
    };
    let mut s = p.summary(name, Status::Diverged, message.clone());
    s.rounds = round - 1;
    s.diverged_round = Some(round);
    s.diverged_client = client;
    dir.write_summary(&s)?;
    eprintln!("diverged: {message}");
    Ok(s)
}

/// The summary at the end of this call: complete, or interrupted with a checkpoint.
fn finish(
    ex: &mut Experiment,
    dir: &RunDir,
    csv: &mut CsvWriter,
    p: &Progress,
    opts: &RunOptions,
    pace: f64,
) -> Result<Summary> {
    let name = ex.spec.run.name.clone();
    let name = &name;
    let mut s = if p.next == ex.spec.fl.rounds {
        p.summary(name, Status::Complete, String::new())
    } else {
        dir.save(ex, csv, p)?;
        let message = match opts.stopping() {
            true => stopped_message(p.next),
            false => RUNNING.into(),
        };
        p.summary(name, Status::Interrupted, message)
    };
    s.seconds_per_round = pace;
    dir.write_summary(&s)?;
    Ok(s)
}

/// Progress, when asked for: a bar on a terminal; elsewhere (nohup, Slurm, a sweep's `.log`)
/// one line per evaluated round on stderr.
enum Bar {
    None,
    Terminal(indicatif::ProgressBar),
    Lines {
        name: String,
        total: usize,
        /// The round this call started from, and when: the pace of the ETA.
        start: usize,
        started: Instant,
    },
}

impl Bar {
    fn new(show: bool, name: &str, rounds: usize, start: usize) -> Self {
        use std::io::IsTerminal;
        if !show {
            return Bar::None;
        }
        if !std::io::stderr().is_terminal() {
            return Bar::Lines {
                name: name.to_string(),
                total: rounds,
                start,
                started: Instant::now(),
            };
        }
        let b = indicatif::ProgressBar::new(rounds as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} rounds [{elapsed_precise} < {eta_precise}] {msg}",
        ) {
            b.set_style(style);
        }
        b.set_position(start as u64);
        Bar::Terminal(b)
    }

    /// The evaluation after `round` rounds.
    fn evaluated(&self, round: usize, acc: f64, loss: f64, elapsed_s: f64) {
        match self {
            Bar::None => {}
            Bar::Terminal(b) => b.set_message(format!("test acc {acc:.2}%")),
            Bar::Lines {
                name,
                total,
                start,
                started,
            } => {
                // the pace of this call's rounds so far (a resumed run's earlier rounds ran
                // elsewhere, or at another pace)
                let done = round.saturating_sub(*start).max(1) as f64;
                let left = started.elapsed().as_secs_f64() / done * (total - round) as f64;
                let eta = match round < *total {
                    true => format!(
                        ", about {} left",
                        crate::metrics::summary::readable_duration(left)
                    ),
                    false => String::new(),
                };
                eprintln!(
                    "{name}: round {round}/{total}: test acc {acc:.2}%, test loss {loss:.4}, {elapsed_s:.1} s{eta}"
                )
            }
        }
    }

    fn position(&self, done: usize) {
        if let Bar::Terminal(b) = self {
            b.set_position(done as u64);
        }
    }

    fn abandon(&self) {
        if let Bar::Terminal(b) = self {
            b.abandon();
        }
    }

    fn finish(&self) {
        if let Bar::Terminal(b) = self {
            b.finish_and_clear();
        }
    }
}
