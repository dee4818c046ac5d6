//! The figures' style, fit for a paper: the Okabe–Ito colour-blind-safe palette (Okabe & Ito,
//! "Color Universal Design", 2008; also Wong, Nature Methods 8:441, 2011), a line style and a
//! marker per line so that the lines stay apart in grayscale, axis labels with units.

use plotters::prelude::*;

/// Okabe–Ito, in the order lines take them: blue, vermillion, bluish green, orange, reddish
/// purple, sky blue, black, yellow (last: the faintest on white).
const OKABE_ITO: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (230, 159, 0),
    (204, 121, 167),
    (86, 180, 233),
    (0, 0, 0),
    (240, 228, 66),
];

/// The colour of line `i`.
pub fn color(i: usize) -> RGBAColor {
    let (r, g, b) = OKABE_ITO[i % OKABE_ITO.len()];
    RGBColor(r, g, b).to_rgba()
}

/// The dash of line `i`: solid, dashed, dotted, long dashes, in turn (dash, gap in pixels).
pub fn dash(i: usize) -> Option<(u32, u32)> {
    [None, Some((10, 5)), Some((2, 4)), Some((18, 6))][i % 4]
}

/// The marker of line `i`: circle, triangle, square, cross, in turn (shifted against the dash
/// so that lines 0 and 4 differ too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

pub fn marker(i: usize) -> Marker {
    [
        Marker::Circle,
        Marker::Triangle,
        Marker::Square,
        Marker::Cross,
    ][(i + i / 4) % 4]
}

impl Marker {
    /// The outline, in pixels around the point, for a marker `size` pixels across.
    fn outline(self, size: i32) -> Vec<(i32, i32)> {
        let r = size as f64 / 2.0;
        let ring = |n: usize, phase: f64, radius: f64| -> Vec<(i32, i32)> {
            (0..n)
                .map(|k| {
                    let a = phase + k as f64 * std::f64::consts::TAU / n as f64;
                    (
                        (radius * a.cos()).round() as i32,
                        (radius * a.sin()).round() as i32,
                    )
                })
                .collect()
        };
        match self {
            Marker::Circle => ring(16, 0.0, r),
            // pointing up (y grows downwards)
            Marker::Triangle => ring(3, -std::f64::consts::FRAC_PI_2, r * 1.2),
            Marker::Square => ring(4, std::f64::consts::FRAC_PI_4, r * 1.1),
            Marker::Cross => {
                let (a, w) = (r.round() as i32, (r / 3.0).round().max(1.0) as i32);
                vec![
                    (-w, -a),
                    (w, -a),
                    (w, -w),
                    (a, -w),
                    (a, w),
                    (w, w),
                    (w, a),
                    (-w, a),
                    (-w, w),
                    (-a, w),
                    (-a, -w),
                    (-w, -w),
                ]
            }
        }
    }

    /// The marker, `size` pixels across, in pixels around a point: place it with
    /// `EmptyElement::at(point) + marker.shape(…)`.
    pub fn shape(self, size: i32, style: ShapeStyle) -> Polygon<(i32, i32)> {
        Polygon::new(self.outline(size), style)
    }
}

/// An axis label for a CSV column, with its unit.
pub fn metric_label(metric: &str) -> String {
    match metric {
        "test_acc" => "test accuracy (%)".into(),
        "test_loss" => "test loss (cross-entropy)".into(),
        "train_loss" => "training loss (cross-entropy)".into(),
        "lr" => "local learning rate".into(),
        "clipped_steps" => "clipped local steps per round".into(),
        "mean_clip_norm" => "mean norm before clipping".into(),
        "update_norm" => "global update norm (L2)".into(),
        "server_lr" => "server learning rate".into(),
        "server_state_norm" => "server state norm (L2)".into(),
        "elapsed_s" => "wall time (s)".into(),
        other => other.replace('_', " "),
    }
}

/// The x axis of a curve.
pub const ROUNDS_LABEL: &str = "rounds completed";
