//! The command line: run an experiment (the default), `check` a spec, `bench` a workload.

mod bench;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::config::Spec;
use crate::error::Result;
use crate::fl::engine::{RunOptions, run};

/// The quickstart spec, run when no --config is given.
pub const QUICKSTART: &str = include_str!("../../configs/quickstart.toml");

#[derive(Parser, Debug)]
#[command(
    name = "fedrun",
    version,
    about = "Federated-learning experiments (FedNAR, FedACG, Fed-LAMB and their baselines) on burn",
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
}

impl SpecArgs {
    pub fn load(&self) -> Result<Spec> {
        match &self.config {
            Some(p) => Spec::load(p, &self.set),
            None => {
                Spec::from_str_with(QUICKSTART, "configs/quickstart.toml (embedded)", &self.set)
            }
        }
    }
}

pub fn main_with(cli: Cli) -> Result<()> {
    match cli.cmd {
        Some(Cmd::Check(a)) => {
            let spec = a.load()?;
            print!("{}", spec.to_toml());
            Ok(())
        }
        Some(Cmd::Bench(b)) => bench::run(&b),
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
            println!("results: {}", a.out.join(&spec.run.name).display());
            if s.status == "diverged" {
                return Err(crate::error::Error::Run(format!(
                    "run diverged: {}",
                    s.message
                )));
            }
            Ok(())
        }
    }
}
