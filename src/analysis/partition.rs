//! How a spec splits the data among clients, as a researcher checks it before trusting a
//! non-IID result (as FL-bench and FLGo show it): each client's size and samples per class, as
//! CSV, a summary, and a figure (a bar per client, stacked by class).

use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::figure::Figure;
use super::stats::mean_sd;

/// Each client's samples per class (`counts[client][class]`).
pub struct Partition {
    pub counts: Vec<Vec<usize>>,
}

impl Partition {
    fn sizes(&self) -> Vec<usize> {
        self.counts.iter().map(|c| c.iter().sum()).collect()
    }

    /// `client,size,class_0,…`: one row per client.
    pub fn csv(&self) -> String {
        let classes = self.counts.first().map_or(0, Vec::len);
        let mut out = String::from("client,size");
        for k in 0..classes {
            let _ = write!(out, ",class_{k}");
        }
        out.push('\n');
        for (i, c) in self.counts.iter().enumerate() {
            let _ = write!(out, "{i},{}", c.iter().sum::<usize>());
            for n in c {
                let _ = write!(out, ",{n}");
            }
            out.push('\n');
        }
        out
    }

    /// The mean total-variation distance between each client's label distribution and the
    /// whole training set's: 0 for an IID split, near 1 when each client holds other classes.
    pub fn label_skew(&self) -> f64 {
        let classes = self.counts.first().map_or(0, Vec::len);
        let total: Vec<f64> = (0..classes)
            .map(|k| self.counts.iter().map(|c| c[k] as f64).sum())
            .collect();
        let all: f64 = total.iter().sum();
        let tv: Vec<f64> = self
            .counts
            .iter()
            .filter(|c| c.iter().sum::<usize>() > 0)
            .map(|c| {
                let n = c.iter().sum::<usize>() as f64;
                0.5 * c
                    .iter()
                    .zip(&total)
                    .map(|(&x, &t)| (x as f64 / n - t / all).abs())
                    .sum::<f64>()
            })
            .collect();
        mean_sd(&tv).0
    }

    /// A few lines: clients, sizes, classes per client, label skew.
    pub fn summary(&self) -> String {
        let sizes: Vec<f64> = self.sizes().iter().map(|&s| s as f64).collect();
        let (m, sd) = mean_sd(&sizes);
        let min = sizes.iter().copied().fold(f64::INFINITY, f64::min);
        let max = sizes.iter().copied().fold(0.0, f64::max);
        let held: Vec<f64> = self
            .counts
            .iter()
            .map(|c| c.iter().filter(|&&n| n > 0).count() as f64)
            .collect();
        let (hm, _) = mean_sd(&held);
        let hmin = held.iter().copied().fold(f64::INFINITY, f64::min);
        format!(
            "{} clients, {} training samples\nclient size: mean {m:.1}, sd {sd:.1}, min {min}, max {max}\nclasses per client: mean {hm:.2}, min {hmin} (of {})\nlabel skew (mean total-variation distance to the global label distribution): {:.3}\n",
            self.counts.len(),
            sizes.iter().sum::<f64>(),
            self.counts.first().map_or(0, Vec::len),
            self.label_skew()
        )
    }
}

/// The figure: a bar per client, its height the client's size, stacked by class (one colour a
/// class, cycling past ten); the title carries the label skew.
pub struct PartitionFigure<'a> {
    pub partition: &'a Partition,
    pub title: String,
}

/// The colour of class `k`: Okabe–Ito's eight, then Tol's indigo and grey.
fn class_color(k: usize) -> RGBAColor {
    match k % 10 {
        8 => RGBColor(51, 34, 136).to_rgba(),
        9 => RGBColor(187, 187, 187).to_rgba(),
        i => super::style::color(i),
    }
}

impl Figure for PartitionFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let counts = &self.partition.counts;
        let (n, classes) = (counts.len(), counts.first().map_or(0, Vec::len));
        let top = self.partition.sizes().into_iter().max().unwrap_or(1).max(1) as f64;
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        // the classes' key in a margin of its own, beside the bars
        let key_width = if classes <= 10 { 90 } else { 0 };
        let (w, _) = root.dim_in_pixel();
        let (area, key) = root.split_horizontally(w.saturating_sub(key_width));
        let mut chart = ChartBuilder::on(&area)
            .caption(&self.title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top * 1.05)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .x_desc("client")
            .y_desc("training samples")
            .x_labels(n.clamp(2, 12))
            .x_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(|e| e.to_string())?;
        for k in 0..classes {
            let color = class_color(k);
            let bars = counts.iter().enumerate().map(move |(i, c)| {
                let below: usize = c[..k].iter().sum();
                let (x, y0) = (i as f64, below as f64);
                Rectangle::new([(x - 0.4, y0), (x + 0.4, y0 + c[k] as f64)], color.filled())
            });
            chart.draw_series(bars).map_err(|e| e.to_string())?;
            if classes <= 10 {
                let y = 60 + 22 * k as i32;
                key.draw(&Rectangle::new([(8, y - 6), (22, y + 6)], color.filled()))
                    .map_err(|e| e.to_string())?;
                key.draw(&Text::new(
                    format!("class {k}"),
                    (28, y - 7),
                    ("sans-serif", 13),
                ))
                .map_err(|e| e.to_string())?;
            }
        }
        root.present().map_err(|e| e.to_string())
    }
}
