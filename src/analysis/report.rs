//! `fedrun report`: one row per configuration, seeds aggregated as mean ± sd.
//!
//! Rounds are counted as the papers count them, and as the CSV does: `EMA@k` is the curve after
//! k rounds (the CSV's row `round = k`), and rounds→T counts the rounds until the EMA first
//! reaches T. A metric
//! whose name holds `loss` is better lower: its best is the minimum and a target is reached
//! from above.

use std::collections::BTreeMap;

use super::runs::{Group, Run, group};
use super::stats::{Direction, at_round, best, cumulative_bytes, ema, mean_sd, rounds_to_target};
use crate::error::{Error, Result};

/// How `report` prints its table (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Markdown table.
    Md,
    /// CSV, with the mean and the sd of each value in columns of their own.
    Csv,
}

pub struct ReportOptions {
    pub metric: String,
    pub at: Vec<usize>,
    pub targets: Vec<f64>,
    pub ema_beta: f64,
    pub debias: bool,
    pub format: Format,
    /// Also the megabytes communicated (down and up) until each target.
    pub bytes: bool,
}

/// One cell: the values of a group's runs, or `missing` when a run lacks one.
struct Cell {
    values: Vec<f64>,
    missing: bool,
}

impl Cell {
    /// `mean ± sd`, the value alone for one run, `–` when a run lacks it.
    fn text(&self) -> String {
        if self.missing || self.values.is_empty() {
            return "–".into();
        }
        let (m, s) = mean_sd(&self.values);
        match self.values.len() {
            1 => format!("{m:.2}"),
            _ => format!("{m:.2} ± {s:.2}"),
        }
    }

    /// The mean and the sd as two CSV fields (the sd empty for one run).
    fn fields(&self) -> [String; 2] {
        if self.missing || self.values.is_empty() {
            return [String::new(), String::new()];
        }
        let (m, s) = mean_sd(&self.values);
        let sd = if self.values.len() > 1 {
            format!("{s:.2}")
        } else {
            String::new()
        };
        [format!("{m:.2}"), sd]
    }
}

/// Rounds-to-target over seeds: the mean when every seed reached it, else `R+` as FedACG prints.
fn to_target(v: &[Option<usize>], horizon: usize) -> String {
    if v.iter().all(|x| x.is_some()) && !v.is_empty() {
        let r: Vec<f64> = v.iter().flatten().map(|&x| x as f64).collect();
        format!("{:.0}", mean_sd(&r).0)
    } else {
        format!("{horizon}+")
    }
}

/// What the runs of a group are: `complete`, or how many are in each other status.
fn status(g: &Group) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in &g.runs {
        *counts.entry(r.status.to_string()).or_default() += 1;
    }
    if counts.len() == 1 && counts.contains_key("complete") {
        return "complete".into();
    }
    counts
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A group's values: final, best, the EMA at each `--at`, rounds to each target.
struct Row {
    label: String,
    seeds: usize,
    status: String,
    cells: Vec<Cell>,
    targets: Vec<String>,
    /// Megabytes to each target (`--bytes`).
    megabytes: Vec<String>,
}

/// Megabytes (10⁶ bytes) over seeds: the mean when every seed reached the target, else `–`.
fn megabytes(v: &[Option<f64>]) -> String {
    match v.iter().copied().collect::<Option<Vec<f64>>>() {
        Some(mb) if !mb.is_empty() => format!("{:.1}", mean_sd(&mb).0),
        _ => "–".into(),
    }
}

/// A run's megabytes communicated until the EMA `e` first reaches each target.
fn run_megabytes(
    r: &Run,
    e: &[f64],
    o: &ReportOptions,
    dir: Direction,
) -> Result<Vec<Option<f64>>> {
    let (rounds, down) = r.series("down_bytes")?;
    let (_, up) = r.series("up_bytes")?;
    let per_round: Vec<f64> = down.iter().zip(&up).map(|(d, u)| d + u).collect();
    let cum = cumulative_bytes(&rounds, &per_round);
    Ok(o.targets
        .iter()
        .map(|&t| {
            let i = e.iter().position(|v| dir.reached(*v, t))?;
            cum.get(i).map(|b| b / 1e6)
        })
        .collect())
}

