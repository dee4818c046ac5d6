//! `fedrun` without a subcommand: run an experiment (the embedded quickstart without
//! `--config`), print its summary, and for the quickstart draw its accuracy curve.

use clap::Args;
use std::path::{Path, PathBuf};

use super::signals::{stop_on_signals, wait_acknowledged};
use super::spec_args::SpecArgs;
use crate::analysis::plot::{Corner, PlotOptions, plot};
use crate::analysis::runs::Run;
use crate::error::{Error, Result};
use crate::fl::engine::{RunOptions, run as run_spec};
use crate::metrics::summary::Status;

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The folder the run's folder goes in: the run writes OUT/<run.name>/ (as each point of
    /// `fedrun sweep --out OUT` does). Paths are relative to the working directory.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Data directory (overrides data.path; both relative to the working directory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Continue from the run folder's last checkpoint (also the default when one exists).
    #[arg(long)]
    pub resume: bool,
    /// Discard an existing run folder and start afresh (not with `--resume`, which keeps it).
    #[arg(long, conflicts_with = "resume")]
    pub force: bool,
    /// No progress: neither the bar (on a terminal) nor the line per evaluated round (when
    /// stderr is not a terminal: nohup, Slurm, a sweep's `.log`).
    #[arg(long)]
    pub quiet: bool,
}

/// What a run does on SIGINT or SIGTERM.
const RUN_STOPS: &str = "the clients stop before their next local step, the round in flight is discarded and the last checkpoint kept";

pub fn run(a: &RunArgs) -> Result<()> {
    let spec = a.spec.load()?;
    let dir = a.out.join(&spec.run.name);
    if a.resume && !dir.join("checkpoint.bin").exists() {
        eprintln!("no checkpoint in {}; starting afresh", dir.display());
    }
    let opts = RunOptions {
        out: a.out.clone(),
        data_dir: a.data_dir.clone(),
        force: a.force,
        progress: !a.quiet,
        max_rounds_this_call: None,
        stop: Some(stop_on_signals(RUN_STOPS)?),
        memory_budget: None,
        parse_spec: crate::schema::parse_resolved,
    };
    let s = run_spec(&spec, &opts)?;
    println!("{}", s.line());
    println!("results: {}", dir.display());
    if opts.stopping() {
        wait_acknowledged();
    }
    if opts.stopping() && s.status == Status::Interrupted {
        return Err(Error::Stopped(format!("{}: {}", dir.display(), s.message)));
    }
    if a.spec.config.is_none() && s.status == Status::Complete {
        draw_quickstart(&dir);
    }
    if s.status == Status::Diverged {
        return Err(Error::Run(format!("run diverged: {}", s.message)));
    }
    Ok(())
}

/// The quickstart ends with a picture of its curve (the code of `fedrun plot`).
fn draw_quickstart(dir: &Path) {
    let png = dir.join("accuracy.png");
    let o = PlotOptions {
        metric: "test_acc".into(),
        x: None,
        width: 800,
        height: 500,
        title: Some("quickstart: test accuracy per round".into()),
        legend: Corner::LowerRight,
        labels: Vec::new(),
        xlim: None,
        ylim: None,
        bands: true,
        x_scale: Default::default(),
    };
    match Run::load(dir).and_then(|r| plot(vec![r], &png, &o)) {
        Ok(()) => println!("accuracy curve: {}", png.display()),
        Err(e) => eprintln!("warning: could not draw the accuracy curve: {e}"),
    }
}
