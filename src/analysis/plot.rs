//! `fedrun plot`: curves of a CSV column against the round (seed groups as a mean line with a
//! ±sd band), or the final value against a swept key: a numeric key as an axis (FedNAR Figure 2),
//! any other (`fl.algorithm`) as categories with ±sd bars (Table 1). PNG or SVG, chosen by
//! the output's extension. Text is drawn with the bundled DejaVu Sans, so no system fonts are
//! needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::runs::Run;
use super::runs::{Group, differing_keys, group, resolve_key, short};
use super::stats::mean_sd;
use crate::error::{Error, Result};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

pub struct PlotOptions {
    pub metric: String,
    /// Plot the final metric against this spec key instead of the curve.
    pub x: Option<String>,
    pub width: u32,
    pub height: u32,
    pub title: Option<String>,
    /// The legend's corner.
    pub legend: Corner,
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
    let others: Vec<String> = differing_keys(groups)
        .into_iter()
        .filter(|k| *k != key)
        .filter(|k| {
            groups.iter().any(|a| {
                groups
                    .iter()
                    .any(|b| value(a) == value(b) && a.keys.get(k) != b.keys.get(k))
            })
        })
        .collect();
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
    corner: SeriesLabelPosition,
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

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

/// One line's values against categories: points with ±sd bars, no line between them.
fn draw_points<DB: DrawingBackend>(
    chart: &mut Chart<DB>,
    l: &Line,
    color: RGBAColor,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    chart
        .draw_series(l.x.iter().zip(l.y.iter().zip(&l.sd)).map(|(&x, (&y, &s))| {
            ErrorBar::new_vertical(x, y - s, y, y + s, color.stroke_width(2), 8)
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            l.x.iter()
                .zip(&l.y)
                .map(|(&x, &y)| Circle::new((x, y), 5, color.filled())),
        )
        .map_err(|e| e.to_string())?
        .label(l.label.clone())
        .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
    Ok(())
}

/// One line as a curve (x through `fx`) with its ±sd band, and markers when it has few points.
fn draw_curve<DB: DrawingBackend>(
    chart: &mut Chart<DB>,
    l: &Line,
    color: RGBAColor,
    fx: impl Fn(f64) -> f64,
) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    if l.sd.iter().any(|&s| s > 0.0) {
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
        let poly: Vec<(f64, f64)> = upper.chain(lower).collect();
        chart
            .draw_series(std::iter::once(Polygon::new(poly, color.mix(0.2).filled())))
            .map_err(|e| e.to_string())?;
    }
    let pts: Vec<(f64, f64)> = l.x.iter().zip(&l.y).map(|(&x, &y)| (fx(x), y)).collect();
    let style = ShapeStyle::from(&color).stroke_width(2);
    chart
        .draw_series(LineSeries::new(pts.clone(), style))
        .map_err(|e| e.to_string())?
        .label(l.label.clone())
        .legend(move |(x, y)| {
            PathElement::new(
                vec![(x, y), (x + 20, y)],
                ShapeStyle::from(&color).stroke_width(2),
            )
        });
    if pts.len() <= 30 {
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
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
        format!("{:.0e}", 10f64.powf(v))
    } else {
        format!("{v}")
    }
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
    let pad = ((y1 - y0) * 0.05).max(1e-3);
    let xr = match f.categories {
        Some(c) => -0.5..c.len() as f64 - 0.5,
        None if x1 > x0 => x0..x1,
        None => x0 - 0.5..x1 + 0.5,
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(f.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(xr, (y0 - pad)..(y1 + pad))
        .map_err(|e| e.to_string())?;
    let xfmt = |v: &f64| x_label(*v, f);
    // a category axis: one tick per category (n + 1 lets plotters' tick search settle on 1)
    let ticks = f.categories.map_or(xs.len().clamp(2, 10), |c| c.len() + 1);
    chart
        .configure_mesh()
        .x_labels(ticks)
        .x_desc(f.xlabel)
        .y_desc(f.ylabel)
        .x_label_formatter(&xfmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, l) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        if f.categories.is_some() {
            draw_points(&mut chart, l, color)?;
        } else {
            draw_curve(&mut chart, l, color, fx)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(f.corner.clone())
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// Plot `runs` into `out` (`.png` or `.svg`).
pub fn plot(runs: Vec<Run>, out: &Path, o: &PlotOptions) -> Result<()> {
    register_font();
    let groups = group(runs);
    let (lines, xlabel, logx, categories) = match &o.x {
        Some(k) => {
            let key = resolve_key(&groups, k)?;
            let logx = groups.iter().all(|g| {
                g.keys
                    .get(&key)
                    .and_then(|v| v.parse::<f64>().ok())
                    .is_some_and(|v| v > 0.0)
            });
            let (lines, categories) = against_key(&groups, &o.metric, k)?;
            (lines, short(&key).to_string(), logx, categories)
        }
        None => (
            curves(&groups, &o.metric)?,
            "round".to_string(),
            false,
            None,
        ),
    };
    let ylabel = if o.x.is_some() {
        format!("final {}", o.metric)
    } else {
        o.metric.clone()
    };
    let title = o.title.clone().unwrap_or_else(|| {
        if o.x.is_some() {
            format!("final {} against {xlabel}", o.metric)
        } else {
            format!("{} per round", o.metric)
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
        corner,
    };
    let size = (o.width, o.height);
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let res = match ext.as_str() {
        "svg" => draw(
            SVGBackend::new(out, size).into_drawing_area(),
            &lines,
            &frame,
        ),
        "png" => draw(
            BitMapBackend::new(out, size).into_drawing_area(),
            &lines,
            &frame,
        ),
        _ => {
            return Err(Error::Config(format!(
                "{}: the output must end in .png or .svg",
                out.display()
            )));
        }
    };
    res.map_err(|e| Error::Run(format!("cannot draw {}: {e}", out.display())))
}
