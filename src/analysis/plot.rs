//! `fedrun plot`: curves of a CSV column against the round (seed groups as a mean line with a
//! ±sd band), or the final value against a swept key: a numeric key as an axis (FedNAR Figure 2),
//! any other (`fl.algorithm`) as categories with ±sd bars (Table 1). PNG, SVG or PDF, chosen by
//! the output's extension ([`figure`]).

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::figure::{self, Figure};
use super::runs::Run;
use super::runs::{Group, differing_keys, group_keeping, ignored_named, resolve_key, short};
use super::stats::mean_sd;
use super::style;
use crate::error::{Error, Result};

pub struct PlotOptions {
    pub metric: String,
    /// Plot the final metric against this spec key instead of the curve.
    pub x: Option<String>,
    pub width: u32,
    pub height: u32,
    pub title: Option<String>,
    /// The legend's corner.
    pub legend: Corner,
    /// The legend's labels, one per line in the order drawn (empty: made from the keys).
    pub labels: Vec<String>,
    /// The x and y axes' ranges (None: what holds every point).
    pub xlim: Option<(f64, f64)>,
    pub ylim: Option<(f64, f64)>,
    /// Draw each line's ±sd band (or bar) over the seeds.
    pub bands: bool,
    /// The scale of `x`'s axis.
    pub x_scale: Scale,
}

/// The scale of a key's axis (`--x-scale`): `auto`, a log axis where every value is a positive
/// number (a weight-decay or learning-rate sweep), else linear; or forced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    #[default]
    Auto,
    Log,
    Linear,
}

/// A corner of the plot, for the legend (`--legend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Corner {
    LowerRight,
    UpperRight,
    LowerLeft,
    UpperLeft,
}

/// One line: label, points, and the ±sd half-widths.
struct Line {
    label: String,
    x: Vec<f64>,
    y: Vec<f64>,
    sd: Vec<f64>,
}

fn curves(groups: &[Group], metric: &str) -> Result<Vec<Line>> {
    let mut out = Vec::new();
    for g in groups {
        let series: Vec<(Vec<usize>, Vec<f64>)> = g
            .runs
            .iter()
            .map(|r| r.series(metric))
            .collect::<Result<_>>()?;
        // rounds present in every seed
        let common: Vec<usize> = series[0]
            .0
            .iter()
            .copied()
            .filter(|r| series.iter().all(|s| s.0.contains(r)))
            .collect();
        let mut line = Line {
            label: format!("{} (n={})", g.label, g.runs.len()),
            x: Vec::new(),
            y: Vec::new(),
            sd: Vec::new(),
        };
        for r in common {
            let vals: Vec<f64> = series
                .iter()
                .map(|s| s.1[s.0.iter().position(|&q| q == r).unwrap()])
                .collect();
            let (m, sd) = mean_sd(&vals);
            line.x.push(r as f64);
            line.y.push(m);
            line.sd.push(sd);
        }
        out.push(line);
    }
    Ok(out)
}

/// The keys other than `key` that vary between groups with the same value of `key`: the
/// legend names these (a key fixed by x adds nothing a reader does not see on the axis).
fn varying_within(groups: &[Group], key: &str) -> Vec<String> {
    let value = |g: &Group| g.keys.get(key).cloned().unwrap_or_else(|| "-".into());
    differing_keys(groups)
        .into_iter()
        .filter(|k| k != key)
        .filter(|k| {
            groups.iter().any(|a| {
                groups
                    .iter()
                    .any(|b| value(a) == value(b) && a.keys.get(k) != b.keys.get(k))
            })
        })
        .collect()
}

