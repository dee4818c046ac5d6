//! The CIFAR-100 binary version: `train.bin` (50,000 records) and `test.bin` (10,000), each record
//! a coarse label byte (20 superclasses), a fine label byte (100 classes) and 3072 pixel bytes
//! (R, G, B planes, 32×32 row-major). Fine labels by default, coarse with
//! `data.cifar100_labels = "coarse"`. Normalised with the constants of the FedACG code (its
//! CIFAR-100 experiments are the papers' use of it).

use std::path::Path;

use super::cifar::{Hold, Layout, decode_records};
use super::fed::Split;
use crate::config::Cifar100Labels;
use crate::error::{Error, Result};

pub const TRAIN_FILE: &str = "train.bin";
pub const TEST_FILE: &str = "test.bin";
pub const RECORD: usize = 2 + 3072;
/// FedACG's `datasets/configs.yaml`.
pub const MEAN: [f32; 3] = [0.5071, 0.4867, 0.4408];
pub const STD: [f32; 3] = [0.2675, 0.2565, 0.2761];

fn layout(labels: Cifar100Labels) -> Layout {
    let (label_at, classes) = match labels {
        Cifar100Labels::Coarse => (0, 20),
        Cifar100Labels::Fine => (1, 100),
    };
    Layout {
        labels: 2,
        label_at,
        classes,
        mean: MEAN,
        std: STD,
    }
}

/// The classes of `labels`.
pub fn classes(labels: Cifar100Labels) -> usize {
    layout(labels).classes as usize
}

fn read(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| {
        Error::Data(format!(
            "cannot read CIFAR-100 file {}: {e} (expected the binary version: train.bin and test.bin)",
            path.display()
        ))
    })?;
    if bytes.is_empty() || bytes.len() % RECORD != 0 {
        return Err(Error::Data(format!(
            "{}: {} bytes is not a whole number of {RECORD}-byte records (coarse label, fine label, 3072 pixels; the official train.bin has {} bytes)",
            path.display(),
            bytes.len(),
            50_000 * RECORD
        )));
    }
    Ok(bytes)
}

/// The train and test splits of a directory holding `train.bin` and `test.bin`.
pub fn load_dir(dir: &Path, labels: Cifar100Labels, hold: Hold) -> Result<(Split, Split)> {
    if !dir.is_dir() {
        return Err(Error::Data(format!(
            "CIFAR-100 directory {} {} (pass --data-dir DIR with train.bin and test.bin; scripts/fetch_cifar100.sh fetches them)",
            dir.display(),
            crate::data::check::absent(dir)
        )));
    }
    let l = layout(labels);
    let (tr, te) = (dir.join(TRAIN_FILE), dir.join(TEST_FILE));
    Ok((
        decode_records(&read(&tr)?, &tr, &l, hold)?,
        decode_records(&read(&te)?, &te, &l, hold)?,
    ))
}

/// Write records in the binary layout (tests build small files with it).
pub fn write_file(path: &Path, coarse: &[u8], fine: &[u8], pixels: &[u8]) -> std::io::Result<()> {
    assert_eq!(coarse.len(), fine.len());
    assert_eq!(pixels.len(), fine.len() * 3072);
    let mut out = Vec::with_capacity(fine.len() * RECORD);
    for i in 0..fine.len() {
        out.push(coarse[i]);
        out.push(fine[i]);
        out.extend_from_slice(&pixels[i * 3072..(i + 1) * 3072]);
    }
    std::fs::write(path, out)
}
