//! The CIFAR-10 binary version: `data_batch_1.bin` … `data_batch_5.bin` and `test_batch.bin`,
//! each a sequence of records of 1 label byte and 3072 pixel bytes (R, G, B planes, 32×32
//! row-major). The official files hold 10,000 records each (30,730,000 bytes).

use super::fed::{Features, Split};
use crate::error::{Error, Result};
use std::path::Path;

pub const RECORD: usize = 1 + 3 * 32 * 32;
pub const OFFICIAL_RECORDS: usize = 10_000;
pub const TRAIN_FILES: [&str; 5] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];
pub const TEST_FILE: &str = "test_batch.bin";
/// FedNAR / FedExP normalisation (§8.3).
pub const MEAN: [f32; 3] = [0.491, 0.482, 0.447];
pub const STD: [f32; 3] = [0.247, 0.243, 0.262];

/// Read one file's raw bytes, checking that it is a whole number of records.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| {
        Error::Data(format!(
            "cannot read CIFAR-10 file {}: {e} (expected the binary version: data_batch_1..5.bin and test_batch.bin)",
            path.display()
        ))
    })?;
    if bytes.is_empty() || bytes.len() % RECORD != 0 {
        return Err(Error::Data(format!(
            "{}: {} bytes is not a whole number of {RECORD}-byte records (the official file has {} bytes)",
            path.display(),
            bytes.len(),
            OFFICIAL_RECORDS * RECORD
        )));
    }
    Ok(bytes)
}

/// How records of a CIFAR binary file are laid out: label bytes before the pixels, which of
/// them is the label, its bound, and the normalisation.
pub struct Layout {
    pub labels: usize,
    pub label_at: usize,
    pub classes: u8,
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

/// CIFAR-10: one label byte, FedNAR's normalisation.
const CIFAR10: Layout = Layout {
    labels: 1,
    label_at: 0,
    classes: 10,
    mean: MEAN,
    std: STD,
};

/// FedACG's CIFAR-10 normalisation (its `datasets/configs.yaml`), with `data.augmentation =
/// "fedacg"`.
pub const FEDACG_MEAN: [f32; 3] = [0.4914, 0.4822, 0.4465];
pub const FEDACG_STD: [f32; 3] = [0.2023, 0.1994, 0.2010];

/// How images are held: normalised floats, or bytes normalised when a batch is gathered (for
/// a transform in pixel space, `data.augmentation = "fedacg"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    Floats,
    Pixels,
}

/// Decode records of `layout` into a split, normalised now or held as bytes.
pub fn decode_records(bytes: &[u8], path: &Path, layout: &Layout, hold: Hold) -> Result<Split> {
    let record = layout.labels + 3072;
    let n = bytes.len() / record;
    let y = labels(bytes, path, layout)?;
    if hold == Hold::Pixels {
        let mut data = Vec::with_capacity(n * 3072);
        bytes
            .chunks_exact(record)
            .for_each(|rec| data.extend_from_slice(&rec[layout.labels..]));
        let x = Features::Pixels {
            c: 3,
            h: 32,
            w: 32,
            data,
            mean: layout.mean.to_vec(),
            std: layout.std.to_vec(),
        };
        return Ok(Split {
            x,
            y,
            resident: Default::default(),
        });
    }
    let mut x = Vec::with_capacity(n * 3072);
    for rec in bytes.chunks_exact(record) {
        let pixels = &rec[layout.labels..];
        for c in 0..3 {
            let (m, s) = (layout.mean[c], layout.std[c]);
            x.extend(
                pixels[c * 1024..(c + 1) * 1024]
                    .iter()
                    .map(|&p| (p as f32 / 255.0 - m) / s),
            );
        }
    }
    Ok(Split {
        x: Features::Images {
            c: 3,
            h: 32,
            w: 32,
            data: x,
        },
        y,
        resident: Default::default(),
    })
}

