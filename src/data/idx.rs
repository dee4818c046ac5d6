//! IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (magic `0x0801` for
//! labels, `0x0803` for images, then the dimensions as u32) followed by the bytes, often
//! gzip-compressed. A directory holds `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
//! `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, each as is or with `.gz`.
//!
//! The same layout holds a user's own data set (`data.dataset = "idx"`): images N×H×W (magic
//! `0x0803`, one channel) or N×C×H×W (`0x0804`), labels 0..255; the classes are the labels
//! seen.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::fed::{Features, Split};
use crate::error::{Error, Result};

pub const TRAIN_IMAGES: &str = "train-images-idx3-ubyte";
pub const TRAIN_LABELS: &str = "train-labels-idx1-ubyte";
pub const TEST_IMAGES: &str = "t10k-images-idx3-ubyte";
pub const TEST_LABELS: &str = "t10k-labels-idx1-ubyte";

const LABELS: u32 = 0x0801;
const IMAGES: u32 = 0x0803;
/// Images with channels: N×C×H×W.
const IMAGES4: u32 = 0x0804;

/// `<dir>/<name>.gz`, else `<dir>/<name>`.
fn find(dir: &Path, name: &str) -> Result<PathBuf> {
    let gz = dir.join(format!("{name}.gz"));
    if gz.exists() {
        return Ok(gz);
    }
    let raw = dir.join(name);
    if raw.exists() {
        return Ok(raw);
    }
    Err(Error::Data(format!(
        "{}: no {name}.gz or {name} (expected the IDX files of MNIST / Fashion-MNIST: {TRAIN_IMAGES}, {TRAIN_LABELS}, {TEST_IMAGES}, {TEST_LABELS}, gzip-compressed or not)",
        dir.display()
    )))
}

/// The file's bytes, gunzipped when they start with the gzip magic.
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path)
        .map_err(|e| Error::io(format!("cannot read IDX file {}", path.display()), e))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| Error::Data(format!("{}: corrupt gzip data: {e}", path.display())))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Check the magic and dimensions, and that the body has exactly the bytes they promise.
fn parse<'a>(
    bytes: &'a [u8],
    path: &Path,
    magic: u32,
    dims: usize,
) -> Result<(Vec<usize>, &'a [u8])> {
    let head = 4 + 4 * dims;
    if bytes.len() < head || be32(bytes, 0) != magic {
        return Err(Error::Data(format!(
            "{}: not an IDX {} file (expected magic 0x{magic:08x} and {dims} dimensions)",
            path.display(),
            if magic == LABELS { "label" } else { "image" }
        )));
    }
    let shape: Vec<usize> = (0..dims).map(|d| be32(bytes, 4 + 4 * d) as usize).collect();
    // (a product too large to count promises more bytes than any file holds)
    let want = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_add(head))
        .unwrap_or(usize::MAX);
    if bytes.len() != want {
        return Err(Error::Data(format!(
            "{}: the header says {shape:?}, which is {want} bytes, but the file has {} (truncated or not this format)",
            path.display(),
            bytes.len()
        )));
    }
    Ok((shape, &bytes[head..]))
}

/// One split: images normalised with `(p/255 − mean)/std`, labels below `classes` and as many
/// as the images.
fn load_split(dir: &Path, names: (&str, &str), norm: (f32, f32), classes: usize) -> Result<Split> {
    let ip = find(dir, names.0)?;
    let lp = find(dir, names.1)?;
    let ib = read_bytes(&ip)?;
    let lb = read_bytes(&lp)?;
    // N×H×W, or N×C×H×W where a data set of one's own has channels
    let four = ib.len() >= 4 && be32(&ib, 0) == IMAGES4;
    let (ishape, pixels) = match four {
        true => parse(&ib, &ip, IMAGES4, 4)?,
        false => parse(&ib, &ip, IMAGES, 3)?,
    };
    let (c, h, w) = match four {
        true => (ishape[1], ishape[2], ishape[3]),
        false => (1, ishape[1], ishape[2]),
    };
    let (lshape, y) = parse(&lb, &lp, LABELS, 1)?;
    if ishape[0] != lshape[0] {
        return Err(Error::Data(format!(
            "{} has {} images but {} has {} labels",
            ip.display(),
            ishape[0],
            lp.display(),
            lshape[0]
        )));
    }
    if let Some(i) = y.iter().position(|&l| l as usize >= classes) {
        return Err(Error::Data(format!(
            "{}: label {i} is {} (expected 0..{})",
            lp.display(),
            y[i],
            classes - 1
        )));
    }
    let (mean, std) = norm;
    Ok(Split {
        x: Features::Images {
            c,
            h,
            w,
            data: pixels
                .iter()
                .map(|&p| (p as f32 / 255.0 - mean) / std)
                .collect(),
        },
        y: y.to_vec(),
        resident: Default::default(),
    })
}

fn check_dir(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::Data(format!(
            "IDX data directory {} {} (pass --data-dir DIR with {TRAIN_IMAGES}.gz and the other three files)",
            dir.display(),
            crate::data::check::absent(dir)
        )));
    }
    Ok(())
}

/// The train and test splits of an MNIST-layout directory (ten classes, one channel).
pub fn load_dir(dir: &Path, mean: f32, std: f32) -> Result<(Split, Split)> {
    check_dir(dir)?;
    Ok((
        load_split(dir, (TRAIN_IMAGES, TRAIN_LABELS), (mean, std), 10)?,
        load_split(dir, (TEST_IMAGES, TEST_LABELS), (mean, std), 10)?,
    ))
}

/// A user's own data set in the MNIST layout: images with or without channels, any labels
/// 0..255; the train and test splits, and the classes (the largest label seen, plus one).
pub fn load_own(dir: &Path, mean: f32, std: f32) -> Result<(Split, Split, usize)> {
    check_dir(dir)?;
    let train = load_split(dir, (TRAIN_IMAGES, TRAIN_LABELS), (mean, std), 256)?;
    let test = load_split(dir, (TEST_IMAGES, TEST_LABELS), (mean, std), 256)?;
    let dims = |x: &Features| {
        x.image_shape()
            .map_or("not images".to_string(), |(c, h, w)| {
                format!("{c} × {h} × {w}")
            })
    };
    if train.x.image_shape() != test.x.image_shape() {
        return Err(Error::Data(format!(
            "{}: the training images are {} but the test images {} (channels × height × width): {} and {} must hold images of one shape",
            dir.display(),
            dims(&train.x),
            dims(&test.x),
            TRAIN_IMAGES,
            TEST_IMAGES
        )));
    }
    let classes = train
        .y
        .iter()
        .chain(&test.y)
        .max()
        .map_or(1, |&m| m as usize + 1);
    Ok((train, test, classes))
}

/// Write an IDX file (tests build small real-format data sets with it).
pub fn write(path: &Path, shape: &[usize], body: &[u8]) -> std::io::Result<()> {
    // 0x0801 labels, 0x0803 images, 0x0804 images with channels
    let magic = 0x0800 + shape.len() as u32;
    let mut out = magic.to_be_bytes().to_vec();
    for &d in shape {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(body);
    std::fs::write(path, out)
}
