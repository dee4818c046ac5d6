//! `fedrun plot`: draw runs' CSV columns against the round, or a final value against a key.

use clap::Args;
use std::path::PathBuf;

use crate::analysis::plot::{Corner, PlotOptions, Scale, plot as draw};
use crate::analysis::runs::collect;
use crate::error::Result;

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Run folders (or folders of run folders, e.g. a sweep).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output file: .png, .svg or .pdf.
    #[arg(short, long)]
    pub output: PathBuf,
    /// CSV column to plot.
    #[arg(long, default_value = "test_acc")]
    pub metric: String,
    /// Plot the final metric against this spec key (e.g. weight_decay: FedNAR Figure 2); a key
    /// with non-numeric values (e.g. algorithm) gives one column of points per value.
    #[arg(long)]
    pub x: Option<String>,
    /// Width in pixels (PNG) or points (SVG, PDF), 200 to 10000.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u32).range(200..=10_000))]
    pub width: u32,
    /// Height, 150 to 10000.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(150..=10_000))]
    pub height: u32,
    #[arg(long)]
    pub title: Option<String>,
    /// Corner of the legend, where it hides no data.
    #[arg(long, value_enum, default_value_t = Corner::LowerRight)]
    pub legend: Corner,
    /// The legend's labels, one per line in the order drawn, comma-separated (default: the
    /// keys that differ, `lr=0.5 (n=2)`).
    #[arg(long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// The x axis's range, LO,HI (rounds, or the key's values).
    #[arg(long, value_parser = range_arg, allow_hyphen_values = true)]
    pub xlim: Option<(f64, f64)>,
    /// The y axis's range, LO,HI.
    #[arg(long, value_parser = range_arg, allow_hyphen_values = true)]
    pub ylim: Option<(f64, f64)>,
    /// Leave out the ±sd bands (curves) and bars (against a key) over the seeds; with them, the
    /// default title says what they are.
    #[arg(long)]
    pub no_bands: bool,
    /// The scale of `--x`'s axis: auto (log where every value is a positive number), log or
    /// linear.
    #[arg(long, value_enum, default_value_t = Scale::Auto)]
    pub x_scale: Scale,
}

/// `LO,HI`: two finite numbers, LO below HI.
fn range_arg(s: &str) -> std::result::Result<(f64, f64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: give LO,HI"))?;
    let num = |v: &str| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("`{v}` is not a finite number"))
    };
    let (lo, hi) = (num(a)?, num(b)?);
    if lo >= hi {
        return Err(format!("`{s}`: LO must be below HI"));
    }
    Ok((lo, hi))
}

pub fn plot(a: &PlotArgs) -> Result<()> {
    let runs = collect(&a.runs)?;
    let o = PlotOptions {
        metric: a.metric.clone(),
        x: a.x.clone(),
        width: a.width,
        height: a.height,
        title: a.title.clone(),
        legend: a.legend,
        labels: a.labels.clone(),
        xlim: a.xlim,
        ylim: a.ylim,
        bands: !a.no_bands,
        x_scale: a.x_scale,
    };
    draw(runs, &a.output, &o)?;
    println!("wrote {}", a.output.display());
    Ok(())
}
