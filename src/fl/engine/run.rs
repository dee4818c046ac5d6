//! The outer run loop: a run folder with its spec, CSV, summary and checkpoints; resume;
//! divergence; progress.

use std::path::Path;
use std::time::Instant;

use super::checkpoint;
use super::experiment::Experiment;
use super::options::RunOptions;
use super::round::Stop;
use crate::config::Spec;
use crate::data;
use crate::error::{Error, Result};
use crate::io::write_atomic;
use crate::metrics::csv::CsvWriter;
use crate::metrics::summary::{Status, Summary};

/// Run the experiment a spec describes, writing `<out>/<name>/`: `spec.toml`, `rounds.csv`,
/// `summary.json` and `checkpoint.bin`. An existing folder with a checkpoint is resumed (its
/// spec must match); `force` starts afresh. Nothing is written before the spec and the data
/// have been checked.
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<Summary> {
    let dir = opts.out.join(&spec.run.name);
    let ckpt_path = dir.join("checkpoint.bin");
    let csv_path = dir.join("rounds.csv");
    // A finished run is not run again, unless a complete one is asked for more rounds: then it
    // is extended from its last checkpoint.
    if !opts.force
        && let Ok(s) = Summary::read(&dir)
        && s.status != Status::Interrupted
        && !(s.status == Status::Complete && s.rounds < spec.fl.rounds && ckpt_path.exists())
    {
        check_same_spec(&dir, spec, None)?;
        eprintln!(
            "{} is already {} (use --force to run it again)",
            dir.display(),
            s.status
        );
        return Ok(s);
    }
    let resume = !opts.force && ckpt_path.exists();
    if resume {
        let next = checkpoint::read_header(&ckpt_path)?.next_round;
        check_same_spec(&dir, spec, Some(next))?;
    }
    let data = data::load(spec, opts.data_dir.as_deref())?;
    eprintln!("{}", data.describe());
    let mut ex = Experiment::new(spec, data)?;
    eprintln!(
        "model {}: {} parameters; algorithm {}{}",
        spec.model.kind,
        ex.layout.total,
        spec.fl.algorithm,
        if spec.local.nar { " + FedNAR" } else { "" }
    );

    // Only now touch the output folder.
    if opts.force && dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot remove {}", dir.display()), e))?;
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create output folder {}", dir.display()), e))?;
    let (mut start, mut elapsed0, mut best, mut last, mut csv) =
        (0usize, 0f64, None::<(f64, usize)>, None::<(f64, f64)>, None);
    if resume {
        let (h, mut vecs) = checkpoint::read(&ckpt_path)?;
        let gi = vecs
            .iter()
            .position(|(n, _)| n == "global")
            .ok_or_else(|| Error::Run("checkpoint has no global model".into()))?;
        let g = vecs.swap_remove(gi).1;
        if g.len() != ex.layout.total {
            return Err(Error::Run(format!(
                "checkpoint model has {} parameters, the spec's model {}",
                g.len(),
                ex.layout.total
            )));
        }
        ex.global = g;
        ex.alg.load_state(vecs)?;
        start = h.next_round;
        elapsed0 = h.elapsed_s;
        best = h.best;
        last = h.last;
        csv = Some(CsvWriter::resume(&csv_path, h.csv_bytes)?);
        eprintln!("resuming {} at round {start}", dir.display());
    }
    // (rewritten on resume too: `fl.rounds` may have changed)
    write_atomic(&dir.join("spec.toml"), spec.to_toml().as_bytes())?;
    let mut csv = match csv {
        Some(c) => c,
        None => CsvWriter::create(&csv_path)?,
    };
    let mut summary = Summary {
        status: Status::Interrupted,
        name: spec.run.name.clone(),
        message: "running, or stopped before the end".into(),
        ..Default::default()
    };
    summary.write(&dir)?;

    let rounds = spec.fl.rounds;
    let bar = opts.progress.then(|| {
        let b = indicatif::ProgressBar::new(rounds as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} rounds [{elapsed_precise} < {eta_precise}] {msg}",
            )
            .expect("style"),
        );
        b.set_position(start as u64);
        b
    });
    let t0 = Instant::now();
    let stop_at = opts
        .max_rounds_this_call
        .map(|m| (start + m).min(rounds))
        .unwrap_or(rounds);
    let mut done = start;
    let write_ckpt = |ex: &Experiment,
                      csv: &mut CsvWriter,
                      next: usize,
                      elapsed: f64,
                      best,
                      last|
     -> Result<()> {
        let csv_bytes = csv.sync()?;
        let mut vectors: Vec<(String, &[f32])> = vec![("global".into(), &ex.global)];
        vectors.extend(ex.alg.state());
        let header = checkpoint::Header {
            magic: checkpoint::MAGIC.into(),
            next_round: next,
            csv_bytes,
            elapsed_s: elapsed,
            best,
            last,
            spec: ex.spec.to_toml(),
            vectors: vectors.iter().map(|(n, v)| (n.clone(), v.len())).collect(),
        };
        checkpoint::write(&ckpt_path, &header, &vectors)
    };
    for t in start..stop_at {
        let is_last = t + 1 == rounds;
        let evaluate = (t + 1) % spec.fl.eval_every == 0 || is_last;
        // A non-finite loss in training or evaluation ends the run the same way.
        let outcome = ex.round(t).and_then(|row| {
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
        });
        let (mut row, eval) = match outcome {
            Ok(r) => r,
            Err(Stop::Failed(e)) => return Err(e),
            Err(Stop::Diverged {
                round,
                client,
                message: msg,
            }) => {
                if let Some(b) = &bar {
                    b.abandon();
                }
                summary.status = Status::Diverged;
                summary.rounds = round;
                summary.diverged_round = Some(round);
                summary.diverged_client = client;
                summary.message = msg.clone();
                summary.best_test_acc = best.map(|b| b.0);
                summary.best_round = best.map(|b| b.1);
                summary.final_test_acc = last.map(|l| l.0);
                summary.final_test_loss = last.map(|l| l.1);
                summary.elapsed_s = elapsed0 + t0.elapsed().as_secs_f64();
                summary.write(&dir)?;
                eprintln!("diverged: {msg}");
                return Ok(summary);
            }
        };
        done = t + 1;
        if let Some((acc, loss)) = eval {
            row.test_acc = acc;
            row.test_loss = loss;
            row.elapsed_s = elapsed0 + t0.elapsed().as_secs_f64();
            if best.is_none_or(|b| acc > b.0) {
                best = Some((acc, t));
            }
            last = Some((acc, loss));
            csv.write(&row)?;
            if let Some(b) = &bar {
                b.set_message(format!("test acc {acc:.2}%"));
            }
        }
        if let Some(b) = &bar {
            b.set_position(done as u64);
        }
        let every = spec.run.checkpoint_every;
        if is_last || (every > 0 && done % every == 0) {
            write_ckpt(
                &ex,
                &mut csv,
                done,
                elapsed0 + t0.elapsed().as_secs_f64(),
                best,
                last,
            )?;
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let elapsed = elapsed0 + t0.elapsed().as_secs_f64();
    summary.rounds = done;
    summary.elapsed_s = elapsed;
    // this call's pace; a call that had nothing left to run reports the whole run's
    summary.seconds_per_round = if done > start {
        t0.elapsed().as_secs_f64() / (done - start) as f64
    } else {
        elapsed / done.max(1) as f64
    };
    summary.best_test_acc = best.map(|b| b.0);
    summary.best_round = best.map(|b| b.1);
    summary.final_test_acc = last.map(|l| l.0);
    summary.final_test_loss = last.map(|l| l.1);
    if done == rounds {
        summary.status = Status::Complete;
        summary.message = String::new();
    } else {
        write_ckpt(&ex, &mut csv, done, elapsed, best, last)?;
    }
    summary.write(&dir)?;
    Ok(summary)
}

/// Refuse to continue a run folder whose spec differs, naming the keys. When resuming from a
/// checkpoint at round `next`, `fl.rounds` alone may differ, if it is at least `next`: nothing a
/// round computes depends on the total, so rounds before it are the same either way.
fn check_same_spec(dir: &Path, spec: &Spec, next: Option<usize>) -> Result<()> {
    let p = dir.join("spec.toml");
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(());
    };
    let old = crate::schema::parse(&text, &p.display().to_string(), &[])?;
    let mut diff = old.diff_keys(spec);
    if let Some(next) = next
        && spec.fl.rounds >= next
    {
        diff.retain(|k| k != "fl.rounds");
    }
    if diff.is_empty() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{} holds a run with a different spec (keys that differ: {}); use --force to start afresh, or another run.name",
            dir.display(),
            diff.join(", ")
        )))
    }
}
