//! The command line: run an experiment (the default), `check` a spec, `bench` a workload.

mod bench;
mod bench_ops;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::analysis::plot::Corner;
use crate::analysis::report::Format;
use crate::config::{QUICKSTART, Spec};
use crate::error::Result;
use crate::fl::engine::{RunOptions, run};
use crate::metrics::summary::Status;

#[derive(Parser, Debug)]
#[command(
    name = "fedrun",
    version,
    about = "Federated-learning experiments on burn: the algorithms of the FedNAR and FedACG papers (fedrun check lists them), each with or without FedNAR",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug, Clone)]
pub struct SpecArgs {
    /// The experiment spec (TOML). Without it, the embedded Shakespeare quickstart runs.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Override a key: --set local.weight_decay=0.05 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Results root; the run writes into OUT/<run.name>/.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Data directory (overrides data.path).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Continue from the run folder's last checkpoint (also the default when one exists).
    #[arg(long)]
    pub resume: bool,
    /// Discard an existing run folder and start afresh.
    #[arg(long)]
    pub force: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Validate a spec and print it resolved, defaults included.
    Check(SpecArgs),
    /// Time one workload's rounds; prints one JSON line per round.
    Bench(bench::BenchArgs),
    /// Run a grid of experiments: --grid local.weight_decay=1e-4,1e-2 --grid local.nar=false,true.
    Sweep(SweepArgs),
    /// Plot runs: a CSV column against the round, or (--x KEY) the final value against a key.
    Plot(PlotArgs),
    /// A table of runs, seeds aggregated: final, best, EMA at rounds, rounds to targets.
    Report(ReportArgs),
}

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
    /// Sweep folder; every point writes OUT/<name>/. Default: results/sweep_<run.name>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Data directory for every point (overrides data.path).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Stop launching points after one diverges (default: carry on and record it).
    #[arg(long)]
    pub stop_on_divergence: bool,
    /// Run nothing: write one complete `fedrun` command per point to FILE, one per line, for a
    /// scheduler (scripts/slurm_array.sh, GNU parallel).
    #[arg(long, value_name = "FILE")]
    pub emit: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Run folders (or folders of run folders, e.g. a sweep).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output file, .png or .svg.
    #[arg(short, long)]
    pub output: PathBuf,
    /// CSV column to plot.
    #[arg(long, default_value = "test_acc")]
    pub metric: String,
    /// Plot the final metric against this spec key (e.g. weight_decay: FedNAR Figure 2); a key
    /// with non-numeric values (e.g. algorithm) gives one column of points per value.
    #[arg(long)]
    pub x: Option<String>,
    #[arg(long, default_value_t = 900)]
    pub width: u32,
    #[arg(long, default_value_t = 600)]
    pub height: u32,
    #[arg(long)]
    pub title: Option<String>,
    /// Corner of the legend, where it hides no data.
    #[arg(long, value_enum, default_value_t = Corner::LowerRight)]
    pub legend: Corner,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Run folders (or folders of run folders, e.g. a sweep).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Rounds at which to read the EMA curve (FedACG: 500,1000).
    #[arg(long, value_delimiter = ',')]
    pub at: Vec<usize>,
    /// Targets for rounds-to-target on the EMA curve (FedACG: 81,85).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<f64>,
    /// EMA factor β.
    #[arg(long, default_value_t = 0.9)]
    pub ema: f64,
    /// De-bias the EMA by 1 − β^(t+1) (wandb's display form).
    #[arg(long)]
    pub debias: bool,
    #[arg(long, default_value = "test_acc")]
    pub metric: String,
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,
}

impl SpecArgs {
    pub fn load(&self) -> Result<Spec> {
        match &self.config {
            Some(p) => crate::schema::load(p, &self.set),
            None => {
                crate::schema::parse(QUICKSTART, "configs/quickstart.toml (embedded)", &self.set)
            }
        }
    }
}

