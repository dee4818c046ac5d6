//! `fedrun sweep`: run a grid of experiments (or, with `--emit`, write one command per point).

use clap::Args;
use std::path::PathBuf;

use super::signals::{stop_on_signals, wait_acknowledged};
use super::spec_args::SpecArgs;
use crate::error::{Error, Result};
use crate::metrics::summary::{Status, Summary, readable_duration};
use crate::sweep::{SweepOptions, emit, parse_axis, run};

#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// An axis of the grid: KEY=V1,V2,... (repeatable; the first varies slowest).
    #[arg(long = "grid", value_name = "KEY=V1,V2,...", required = true)]
    pub grid: Vec<String>,
    /// Runs at a time (each gets cores/jobs threads).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// The folder the points' run folders go in, as for a run: each point writes
    /// OUT/<point name>/, and the sweep OUT/sweep.csv. Default: results/sweep_<run.name>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Data directory for every point (overrides data.path).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Stop launching points after one diverges (default: carry on and record it).
    #[arg(long)]
    pub stop_on_divergence: bool,
    /// Run nothing: write one complete `fedrun` command per point to FILE, one per line, for a
    /// scheduler (scripts/slurm_array.sh, GNU parallel). The threads are the scheduler's to set:
    /// RAYON_NUM_THREADS (slurm_array.sh sets it to --cpus-per-task; with N lines at a time on
    /// one machine, set it to cores/N, as the sweep's own runs get).
    #[arg(long, value_name = "FILE")]
    pub emit: Option<PathBuf>,
    /// Run nothing: time each point that is not complete as `fedrun check --time` does (its
    /// data loaded, a few local steps timed) and estimate the whole sweep at --jobs.
    #[arg(long)]
    pub dry_run: bool,
}

/// What a sweep does on SIGINT or SIGTERM.
const SWEEP_STOPS: &str = "the sweep passes it on to its running points, which stop as a run does (the round in flight discarded, the last checkpoint kept), waits for them and starts no other";

pub fn sweep(a: &SweepArgs) -> Result<()> {
    // the common `--set`s go to the points that read them (`named_points`), so they are not
    // refused against the config's own algorithm here
    let (text, origin) = a.spec.text()?;
    let base = crate::schema::parse(&text, &origin, &a.spec.set)?;
    let axes = a
        .grid
        .iter()
        .map(|g| parse_axis(g))
        .collect::<Result<Vec<_>>>()?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("sweep_{}", base.run.name)));
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find the fedrun binary", e))?;
    let o = SweepOptions {
        config: a.spec.config.clone(),
        set: a.spec.set.clone(),
        axes,
        jobs: a.jobs,
        out: out.clone(),
        data_dir: a.data_dir.clone(),
        stop_on_divergence: a.stop_on_divergence,
        exe,
        stop: None,
    };
    if a.dry_run {
        return dry_run(&base, &o);
    }
    if let Some(file) = &a.emit {
        return emit_to(&base, &o, file);
    }
    let o = SweepOptions {
        stop: Some(stop_on_signals(SWEEP_STOPS)?),
        ..o
    };
    let res = run(&base, &o)?;
    let bad = res
        .iter()
        .filter(|r| r.2.status != Status::Complete)
        .count();
    println!(
        "sweep: {} points, {} complete, {bad} not; {}",
        res.len(),
        res.len() - bad,
        out.join("sweep.csv").display()
    );
    for (_, name, s) in res.iter().filter(|r| r.2.status != Status::Complete) {
        println!("  {name}: {}: {}", s.status, s.message);
    }
    if o.stop
        .as_ref()
        .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    {
        wait_acknowledged();
        return Err(Error::Stopped(format!(
            "sweep stopped by a signal: its running points are interrupted (each resumes from its last checkpoint) and the rest not run; run the same command to go on ({})",
            out.join("sweep.csv").display()
        )));
    }
    // a diverged point is an outcome of the study; a point that failed, was not run or was
    // stopped is not
    let failed = res
        .iter()
        .filter(|r| !matches!(r.2.status, Status::Complete | Status::Diverged))
        .count();
    if failed > 0 {
        return Err(Error::Run(format!(
            "sweep: {failed} of {} points did not finish (their errors above; rerun the sweep to retry them)",
            res.len()
        )));
    }
    Ok(())
}

/// `sweep --emit FILE`: the points' commands written, and how many.
fn emit_to(base: &crate::config::Spec, o: &SweepOptions, file: &std::path::Path) -> Result<()> {
    let n = emit(base, o, file)?;
    println!(
        "sweep: {n} command{} written to {} (each writes into {}/<point>/)",
        if n == 1 { "" } else { "s" },
        file.display(),
        o.out.display()
    );
    Ok(())
}

/// `sweep --dry-run`: each point's estimate (a complete one has nothing left), and the sweep's
/// wall time at `--jobs`.
fn dry_run(base: &crate::config::Spec, o: &SweepOptions) -> Result<()> {
    let points = crate::sweep::point_specs(base, o)?;
    let mut times = Vec::new();
    for (name, spec) in &points {
        let done = Summary::read(&o.out.join(name)).is_ok_and(|s| s.status == Status::Complete);
        if done {
            println!("{name}: complete, nothing left");
            continue;
        }
        let data = crate::data::load(spec, o.data_dir.as_deref())?;
        let (secs, _) = super::estimate::estimate_seconds(spec, data)?;
        println!("{name}: about {}", readable_duration(secs));
        times.push(secs);
    }
    let (sum, longest) = (
        times.iter().sum::<f64>(),
        times.iter().copied().fold(0.0, f64::max),
    );
    let jobs = o.jobs.max(1);
    let wall = (sum / jobs as f64).max(longest);
    println!(
        "sweep: {} of {} points to run, about {} one after another; at --jobs {jobs}, about {} (the points' times over {jobs}, at least the longest), each point timed here on all the cores: {jobs} points at a time share them, so where a point's steps use more than one core the wall time is longer",
        times.len(),
        points.len(),
        readable_duration(sum),
        readable_duration(wall)
    );
    Ok(())
}
