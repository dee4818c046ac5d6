//! `fedrun report --long FILE`: a study as one tidy table for pandas or R, one row per run and
//! evaluated round: the run's folder and status, each key whose value differs between the runs
//! (the seed included; blank where a run does not read the key), the round (rounds completed)
//! and every `rounds.csv` column.

use std::collections::BTreeSet;

use super::runs::Run;
use crate::error::{Error, Result};

/// Keys that vary between runs but say nothing of the experiment.
fn bookkeeping(key: &str) -> bool {
    matches!(
        key,
        "run.name" | "run.checkpoint_every" | "run.checkpoint_minutes" | "data.path"
    )
}

/// The keys whose values differ between `runs` (as each run reads them), in name order.
pub fn varying_keys(runs: &[Run]) -> Vec<String> {
    let all: BTreeSet<&String> = runs.iter().flat_map(|r| r.keys.keys()).collect();
    all.into_iter()
        .filter(|k| !bookkeeping(k))
        .filter(|k| {
            let values: BTreeSet<String> = runs.iter().map(|r| value(r, k)).collect();
            values.len() > 1
        })
        .cloned()
        .collect()
}

/// `key`'s value in `run`, blank where it does not read it.
fn value(run: &Run, key: &str) -> String {
    match run.unread.contains(key) {
        true => String::new(),
        false => run.keys.get(key).cloned().unwrap_or_default(),
    }
}

/// The tidy table of `runs` as CSV.
pub fn long_table(runs: &[Run]) -> Result<String> {
    let keys = varying_keys(runs);
    let mut columns: Vec<String> = Vec::new();
    for r in runs {
        for c in &r.columns {
            if c != "round" && !columns.contains(c) {
                columns.push(c.clone());
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = ["run", "status"].map(String::from).into_iter();
    let header = header.chain(keys.iter().cloned()).chain(["round".into()]);
    w.write_record(header.chain(columns.iter().cloned()))
        .map_err(|e| Error::Run(format!("cannot write the long table: {e}")))?;
    for r in runs {
        let name = r.dir.file_name().map(|n| n.to_string_lossy().to_string());
        let at = |c: &str| r.columns.iter().position(|x| x == c);
        for row in &r.rows {
            let cell = |i: Option<usize>| i.and_then(|i| row.get(i)).cloned().unwrap_or_default();
            let round = cell(at("round"))
                .parse::<usize>()
                .map(|k| k + r.round_shift);
            let mut rec = vec![name.clone().unwrap_or_default(), r.status.to_string()];
            rec.extend(keys.iter().map(|k| value(r, k)));
            rec.push(round.map(|k| k.to_string()).unwrap_or_default());
            rec.extend(columns.iter().map(|c| cell(at(c))));
            w.write_record(&rec)
                .map_err(|e| Error::Run(format!("cannot write the long table: {e}")))?;
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| Error::Run(format!("cannot write the long table: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
