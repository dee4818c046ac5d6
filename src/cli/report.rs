//! `fedrun report`: a table of runs, seeds aggregated.

use clap::Args;
use std::path::PathBuf;

use crate::analysis::report::{Format, ReportOptions, report as table};
use crate::analysis::runs::collect;
use crate::error::Result;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Run folders (or folders of run folders, e.g. a sweep).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Rounds at which to read the EMA curve (FedACG: 500,1000); rounds count from 1.
    #[arg(long, value_delimiter = ',', value_parser = round_number)]
    pub at: Vec<usize>,
    /// Targets for rounds-to-target on the EMA curve (FedACG: 81,85).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<f64>,
    /// EMA factor β.
    #[arg(long, default_value_t = 0.9)]
    pub ema: f64,
    /// De-bias the EMA by 1 − β^(t+1) (wandb's display form): the default, so that an early
    /// round's EMA is on the accuracy's scale. Kept as a flag for older command lines.
    #[arg(long, overrides_with = "no_debias")]
    pub debias: bool,
    /// The plain EMA from s₋₁ = 0 instead (its early rounds read low: 5 rounds at 21 % give
    /// 8.6 at round 5).
    #[arg(long)]
    pub no_debias: bool,
    #[arg(long, default_value = "test_acc")]
    pub metric: String,
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,
    /// Also the megabytes communicated (down and up, the CSV's `down_bytes` and `up_bytes`)
    /// until each target.
    #[arg(long)]
    pub bytes: bool,
    /// Also write the runs as one tidy table to FILE (CSV for pandas or R): a row per run and
    /// evaluated round, with the run's folder and status, each key whose value differs between
    /// the runs (the seed included), the round and every rounds.csv column.
    #[arg(long, value_name = "FILE")]
    pub long: Option<PathBuf>,
}

/// A round of `--at`: rounds count rounds completed, from 1 (the model after k rounds).
fn round_number(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("rounds count rounds completed, from 1: round 0 has no evaluation".into()),
        Ok(k) => Ok(k),
        Err(e) => Err(format!("not a round number ({e})")),
    }
}

pub fn report(a: &ReportArgs) -> Result<()> {
    let runs = collect(&a.runs)?;
    if let Some(file) = &a.long {
        let text = crate::analysis::long::long_table(&runs)?;
        crate::io::write_atomic(file, text.as_bytes())?;
        let rows = text.lines().count().saturating_sub(1);
        eprintln!(
            "report: {rows} rows of {} runs in {}",
            runs.len(),
            file.display()
        );
    }
    let o = ReportOptions {
        metric: a.metric.clone(),
        at: a.at.clone(),
        targets: a.targets.clone(),
        ema_beta: a.ema,
        debias: !a.no_debias,
        format: a.format,
        bytes: a.bytes,
    };
    print!("{}", table(runs, &o)?);
    Ok(())
}