fn row(g: &Group, o: &ReportOptions, dir: Direction) -> Result<Row> {
    let mut cells: Vec<Cell> = (0..2 + o.at.len())
        .map(|_| Cell {
            values: Vec::new(),
            missing: false,
        })
        .collect();
    let mut tt = vec![Vec::new(); o.targets.len()];
    let mut mb = vec![Vec::new(); o.targets.len()];
    let mut horizon = 0;
    for r in &g.runs {
        let (rounds, vals) = r.series(&o.metric)?;
        if let Some(&v) = vals.last() {
            cells[0].values.push(v);
        }
        if let Some(b) = best(&rounds, &vals, dir) {
            cells[1].values.push(b.0);
        }
        horizon = horizon
            .max(r.spec.fl.rounds)
            .max(rounds.last().copied().unwrap_or(0));
        let e = ema(&rounds, &vals, o.ema_beta, o.debias);
        for (i, &a) in o.at.iter().enumerate() {
            match at_round(&rounds, &e, a) {
                Some(v) => cells[2 + i].values.push(v),
                None => cells[2 + i].missing = true,
            }
        }
        for (i, &t) in o.targets.iter().enumerate() {
            tt[i].push(rounds_to_target(&rounds, &e, t, dir));
        }
        if o.bytes {
            for (i, v) in run_megabytes(r, &e, o, dir)?.into_iter().enumerate() {
                mb[i].push(v);
            }
        }
    }
    Ok(Row {
        label: g.label.clone(),
        seeds: g.runs.len(),
        status: status(g),
        cells,
        targets: tt.iter().map(|v| to_target(v, horizon)).collect(),
        megabytes: match o.bytes {
            true => mb.iter().map(|v| megabytes(v)).collect(),
            false => Vec::new(),
        },
    })
}

/// The names of the value columns.
fn columns(o: &ReportOptions, dir: Direction) -> Vec<String> {
    let best = match dir {
        Direction::Higher => "best (max)",
        Direction::Lower => "best (min)",
    };
    let mut c = vec![
        format!("final {}", o.metric),
        format!("{best} {}", o.metric),
    ];
    c.extend(o.at.iter().map(|a| format!("EMA@{a}")));
    c
}

/// The names of the `--bytes` columns.
fn mb_columns(o: &ReportOptions) -> Vec<String> {
    match o.bytes {
        true => o.targets.iter().map(|t| format!("MB→{t}")).collect(),
        false => Vec::new(),
    }
}

fn markdown(rows: &[Row], o: &ReportOptions, dir: Direction) -> String {
    let mut header = vec!["config".to_string(), "seeds".into(), "status".into()];
    header.extend(columns(o, dir));
    header.extend(o.targets.iter().map(|t| format!("rounds→{t}")));
    header.extend(mb_columns(o));
    let mut out = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        let mut f = vec![r.label.clone(), r.seeds.to_string(), r.status.clone()];
        f.extend(r.cells.iter().map(Cell::text));
        f.extend(r.targets.iter().cloned());
        f.extend(r.megabytes.iter().cloned());
        out.push_str(&format!("| {} |\n", f.join(" | ")));
    }
    let reach = match dir {
        Direction::Higher => "first reaches T or more",
        Direction::Lower => "first falls to T or less",
    };
    out.push_str(&format!(
        "\nRounds count rounds completed, from 1, as in rounds.csv: EMA@k is the EMA after k rounds. EMA: s_t = β·s_(t−1) + (1−β)·a_t with β = {b}{d}, over the evaluated rounds of `{m}` (a row g rounds after the one before weighs 1 − β^g); rounds→T counts rounds until the EMA {reach} (`R+`: not in R rounds).",
        b = o.ema_beta,
        d = if o.debias { ", de-biased by 1 − β^(t+1)" } else { " with s_(−1) = 0" },
        m = o.metric
    ));
    if o.bytes {
        out.push_str(" MB→T: megabytes (10⁶ bytes) sent down and up until the round of rounds→T (each row's bytes times the rounds since the row before; exact when every round is evaluated), `–` when a seed did not reach T.");
    }
    if rows.iter().any(|r| r.cells.iter().any(|c| c.missing)) {
        out.push_str(" `–`: a run of the row has fewer rounds than asked.");
    }
    out.push('\n');
    out
}

fn csv(rows: &[Row], o: &ReportOptions, dir: Direction) -> String {
    let q = |s: &str| {
        if s.contains(',') {
            format!("\"{s}\"")
        } else {
            s.to_string()
        }
    };
    let mut header = vec!["config".to_string(), "seeds".into(), "status".into()];
    for c in columns(o, dir) {
        header.push(c.clone());
        header.push(format!("{c} sd"));
    }
    header.extend(o.targets.iter().map(|t| format!("rounds→{t}")));
    header.extend(mb_columns(o));
    let mut out = String::new();
    out.push_str(&header.iter().map(|h| q(h)).collect::<Vec<_>>().join(","));
    out.push('\n');
    for r in rows {
        let mut f = vec![q(&r.label), r.seeds.to_string(), q(&r.status)];
        f.extend(r.cells.iter().flat_map(Cell::fields));
        f.extend(r.targets.iter().cloned());
        f.extend(r.megabytes.iter().cloned());
        out.push_str(&f.join(","));
        out.push('\n');
    }
    out
}

pub fn report(runs: Vec<Run>, o: &ReportOptions) -> Result<String> {
    if !(0.0..1.0).contains(&o.ema_beta) {
        return Err(Error::Config(format!(
            "--ema must be in [0, 1), got {}",
            o.ema_beta
        )));
    }
    let dir = Direction::of(&o.metric);
    let rows = group(runs)
        .iter()
        .map(|g| row(g, o, dir))
        .collect::<Result<Vec<_>>>()?;
    Ok(match o.format {
        Format::Md => markdown(&rows, o, dir),
        Format::Csv => csv(&rows, o, dir),
    })
}