pub fn main_with(cli: Cli) -> Result<()> {
    match cli.cmd {
        Some(Cmd::Check(a)) => {
            let spec = a.load()?;
            print!("{}", spec.to_toml());
            println!(
                "\n# fl.algorithm is one of: {}",
                crate::fl::algorithms::NAMES.join(", ")
            );
            Ok(())
        }
        Some(Cmd::Bench(b)) => bench::run(&b),
        Some(Cmd::Sweep(a)) => {
            let base = a.spec.load()?;
            let axes = a
                .grid
                .iter()
                .map(|g| crate::sweep::parse_axis(g))
                .collect::<Result<Vec<_>>>()?;
            let out = a.out.clone().unwrap_or_else(|| {
                PathBuf::from("results").join(format!("sweep_{}", base.run.name))
            });
            let exe = std::env::current_exe()
                .map_err(|e| crate::error::Error::io("cannot find the fedrun binary", e))?;
            let o = crate::sweep::SweepOptions {
                config: a.spec.config.clone(),
                set: a.spec.set.clone(),
                axes,
                jobs: a.jobs,
                out: out.clone(),
                data_dir: a.data_dir.clone(),
                stop_on_divergence: a.stop_on_divergence,
                exe,
            };
            if let Some(file) = &a.emit {
                let n = crate::sweep::emit(&base, &o, file)?;
                println!(
                    "sweep: {n} commands written to {} (each writes into {}/<point>/)",
                    file.display(),
                    out.display()
                );
                return Ok(());
            }
            let res = crate::sweep::run(&base, &o)?;
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
            Ok(())
        }
        Some(Cmd::Plot(a)) => {
            let runs = crate::analysis::runs::collect(&a.runs)?;
            let o = crate::analysis::plot::PlotOptions {
                metric: a.metric.clone(),
                x: a.x.clone(),
                width: a.width,
                height: a.height,
                title: a.title.clone(),
                legend: a.legend,
            };
            crate::analysis::plot::plot(runs, &a.output, &o)?;
            println!("wrote {}", a.output.display());
            Ok(())
        }
        Some(Cmd::Report(a)) => {
            let runs = crate::analysis::runs::collect(&a.runs)?;
            let o = crate::analysis::report::ReportOptions {
                metric: a.metric.clone(),
                at: a.at.clone(),
                targets: a.targets.clone(),
                ema_beta: a.ema,
                debias: a.debias,
                format: a.format,
            };
            print!("{}", crate::analysis::report::report(runs, &o)?);
            Ok(())
        }
        None => {
            let a = cli.run;
            let spec = a.spec.load()?;
            if a.resume && !a.out.join(&spec.run.name).join("checkpoint.bin").exists() {
                eprintln!(
                    "no checkpoint in {}; starting afresh",
                    a.out.join(&spec.run.name).display()
                );
            }
            let opts = RunOptions {
                out: a.out.clone(),
                data_dir: a.data_dir.clone(),
                force: a.force,
                progress: !a.quiet,
                max_rounds_this_call: None,
            };
            let s = run(&spec, &opts)?;
            println!("{}", s.line());
            let dir = a.out.join(&spec.run.name);
            println!("results: {}", dir.display());
            if a.spec.config.is_none() && s.status == Status::Complete {
                // the quickstart ends with a picture of its curve (the code of `fedrun plot`)
                let png = dir.join("accuracy.png");
                let drawn = crate::analysis::runs::Run::load(&dir).and_then(|r| {
                    crate::analysis::plot::plot(
                        vec![r],
                        &png,
                        &crate::analysis::plot::PlotOptions {
                            metric: "test_acc".into(),
                            x: None,
                            width: 800,
                            height: 500,
                            title: Some("quickstart: test accuracy per round".into()),
                            legend: Corner::LowerRight,
                        },
                    )
                });
                match drawn {
                    Ok(()) => println!("accuracy curve: {}", png.display()),
                    Err(e) => eprintln!("warning: could not draw the accuracy curve: {e}"),
                }
            }
            if s.status == Status::Diverged {
                return Err(crate::error::Error::Run(format!(
                    "run diverged: {}",
                    s.message
                )));
            }
            Ok(())
        }
    }
}
