//! Tiny-ImageNet in its official folder layout (`tiny-imagenet-200/`): `wnids.txt` (the 200
//! classes), `train/<wnid>/images/*.JPEG` listed by `train/<wnid>/<wnid>_boxes.txt`, and
//! `val/images/*.JPEG` labelled by `val/val_annotations.txt` (the test split, as in the FedACG
//! code; the official `test/` has no labels). 64×64 RGB (grayscale files converted), decoded
//! once into an image cache beside the data. Normalised with the FedACG code's constants.
//!
//! Order, as the FedACG code's `TinyImageNet` has it where it is defined: a class's label is its
//! line in `wnids.txt`; a class's training images come in the line order of its `_boxes.txt`;
//! the test images in the line order of `val_annotations.txt`. The FedACG code lists the class
//! folders with `os.listdir`, whose order depends on the file system; fedrun takes them in
//! `wnids.txt` order (see docs/DATA.md on what that means for the published split files).

use std::path::{Path, PathBuf};

use super::fed::Split;
use super::image_cache::{self, Decoded, Images};
use super::jpeg::{self, Size};
use crate::error::{Error, Result};

pub const SIDE: u32 = 64;
pub const CACHE_FILE: &str = "fedrun-cache-tiny-imagenet.bin";
/// FedACG's `datasets/configs.yaml`.
pub const MEAN: [f32; 3] = [0.4802, 0.4481, 0.3975];
pub const STD: [f32; 3] = [0.2770, 0.2691, 0.2821];

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::Data(format!(
            "cannot read Tiny-ImageNet file {}: {e} (expected the official tiny-imagenet-200/ layout: wnids.txt, train/, val/; scripts/fetch_tiny_imagenet.sh fetches it)",
            path.display()
        ))
    })
}

/// The class ids of `wnids.txt`, in its line order.
fn wnids(dir: &Path) -> Result<Vec<String>> {
    let path = dir.join("wnids.txt");
    let ids: Vec<String> = read_text(&path)?
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    if ids.is_empty() || ids.len() > 256 {
        return Err(Error::Data(format!(
            "{}: {} classes; expected 1 to 256 (the official file lists 200)",
            path.display(),
            ids.len()
        )));
    }
    Ok(ids)
}

/// The first tab- or space-separated field of each non-empty line, and the second (if asked).
fn fields(path: &Path, second: bool) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (n, line) in read_text(path)?.lines().enumerate() {
        let mut f = line.split_whitespace();
        let Some(a) = f.next() else { continue };
        let b = f.next().unwrap_or_default().to_string();
        if second && b.is_empty() {
            return Err(Error::Data(format!(
                "{} line {}: expected a file name and a class id",
                path.display(),
                n + 1
            )));
        }
        out.push((a.to_string(), b));
    }
    Ok(out)
}

/// Image files with their labels.
type Files = Vec<(PathBuf, u8)>;

/// Every image file with its label: the training images, then the test (val) images.
fn listing(dir: &Path, ids: &[String]) -> Result<(Files, Files)> {
    let mut train = Vec::new();
    for (label, id) in ids.iter().enumerate() {
        let class = dir.join("train").join(id);
        for (name, _) in fields(&class.join(format!("{id}_boxes.txt")), false)? {
            train.push((class.join("images").join(name), label as u8));
        }
    }
    let val = dir.join("val");
    let mut test = Vec::new();
    let annotations = val.join("val_annotations.txt");
    for (n, (name, id)) in fields(&annotations, true)?.into_iter().enumerate() {
        let label = ids.iter().position(|w| *w == id).ok_or_else(|| {
            Error::Data(format!(
                "{} line {}: class {id:?} is not in wnids.txt",
                annotations.display(),
                n + 1
            ))
        })?;
        test.push((val.join("images").join(name), label as u8));
    }
    Ok((train, test))
}

fn decode(files: &Files) -> Result<Images> {
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    Ok(Images {
        labels: files.iter().map(|(_, l)| *l).collect(),
        pixels: jpeg::decode_all(&paths, Size::Exact(SIDE))?,
    })
}

/// The train and test splits and the number of classes of a `tiny-imagenet-200` directory.
pub fn load_dir(dir: &Path) -> Result<(Split, Split, usize)> {
    if !dir.is_dir() {
        return Err(Error::Data(format!(
            "Tiny-ImageNet directory {} {} (pass --data-dir DIR, the tiny-imagenet-200 folder; scripts/fetch_tiny_imagenet.sh fetches it)",
            dir.display(),
            crate::data::check::absent(dir)
        )));
    }
    let ids = wnids(dir)?;
    let (train, test) = listing(dir, &ids)?;
    let (files, labels): (Vec<PathBuf>, Vec<u8>) = train.iter().chain(&test).cloned().unzip();
    let fp = image_cache::fingerprint(&format!("tiny-imagenet {SIDE}"), dir, &files, &labels)?;
    let d: Decoded = image_cache::load(&dir.join(CACHE_FILE), fp, || {
        Ok(Decoded {
            side: SIDE as usize,
            train: decode(&train)?,
            test: decode(&test)?,
        })
    })?;
    Ok((
        d.train.into_split(d.side, MEAN, STD),
        d.test.into_split(d.side, MEAN, STD),
        ids.len(),
    ))
}
