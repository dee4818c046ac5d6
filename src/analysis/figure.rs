//! Writing a figure: PNG, SVG, or PDF (the SVG, converted by svg2pdf), chosen by the output's
//! extension; text in the bundled DejaVu Sans, so no system fonts are needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Something that draws itself on any plotters backend.
pub trait Figure {
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static;
}

/// Write `fig` to `out` at `size` pixels (the PDF's page has the same size in points).
pub fn write(out: &Path, size: (u32, u32), fig: &impl Figure) -> Result<()> {
    register_font();
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let cannot = |e: String| Error::Run(format!("cannot draw {}: {e}", out.display()));
    match ext.as_str() {
        "svg" => fig.draw(SVGBackend::new(out, size).into_drawing_area()),
        "png" => fig.draw(BitMapBackend::new(out, size).into_drawing_area()),
        "pdf" => {
            let mut svg = String::new();
            fig.draw(SVGBackend::with_string(&mut svg, size).into_drawing_area())
                .map_err(cannot)?;
            let pdf = super::pdf::from_svg(&svg, FONT).map_err(cannot)?;
            return crate::io::write_atomic(out, &pdf);
        }
        _ => {
            return Err(Error::Config(format!(
                "{}: the output must end in .png, .svg or .pdf",
                out.display()
            )));
        }
    }
    .map_err(cannot)
}
