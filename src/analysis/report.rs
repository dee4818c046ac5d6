//! `fedrun report`: one row per configuration, seeds aggregated as mean ± sd.

use super::runs::{Group, Run, group};
use super::stats::{at_round, best, ema, mean_sd, rounds_to_target};
use crate::error::Result;

/// How `report` prints its table (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Markdown table.
    Md,
    /// CSV.
    Csv,
}

pub struct ReportOptions {
    pub metric: String,
    pub at: Vec<usize>,
    pub targets: Vec<f64>,
    pub ema_beta: f64,
    pub debias: bool,
    pub format: Format,
}

fn pm(v: &[f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let (m, s) = mean_sd(v);
    format!("{m:.2} ± {s:.2}")
}

/// Rounds-to-target over seeds: the mean when every seed reached it, else `R+` as FedACG prints.
fn to_target(v: &[Option<usize>], horizon: usize) -> String {
    if v.iter().all(|x| x.is_some()) && !v.is_empty() {
        let r: Vec<f64> = v.iter().map(|x| x.unwrap() as f64).collect();
        let (m, _) = mean_sd(&r);
        format!("{m:.0}")
    } else {
        format!("{horizon}+")
    }
}

fn header(o: &ReportOptions) -> Vec<String> {
    let mut header = vec![
        "config".to_string(),
        "seeds".into(),
        "status".into(),
        format!("final {}", o.metric),
        format!("best {}", o.metric),
    ];
    for a in &o.at {
        header.push(format!("EMA@{a}"));
    }
    for t in &o.targets {
        header.push(format!("rounds→{t}"));
    }
    header
}

/// The row of one group: its runs' values, seeds aggregated.
fn row(g: &Group, o: &ReportOptions) -> Result<Vec<String>> {
    let (mut fin, mut bst, mut at, mut tt) = (
        Vec::new(),
        Vec::new(),
        vec![Vec::new(); o.at.len()],
        vec![Vec::new(); o.targets.len()],
    );
    let mut horizon = 0;
    for r in &g.runs {
        let (rounds, vals) = r.series(&o.metric)?;
        if let Some(&v) = vals.last() {
            fin.push(v);
        }
        if let Some(b) = best(&rounds, &vals) {
            bst.push(b.0);
        }
        horizon = horizon
            .max(r.spec.fl.rounds)
            .max(rounds.last().map(|x| x + 1).unwrap_or(0));
        let e = ema(&vals, o.ema_beta, o.debias);
        for (i, &a) in o.at.iter().enumerate() {
            if let Some(v) = at_round(&rounds, &e, a) {
                at[i].push(v);
            }
        }
        for (i, &t) in o.targets.iter().enumerate() {
            tt[i].push(rounds_to_target(&rounds, &e, t));
        }
    }
    let incomplete = g.runs.iter().filter(|r| !r.complete()).count();
    let status = if incomplete == 0 {
        "complete".to_string()
    } else {
        format!("{incomplete} not complete")
    };
    let mut row = vec![
        g.label.clone(),
        g.runs.len().to_string(),
        status,
        pm(&fin),
        pm(&bst),
    ];
    row.extend(at.iter().map(|v| pm(v)));
    row.extend(tt.iter().map(|v| to_target(v, horizon)));
    Ok(row)
}

fn markdown(header: &[String], rows: &[Vec<String>], o: &ReportOptions) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out.push_str(&format!(
        "\nEMA: s_t = β·s_(t−1) + (1−β)·a_t with β = {b}{d}, over the evaluated rounds of `{m}`; rounds→T counts rounds until the EMA first reaches T (`R+`: not reached in R rounds).\n",
        b = o.ema_beta,
        d = if o.debias { ", de-biased by 1 − β^(t+1)" } else { " with s_(−1) = 0" },
        m = o.metric
    ));
    out
}

fn csv(header: &[String], rows: &[Vec<String>]) -> String {
    let q = |s: &String| {
        if s.contains(',') {
            format!("\"{s}\"")
        } else {
            s.clone()
        }
    };
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows.iter().map(|r| r.as_slice())) {
        out.push_str(&r.iter().map(q).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

pub fn report(runs: Vec<Run>, o: &ReportOptions) -> Result<String> {
    let header = header(o);
    let rows = group(runs)
        .iter()
        .map(|g| row(g, o))
        .collect::<Result<Vec<_>>>()?;
    Ok(match o.format {
        Format::Md => markdown(&header, &rows, o),
        Format::Csv => csv(&header, &rows),
    })
}
