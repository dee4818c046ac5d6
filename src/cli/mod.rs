//! The command line, one file per subcommand:
//!
//! | file | command |
//! |---|---|
//! | `run.rs` | `fedrun` (no subcommand): run an experiment, the quickstart without `--config` |
//! | `check.rs` | `fedrun check`: validate a spec and print it resolved |
//! | `estimate.rs` | `fedrun check --time`: the run's wall time here, from a short timed probe |
//! | `sweep.rs` | `fedrun sweep`: a grid of runs, or `--emit` one command per point |
//! | `plot.rs` | `fedrun plot`: curves, or a final value against a key |
//! | `report.rs` | `fedrun report`: a table of runs, seeds aggregated |
//! | `partition.rs` | `fedrun partition`: how a spec splits the data among clients |
//! | `bench.rs`, `bench_ops.rs`, `bench_models.rs` | `fedrun bench`: time rounds, the gemm ceiling, each convolution, each model's step |
//! | `tune.rs` | `fedrun tune`: compile (and tune) a spec's GPU kernels ahead of a study; export and import the kernel cache |
//! | `spec_args.rs` | `--config` and `--set`, shared |
//! | `timing.rs` | the benchmarks' thread count and median |

mod bench;
mod bench_models;
mod bench_ops;
mod check;
mod estimate;
mod partition;
mod plot;
mod report;
mod run;
mod signals;
mod spec_args;
mod sweep;
mod timing;
mod tune;

pub use run::RunArgs;
pub use spec_args::SpecArgs;

use clap::{Parser, Subcommand};

use crate::error::Result;

#[derive(Parser, Debug)]
#[command(
    name = "fedrun",
    version,
    about = "Federated-learning experiments on burn: the algorithms of the FedNAR, FedACG and Fed-LAMB papers (fedrun check lists them), each with or without FedNAR",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Validate a spec and print it resolved, defaults included; say whether its data is there.
    Check(check::CheckArgs),
    /// Time one workload's rounds; prints one JSON line per round.
    Bench(bench::BenchArgs),
    /// Run a grid of experiments: --grid local.weight_decay=1e-4,1e-2 --grid local.nar=false,true.
    Sweep(sweep::SweepArgs),
    /// Plot runs: a CSV column against the round, or (--x KEY) the final value against a key.
    Plot(plot::PlotArgs),
    /// A table of runs, seeds aggregated: final, best, EMA at rounds, rounds to targets.
    Report(report::ReportArgs),
    /// How a spec splits the training data among clients: sizes and samples per class, printed,
    /// as CSV (--csv) and drawn (--plot).
    Partition(partition::PartitionArgs),
    /// Compile (and, built with autotune, tune) a spec's GPU kernels ahead of a study; write the
    /// kernel cache to a file (--export) or add one to this machine's (--import).
    Tune(tune::TuneArgs),
}

pub fn main_with(cli: Cli) -> Result<()> {
    match cli.cmd {
        Some(Cmd::Check(a)) => check::check(&a),
        Some(Cmd::Bench(b)) => bench::run(&b),
        Some(Cmd::Sweep(a)) => sweep::sweep(&a),
        Some(Cmd::Plot(a)) => plot::plot(&a),
        Some(Cmd::Report(a)) => report::report(&a),
        Some(Cmd::Partition(a)) => partition::partition(&a),
        Some(Cmd::Tune(a)) => tune::tune(&a),
        None => run::run(&cli.run),
    }
}
