//! What `fedrun check` says of a spec's data before a run loads it: whether the files the
//! reader needs are there and their headers (or sizes, for formats without one) read as the
//! format, and what fetches them. Nothing is decoded: a probe reads a few bytes a file.

use std::io::Read;
use std::path::Path;

use crate::config::{Dataset, Spec};

/// How to get a data set (docs/DATA.md).
fn fetch(d: Dataset) -> &'static str {
    match d {
        Dataset::Cifar10 => "scripts/fetch_cifar10.sh DIR fetches it",
        Dataset::Cifar100 => "scripts/fetch_cifar100.sh DIR fetches it",
        Dataset::TinyImagenet => "scripts/fetch_tiny_imagenet.sh DIR fetches it",
        Dataset::Femnist => "scripts/fetch_femnist.sh DIR makes it",
        Dataset::Celeba => "scripts/fetch_celeba.sh DIR makes it",
        Dataset::Leaf => "LEAF's preprocess.sh makes it (docs/DATA.md)",
        Dataset::Mnist => "the four MNIST IDX files, gzipped or not (docs/DATA.md)",
        Dataset::FashionMnist => "Debian's dataset-fashion-mnist package installs it",
        Dataset::Idx => "your images and labels in the MNIST layout (docs/DATA.md)",
        Dataset::Shakespeare | Dataset::Synthetic => "nothing to fetch",
    }
}

/// A line on the data at `path` for `spec`: what was found, or what is wrong and what fetches
/// it (Err).
pub fn probe(spec: &Spec, path: &Path) -> Result<String, String> {
    let d = spec.data.dataset;
    let found = match d {
        Dataset::Synthetic => return Ok("generated from the seed: nothing to read".into()),
        Dataset::Shakespeare => plays(path),
        Dataset::Cifar10 => cifar(path, &cifar10_files(), 3073),
        Dataset::Cifar100 => cifar(path, &["train.bin", "test.bin"], 3074),
        Dataset::Mnist | Dataset::FashionMnist | Dataset::Idx => idx(path),
        Dataset::TinyImagenet => files(path, &["wnids.txt", "train", "val/val_annotations.txt"]),
        Dataset::Leaf | Dataset::Femnist | Dataset::Celeba => leaf(path),
    };
    found
        .map(|what| format!("{}: {what}", path.display()))
        .map_err(|why| format!("{}: {why}; {}", path.display(), fetch(d)))
}

/// The plays as the reader finds them (`shakespeare::locate`): the embedded copy, a folder of
/// `.txt` plays, or an archive, named or in a folder (its gzip header read).
fn plays(path: &Path) -> Result<String, String> {
    use super::shakespeare::{Plays, locate};
    match locate(path).map_err(|e| e.to_string())? {
        Plays::Embedded => Ok("the plays embedded in the binary".into()),
        Plays::Folder(p) => Ok(format!("a folder of {} plays (.txt files)", p.len())),
        Plays::Archive(a) => {
            let what = match a == path {
                true => "the plays archive",
                false => "a folder holding plays.tar.gz",
            };
            gzip(&a).map(|_| format!("{what} (its gzip header read)"))
        }
    }
}

fn cifar10_files() -> Vec<&'static str> {
    let train = super::cifar::TRAIN_FILES.iter().copied();
    train.chain([super::cifar::TEST_FILE]).collect()
}

/// The binary CIFAR files: no header, so each file's size is its check (a whole number of
/// records, as the reader wants).
fn cifar(dir: &Path, files: &[&str], record: u64) -> Result<String, String> {
    let mut records = 0;
    for f in files {
        let p = dir.join(f);
        let len = std::fs::metadata(&p)
            .map_err(|e| format!("{f}: {e}"))?
            .len();
        if len == 0 || len % record != 0 {
            return Err(format!(
                "{f} has {len} bytes, not a whole number of {record}-byte records"
            ));
        }
        records += len / record;
    }
    Ok(format!("{} binary files, {records} images", files.len()))
}

/// The four IDX files, plain or gzipped, each with its magic number.
fn idx(dir: &Path) -> Result<String, String> {
    use super::idx::{TEST_IMAGES, TEST_LABELS, TRAIN_IMAGES, TRAIN_LABELS};
    for (f, images) in [
        (TRAIN_IMAGES, true),
        (TRAIN_LABELS, false),
        (TEST_IMAGES, true),
        (TEST_LABELS, false),
    ] {
        let plain = dir.join(f);
        let gz = dir.join(format!("{f}.gz"));
        let head = if plain.exists() {
            first_bytes(std::fs::File::open(&plain).map_err(|e| format!("{f}: {e}"))?)
        } else {
            let file = std::fs::File::open(&gz).map_err(|e| format!("{f}(.gz): {e}"))?;
            first_bytes(flate2::read::GzDecoder::new(file))
        }
        .map_err(|e| format!("{f}: {e}"))?;
        // IDX: two zero bytes, the type (0x08: unsigned bytes), the rank
        if head[..3] != [0, 0, 8] || (images && head[3] < 3) || (!images && head[3] != 1) {
            return Err(format!("{f} does not start as an IDX file ({head:02x?})"));
        }
    }
    Ok("the four IDX files with their headers".into())
}

fn first_bytes(mut r: impl Read) -> std::io::Result<[u8; 4]> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn gzip(path: &Path) -> Result<(), String> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut b = [0u8; 2];
    (&f).read_exact(&mut b).map_err(|e| e.to_string())?;
    (b == [0x1f, 0x8b])
        .then_some(())
        .ok_or_else(|| "not a gzip file".into())
}

fn files(dir: &Path, names: &[&str]) -> Result<String, String> {
    for n in names {
        if !dir.join(n).exists() {
            return Err(format!("{n} is missing"));
        }
    }
    Ok(format!("{} found", names.join(", ")))
}

/// LEAF's layout as the readers find it: `train/` and `test/` with JSON files, or the JSON files
/// side by side with `train` and `test` in their names (`all_data_0_niid_0_keep_0_train_9.json`).
fn leaf(dir: &Path) -> Result<String, String> {
    let mut found = Vec::new();
    for part in ["train", "test"] {
        let files = super::leaf::json_files(dir, part).map_err(|e| e.to_string())?;
        found.push(format!("{} {part}", files.len()));
    }
    Ok(format!("LEAF's JSON files ({} file(s))", found.join(", ")))
}
