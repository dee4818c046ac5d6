//! PDF figures: the plot's SVG converted to vector PDF by `svg2pdf` (the typst project's
//! converter), with the bundled font embedded, so that no system font is needed.

use std::sync::Arc;

use svg2pdf::usvg;

/// The PDF of `svg`, its text set in `font` (a TrueType font, the SVG's `sans-serif`).
pub fn from_svg(svg: &str, font: &[u8]) -> Result<Vec<u8>, String> {
    let mut db = usvg::fontdb::Database::new();
    db.load_font_data(font.to_vec());
    let family = db
        .faces()
        .next()
        .and_then(|f| f.families.first().map(|(name, _)| name.clone()))
        .ok_or("the bundled font did not load")?;
    db.set_sans_serif_family(family);
    let options = usvg::Options {
        fontdb: Arc::new(db),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions::default(),
    )
    .map_err(|e| e.to_string())
}
