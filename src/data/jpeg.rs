//! JPEG files decoded into planar RGB bytes (`3 × h × w`, the layout of a batch), in parallel,
//! through the `image` crate. Grayscale and CMYK files are converted to RGB, as PIL's
//! `convert('RGB')` does in the papers' loaders.

use std::path::{Path, PathBuf};

use image::imageops::FilterType;
use rayon::prelude::*;

use crate::error::{Error, Result};

/// What to do with a decoded image's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Every image must be `side × side` (Tiny-ImageNet: 64).
    Exact(u32),
    /// Resize to `side × side` with a bilinear filter that widens its support when shrinking
    /// (torchvision's `Resize((side, side))` on a PIL image, antialiased: CelebA's 84).
    Resize(u32),
}

impl Size {
    pub fn side(self) -> usize {
        match self {
            Size::Exact(s) | Size::Resize(s) => s as usize,
        }
    }
}

/// Decode one JPEG file into planar RGB bytes of `size`.
pub fn decode(path: &Path, size: Size) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::Data(format!("cannot read image {}: {e}", path.display())))?;
    let img = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg)
        .map_err(|e| Error::Data(format!("{}: not a readable JPEG ({e})", path.display())))?;
    let rgb = img.to_rgb8();
    let rgb = match size {
        Size::Exact(s) if rgb.dimensions() != (s, s) => {
            let (w, h) = rgb.dimensions();
            return Err(Error::Data(format!(
                "{}: {w}×{h} pixels, expected {s}×{s}",
                path.display()
            )));
        }
        Size::Exact(_) => rgb,
        Size::Resize(s) => image::imageops::resize(&rgb, s, s, FilterType::Triangle),
    };
    let plane = size.side() * size.side();
    let mut out = vec![0u8; 3 * plane];
    for (i, px) in rgb.pixels().enumerate() {
        for (ch, &v) in px.0.iter().enumerate() {
            out[ch * plane + i] = v;
        }
    }
    Ok(out)
}

/// Decode `paths` in parallel, concatenated in order; the first failure is the error.
pub fn decode_all(paths: &[PathBuf], size: Size) -> Result<Vec<u8>> {
    let per = 3 * size.side() * size.side();
    let mut out = vec![0u8; paths.len() * per];
    out.par_chunks_mut(per)
        .zip(paths.par_iter())
        .try_for_each(|(dst, p)| {
            dst.copy_from_slice(&decode(p, size)?);
            Ok::<(), Error>(())
        })?;
    Ok(out)
}