/// The final metric of each group against `key`'s value. A key whose values are all numbers is a
/// numeric axis; otherwise (an algorithm, a model) its values are categories, placed at 0, 1, …
/// in the groups' order, and returned so the axis can name them. Legend entries name only the
/// keys that vary within one x value: a key fixed by x (each backbone's own weight decay) adds
/// nothing a reader does not see on the axis.
fn against_key(
    groups: &[Group],
    metric: &str,
    key: &str,
) -> Result<(Vec<Line>, Option<Vec<String>>)> {
    let key = resolve_key(groups, key)?;
    let value = |g: &Group| g.keys.get(&key).cloned().unwrap_or_else(|| "-".into());
    let numeric = groups.iter().all(|g| value(g).parse::<f64>().is_ok());
    let mut categories: Vec<String> = Vec::new();
    if !numeric {
        for g in groups {
            if !categories.contains(&value(g)) {
                categories.push(value(g));
            }
        }
    }
    let others = varying_within(groups, &key);
    let mut lines: Vec<Line> = Vec::new();
    for g in groups {
        let xv: f64 = if numeric {
            value(g).parse().unwrap_or(f64::NAN)
        } else {
            categories.iter().position(|c| *c == value(g)).unwrap_or(0) as f64
        };
        let finals: Vec<f64> = g
            .runs
            .iter()
            .map(|r| {
                r.series(metric)
                    .map(|s| s.1.last().copied().unwrap_or(f64::NAN))
            })
            .collect::<Result<_>>()?;
        let (m, sd) = mean_sd(&finals);
        let label = if others.is_empty() {
            metric.to_string()
        } else {
            g.describe(&others)
        };
        let i = match lines.iter().position(|l| l.label == label) {
            Some(i) => i,
            None => {
                lines.push(Line {
                    label,
                    x: Vec::new(),
                    y: Vec::new(),
                    sd: Vec::new(),
                });
                lines.len() - 1
            }
        };
        lines[i].x.push(xv);
        lines[i].y.push(m);
        lines[i].sd.push(sd);
    }
    for l in &mut lines {
        let mut idx: Vec<usize> = (0..l.x.len()).collect();
        idx.sort_by(|&a, &b| l.x[a].total_cmp(&l.x[b]));
        l.x = idx.iter().map(|&i| l.x[i]).collect();
        l.y = idx.iter().map(|&i| l.y[i]).collect();
        l.sd = idx.iter().map(|&i| l.sd[i]).collect();
    }
    if numeric {
        return Ok((lines, None));
    }
    // side by side within a category, so that equal values stay visible
    let n = lines.len();
    for (i, l) in lines.iter_mut().enumerate() {
        let shift = (i as f64 - (n as f64 - 1.0) / 2.0) * (0.5 / n.max(2) as f64);
        l.x.iter_mut().for_each(|x| *x += shift);
    }
    Ok((lines, Some(categories)))
}

/// Everything around the lines: axis labels, title, the x axis's kind, the legend's corner.
struct Frame<'a> {
    xlabel: &'a str,
    ylabel: &'a str,
    title: &'a str,
    logx: bool,
    /// Category names when x is a non-numeric key.
    categories: Option<&'a [String]>,
    /// The swept values on a log axis, as the specs write them: the ticks and their labels.
    log_ticks: &'a [(f64, String)],
    corner: SeriesLabelPosition,
    /// Fixed axis ranges (x in data units).
    xlim: Option<(f64, f64)>,
    ylim: Option<(f64, f64)>,
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Ticked, Ticked>>;

/// An axis with its ticks given (x: one per category, the swept values of a log axis, round
/// numbers of a curve; y: round numbers) and no minor ones.
struct Ticked {
    axis: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.axis.map(v, limit)
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.ticks.clone(),
            KeyPointWeight::Any => Vec::new(),
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.axis.range()
    }
}

/// The x and y ranges that hold every point (x through `fx`), and the distinct x values.
#[allow(clippy::type_complexity)]
fn bounds(lines: &[Line], fx: impl Fn(f64) -> f64) -> Option<((f64, f64), (f64, f64), Vec<f64>)> {
    let all_x: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.x.iter().map(|&x| fx(x)))
        .filter(|v| v.is_finite())
        .collect();
    let all_y: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.y.iter().zip(&l.sd).flat_map(|(y, s)| [y - s, y + s]))
        .filter(|v| v.is_finite())
        .collect();
    if all_x.is_empty() || all_y.is_empty() {
        return None;
    }
    let range = |v: &[f64]| {
        v.iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)))
    };
    let (xr, yr) = (range(&all_x), range(&all_y));
    // no more ticks than distinct x values (no half rounds)
    let mut xs = all_x;
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    Some((xr, yr, xs))
}