/// The labels of records of `layout`, each checked against its bound.
fn labels(bytes: &[u8], path: &Path, layout: &Layout) -> Result<Vec<u8>> {
    let record = layout.labels + 3072;
    let mut y = Vec::with_capacity(bytes.len() / record);
    for (r, rec) in bytes.chunks_exact(record).enumerate() {
        let label = rec[layout.label_at];
        if label >= layout.classes {
            return Err(Error::Data(format!(
                "{}: record {r} has label {label} (expected 0..{})",
                path.display(),
                layout.classes - 1
            )));
        }
        y.push(label);
    }
    Ok(y)
}

/// Load the train and test splits from a directory of the binary files, with FedNAR's
/// normalisation, or held as pixels with FedACG's (`fedacg`). All six files must have the same
/// size (the official layout); an error names the file that does not.
pub fn load_dir(dir: &Path, fedacg: bool) -> Result<(Split, Split)> {
    if !dir.is_dir() {
        return Err(Error::Data(format!(
            "CIFAR-10 directory {} {} (pass --data-dir DIR with data_batch_1..5.bin and test_batch.bin)",
            dir.display(),
            crate::data::check::absent(dir)
        )));
    }
    let mut files = Vec::new();
    for f in TRAIN_FILES.iter().chain([&TEST_FILE]) {
        let p = dir.join(f);
        let b = read_file(&p)?;
        files.push((p, b));
    }
    check_sizes(&files)?;
    let (tp, test_bytes) = files.pop().expect("the test file");
    let train_bytes = files
        .into_iter()
        .map(|(_, b)| b)
        .collect::<Vec<_>>()
        .concat();
    let (layout, hold) = match fedacg {
        true => (
            Layout {
                mean: FEDACG_MEAN,
                std: FEDACG_STD,
                ..CIFAR10
            },
            Hold::Pixels,
        ),
        false => (CIFAR10, Hold::Floats),
    };
    Ok((
        decode_records(&train_bytes, &dir.join("data_batch_*.bin"), &layout, hold)?,
        decode_records(&test_bytes, &tp, &layout, hold)?,
    ))
}

/// Every file must hold whole records, and all the same number of them (the official layout):
/// the error names the file that differs from the others (the size most of them share), not
/// whichever was read first.
fn check_sizes(files: &[(std::path::PathBuf, Vec<u8>)]) -> Result<()> {
    let official = OFFICIAL_RECORDS * RECORD;
    if let Some((p, b)) = files.iter().find(|(_, b)| b.len() % RECORD != 0) {
        return Err(Error::Data(format!(
            "{}: {} bytes, not a whole number of {RECORD}-byte records (cut or damaged; the official files hold {official} bytes)",
            p.display(),
            b.len()
        )));
    }
    let count = |len: usize| files.iter().filter(|(_, b)| b.len() == len).count();
    let common = files
        .iter()
        .map(|(_, b)| b.len())
        .max_by_key(|&len| (count(len), len == official))
        .unwrap_or(official);
    let Some((p, b)) = files.iter().find(|(_, b)| b.len() != common) else {
        return Ok(());
    };
    let other = files.iter().find(|(_, b)| b.len() == common).map(|f| &f.0);
    Err(Error::Data(format!(
        "{}: {} bytes, but {} and {} other file(s) hold {common}; every CIFAR-10 file must hold the same number of records ({official} bytes in the official files)",
        p.display(),
        b.len(),
        other.map_or(String::new(), |o| o.display().to_string()),
        count(common).saturating_sub(1)
    )))
}

/// Write records in the binary layout (for tests and generated data).
pub fn write_file(path: &Path, labels: &[u8], pixels: &[u8]) -> std::io::Result<()> {
    assert_eq!(pixels.len(), labels.len() * 3072);
    let mut out = Vec::with_capacity(labels.len() * RECORD);
    for (i, &l) in labels.iter().enumerate() {
        out.push(l);
        out.extend_from_slice(&pixels[i * 3072..(i + 1) * 3072]);
    }
    std::fs::write(path, out)
}
