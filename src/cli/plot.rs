//! `fedrun plot`: draw runs' CSV columns against the round, or a final value against a key.

use clap::Args;
use std::path::PathBuf;

use crate::analysis::plot::{Corner, PlotOptions, plot as draw};
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
    };
    draw(runs, &a.output, &o)?;
    println!("wrote {}", a.output.display());
    Ok(())
}