/// Line `i`'s values against categories: its marker with ±sd bars, no line between them.
fn draw_points<'c, DB: DrawingBackend + 'c>(
    chart: &mut Chart<'c, DB>,
    l: &Line,
    i: usize,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    let (color, m) = (style::color(i), style::marker(i));
    chart
        .draw_series(l.x.iter().zip(l.y.iter().zip(&l.sd)).map(|(&x, (&y, &s))| {
            ErrorBar::new_vertical(x, y - s, y, y + s, color.stroke_width(2), 8)
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            l.x.iter()
                .zip(&l.y)
                .map(|(&x, &y)| EmptyElement::at((x, y)) + m.shape(11, color.filled())),
        )
        .map_err(|e| e.to_string())?
        .label(l.label.clone())
        .legend(move |(x, y)| EmptyElement::at((x + 16, y)) + m.shape(11, color.filled()));
    Ok(())
}

/// The ±sd band of a line (x through `fx`), when it has one.
fn draw_band<DB: DrawingBackend>(
    chart: &mut Chart<DB>,
    l: &Line,
    color: RGBAColor,
    fx: impl Fn(f64) -> f64,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    if l.sd.iter().all(|&s| s <= 0.0) {
        return Ok(());
    }
    let upper =
        l.x.iter()
            .zip(l.y.iter().zip(&l.sd))
            .map(|(&x, (&y, &s))| (fx(x), y + s));
    let lower: Vec<(f64, f64)> =
        l.x.iter()
            .zip(l.y.iter().zip(&l.sd))
            .rev()
            .map(|(&x, (&y, &s))| (fx(x), y - s))
            .collect();
    let upper: Vec<(f64, f64)> = upper.collect();
    let poly: Vec<(f64, f64)> = upper.iter().copied().chain(lower.iter().copied()).collect();
    // a light fill, and each edge a thin line of the band's own colour, so that two bands that
    // overlap stay told apart (two fills alone blend into grey)
    chart
        .draw_series(std::iter::once(Polygon::new(
            poly,
            color.mix(0.12).filled(),
        )))
        .map_err(|e| e.to_string())?;
    let edge = color.mix(0.7).stroke_width(1);
    for side in [upper, lower] {
        chart
            .draw_series(std::iter::once(PathElement::new(side, edge)))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Line `i` as a curve (x through `fx`) in its colour, dash and marker, with its ±sd band;
/// markers at every point when it has few, else at about 12 of them.
fn draw_curve<'c, DB: DrawingBackend + 'c>(
    chart: &mut Chart<'c, DB>,
    l: &Line,
    i: usize,
    fx: impl Fn(f64) -> f64,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    let (color, m, dash) = (style::color(i), style::marker(i), style::dash(i));
    draw_band(chart, l, color, &fx)?;
    let pts: Vec<(f64, f64)> = l.x.iter().zip(&l.y).map(|(&x, &y)| (fx(x), y)).collect();
    let line = ShapeStyle::from(&color).stroke_width(2);
    let drawn = match dash {
        None => chart.draw_series(LineSeries::new(pts.clone(), line)),
        Some((d, g)) => chart.draw_series(DashedLineSeries::new(pts.clone(), d, g, line)),
    };
    drawn
        .map_err(|e| e.to_string())?
        .label(l.label.clone())
        .legend(move |(x, y)| {
            // the dash at half scale; a solid line is one dash longer than the sample
            let (d, g) = dash.map_or((40, 1), |(d, g)| (d / 2 + 1, g / 2 + 1));
            let sample = DashedPathElement::new(vec![(-14, 0), (14, 0)], d, g, line);
            EmptyElement::at((x + 16, y)) + m.shape(9, color.filled()) + sample
        });
    let every = pts.len().div_ceil(12).max(1);
    chart
        .draw_series(
            pts.iter()
                .step_by(every)
                .map(|&p| EmptyElement::at(p) + m.shape(9, color.filled())),
        )
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The y range to draw for values from `y0` to `y1`: at least 2 % of their magnitude (flat data
/// on a ±0.001 axis would make noise look like a signal), with a 5 % margin.
fn y_span(y0: f64, y1: f64) -> (f64, f64) {
    let magnitude = y0.abs().max(y1.abs());
    let least = if magnitude > 0.0 {
        0.02 * magnitude
    } else {
        1.0
    };
    let (mid, half) = ((y0 + y1) / 2.0, (y1 - y0).max(least) / 2.0);
    (mid - half * 1.1, mid + half * 1.1)
}

/// The fewest decimals that write every tick exactly (round ticks: `500`, not `500.0`; `0.25`).
fn decimals(ticks: &[f64]) -> usize {
    let step = ticks
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(f64::MAX, f64::min);
    let tol = if step.is_finite() { step * 1e-6 } else { 1e-9 };
    (0..=9)
        .find(|&d| {
            let p = 10f64.powi(d as i32);
            ticks.iter().all(|t| ((t * p).round() / p - t).abs() <= tol)
        })
        .unwrap_or(9)
}

/// The label of an x tick: the category there, a power of ten on a log axis, or the value.
fn x_label(v: f64, f: &Frame) -> String {
    if let Some(c) = f.categories {
        let i = v.round();
        match c.get(i as usize) {
            Some(name) if (v - i).abs() < 1e-6 && i >= 0.0 => name.clone(),
            _ => String::new(),
        }
    } else if f.logx {
        f.log_ticks
            .iter()
            .find(|(x, _)| (x.log10() - v).abs() < 1e-9)
            .map_or_else(|| format!("{:.0e}", 10f64.powf(v)), |(_, s)| s.clone())
    } else {
        format!("{v}")
    }
}

/// The y axis for values from `y0` to `y1` ([`y_span`]), with round ticks, the decimals that
/// write them, and the label area's width: the widest tick label (about 8 px a character at
/// 14 px) and the axis title beside it.
fn y_axis(y0: f64, y1: f64) -> (Ticked, usize, u32) {
    let (y0, y1) = y_span(y0, y1);
    let axis: RangedCoordf64 = (y0..y1).into();
    let ticks = axis.key_points(8);
    let d = decimals(&ticks);
    let width = ticks
        .iter()
        .map(|v| format!("{v:.d$}").len())
        .max()
        .unwrap_or(1);
    (Ticked { axis, ticks }, d, width as u32 * 8 + 36)
}

/// The x axis over `x0..x1` (through the log when the frame has one) with its ticks: one per
/// category, the swept values on a log axis, else at most 10 round numbers (no more than
/// distinct x values `xs`: no half rounds).
fn x_axis((x0, x1): (f64, f64), xs: Vec<f64>, f: &Frame) -> Ticked {
    let axis: RangedCoordf64 = match f.categories {
        Some(c) => -0.5..c.len() as f64 - 0.5,
        None if x1 > x0 => x0..x1,
        None => x0 - 0.5..x1 + 0.5,
    }
    .into();
    let ticks: Vec<f64> = match f.categories {
        Some(c) => (0..c.len()).map(|i| i as f64).collect(),
        None if f.logx => xs,
        None => axis.key_points(xs.len().clamp(2, 10)),
    };
    Ticked { axis, ticks }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    lines: &[Line],
    f: &Frame,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let logx = f.logx;
    let fx = |x: f64| if logx { x.log10() } else { x };
    let ((x0, x1), (y0, y1), xs) =
        bounds(lines, fx).ok_or_else(|| "nothing to plot: no finite values".to_string())?;
    let (x0, x1) = f.xlim.map_or((x0, x1), |(a, b)| (fx(a), fx(b)));
    let (y0, y1) = f.ylim.unwrap_or((y0, y1));
    let (yaxis, ydecimals, yarea) = y_axis(y0, y1);
    let xaxis = x_axis((x0, x1), xs, f);
    let mut chart = ChartBuilder::on(&root)
        .caption(f.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(yarea)
        .build_cartesian_2d(xaxis, yaxis)
        .map_err(|e| e.to_string())?;
    let xfmt = |v: &f64| x_label(*v, f);
    let yfmt = |v: &f64| format!("{v:.ydecimals$}");
    // a light major grid and no minor one
    chart
        .configure_mesh()
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .x_desc(f.xlabel)
        .y_desc(f.ylabel)
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, l) in lines.iter().enumerate() {
        if f.categories.is_some() {
            draw_points(&mut chart, l, i)?;
        } else {
            draw_curve(&mut chart, l, i, fx)?;
        }
    }
    chart
        .configure_series_labels()
        .legend_area_size(38)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(f.corner.clone())
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// The values of `key` across `groups`: an error unless it varies, and whether they are all
/// positive numbers (a log axis), with their texts.
fn swept(groups: &[Group], key: &str) -> Result<(bool, Vec<(f64, String)>)> {
    let values: Vec<String> = groups
        .iter()
        .map(|g| g.keys.get(key).cloned().unwrap_or_else(|| "-".into()))
        .collect();
    if values.iter().all(|v| *v == values[0]) {
        return Err(Error::Config(format!(
            "plot --x {key}: every run has {key} = {}; --x needs a key that varies between the runs",
            values[0]
        )));
    }
    let nums: Vec<Option<f64>> = values.iter().map(|v| v.parse::<f64>().ok()).collect();
    let logx = nums.iter().all(|v| v.is_some_and(|v| v > 0.0));
    let mut ticks: Vec<(f64, String)> = nums
        .iter()
        .zip(&values)
        .filter_map(|(n, v)| n.map(|n| (n, v.clone())))
        .collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    ticks.dedup_by(|a, b| a.0 == b.0);
    Ok((logx, ticks))
}

/// The lines in their frame, as a figure.
struct Curves<'a> {
    lines: &'a [Line],
    frame: &'a Frame<'a>,
}

impl Figure for Curves<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        draw(root, self.lines, self.frame)
    }
}

/// `o`'s legend labels and bands applied to `lines`: a label per line, or an error that names
/// the lines' own labels.
fn dress(lines: &mut [Line], o: &PlotOptions) -> Result<()> {
    if !o.labels.is_empty() {
        if o.labels.len() != lines.len() {
            let own: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
            return Err(Error::Config(format!(
                "plot --labels: {} label(s) for {} line(s); the lines, in order: {}",
                o.labels.len(),
                lines.len(),
                own.join("; ")
            )));
        }
        for (l, label) in lines.iter_mut().zip(&o.labels) {
            l.label = label.clone();
        }
    }
    if !o.bands {
        lines.iter_mut().for_each(|l| l.sd.fill(0.0));
    }
    Ok(())
}

/// What the figure's bands (or, on a categorical axis, bars) are, for its title: None where
/// there are none.
fn bands_caption(lines: &[Line], bars: bool) -> Option<&'static str> {
    let any = lines.iter().any(|l| l.sd.iter().any(|&s| s > 0.0));
    match (any, bars) {
        (false, _) => None,
        (true, false) => Some("bands: ±1 sd over seeds"),
        (true, true) => Some("bars: ±1 sd over seeds"),
    }
}

/// Plot `runs` into `out` (`.png`, `.svg` or `.pdf`).
pub fn plot(runs: Vec<Run>, out: &Path, o: &PlotOptions) -> Result<()> {
    // against a key that never tells configurations apart (the seed): the runs grouped by it too
    let keep = o.x.as_deref().and_then(ignored_named).unwrap_or("");
    let groups = group_keeping(runs, keep);
    let metric = style::metric_label(&o.metric);
    let (lines, xlabel, logx, categories, log_ticks) = match &o.x {
        Some(k) => {
            let key = resolve_key(&groups, k)?;
            let (positive, ticks) = swept(&groups, &key)?;
            let logx = match o.x_scale {
                Scale::Auto => positive,
                Scale::Linear => false,
                Scale::Log if positive => true,
                Scale::Log => {
                    return Err(Error::Config(format!(
                        "plot --x-scale log: {key} takes a value that is not a positive number; use --x-scale linear"
                    )));
                }
            };
            let (lines, categories) = against_key(&groups, &o.metric, k)?;
            (lines, short(&key).to_string(), logx, categories, ticks)
        }
        None if o.x_scale != Scale::Auto => {
            return Err(Error::Config(
                "plot --x-scale: a scale for a key's axis; give the key with --x".into(),
            ));
        }
        None => {
            let lines = curves(&groups, &o.metric)?;
            (
                lines,
                style::ROUNDS_LABEL.to_string(),
                false,
                None,
                Vec::new(),
            )
        }
    };
    let mut lines = lines;
    dress(&mut lines, o)?;
    let ylabel = match o.x {
        Some(_) => format!("final {metric}"),
        None => metric.clone(),
    };
    let title = o.title.clone().unwrap_or_else(|| {
        let what = match o.x {
            Some(_) => format!("final {metric} against {xlabel}"),
            None => format!("{metric} per round"),
        };
        match bands_caption(&lines, categories.is_some()) {
            Some(b) => format!("{what} ({b})"),
            None => what,
        }
    });
    let corner = match o.legend {
        Corner::LowerRight => SeriesLabelPosition::LowerRight,
        Corner::UpperRight => SeriesLabelPosition::UpperRight,
        Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
    };
    let frame = Frame {
        xlabel: &xlabel,
        ylabel: &ylabel,
        title: &title,
        logx,
        categories: categories.as_deref(),
        log_ticks: &log_ticks,
        corner,
        xlim: o.xlim,
        ylim: o.ylim,
    };
    let fig = Curves {
        lines: &lines,
        frame: &frame,
    };
    figure::write(out, (o.width, o.height), &fig)
}
