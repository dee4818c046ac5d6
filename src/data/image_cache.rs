//! A decoded image data set cached in one file beside its JPEGs, so that the decode is paid
//! once. The file records a fingerprint of its sources (names and sizes of the files it was
//! decoded from, and how), the shape, the labels and the pixels, and ends in a CRC-32 of all
//! of it: a cache that is damaged, cut short, or made from other files is reported and
//! rebuilt, never trusted. It is written atomically (a crash leaves the old file or none); a
//! data directory that cannot be written is read without a cache, with a note.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::fed::{Features, Split};
use crate::error::{Error, Result};

const MAGIC: &[u8; 18] = b"FEDRUN-IMG-CACHE-1";
const HEADER: usize = MAGIC.len() + 4 * 8;

/// One split of decoded images: planar RGB bytes, `3 × side × side` per image.
#[derive(Clone, Debug, PartialEq)]
pub struct Images {
    pub labels: Vec<u8>,
    pub pixels: Vec<u8>,
}

impl Images {
    /// A split of these bytes, normalised per channel as `(p/255 − mean)/std` when batched.
    pub fn into_split(self, side: usize, mean: [f32; 3], std: [f32; 3]) -> Split {
        Split {
            x: Features::Pixels {
                c: 3,
                h: side,
                w: side,
                data: self.pixels,
                mean: mean.to_vec(),
                std: std.to_vec(),
            },
            y: self.labels,
            resident: Default::default(),
        }
    }
}

/// The train and test splits, `side × side` RGB.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    pub side: usize,
    pub train: Images,
    pub test: Images,
}

/// The fingerprint of the image files a cache is decoded from: CRC-32 and length of a listing
/// of the decode's `settings`, then each file's name (relative to `root`), size and label (a
/// changed label file makes a new cache too, since the cache holds the labels).
pub fn fingerprint(settings: &str, root: &Path, files: &[PathBuf], labels: &[u8]) -> Result<u64> {
    let mut text = format!("{settings}\n");
    for (p, label) in files.iter().zip(labels) {
        let len = std::fs::metadata(p)
            .map_err(|e| Error::Data(format!("cannot read image {}: {e}", p.display())))?
            .len();
        let name = p.strip_prefix(root).unwrap_or(p);
        text.push_str(&format!("{}\t{len}\t{label}\n", name.display()));
    }
    Ok(((text.len() as u64) << 32) | crc32fast::hash(text.as_bytes()) as u64)
}

/// The decoded data set: from `cache` when it holds `fingerprint`'s data intact, else built
/// by `build` and written to `cache`.
pub fn load(
    cache: &Path,
    fingerprint: u64,
    build: impl FnOnce() -> Result<Decoded>,
) -> Result<Decoded> {
    if cache.exists() {
        match read(cache, fingerprint) {
            Ok(d) => return Ok(d),
            Err(why) => eprintln!(
                "note: {}: {why}; decoding the images again",
                cache.display()
            ),
        }
    }
    let d = build()?;
    match write(cache, fingerprint, &d) {
        Ok(()) => eprintln!(
            "note: decoded images cached in {} (read from there next time)",
            cache.display()
        ),
        Err(e) => eprintln!("note: cannot write the image cache ({e}); going on without it"),
    }
    Ok(d)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Read a cache file; the error says why it cannot be used. The pixels are split off the
/// file's bytes, not copied (a cache is the size of the data set).
fn read(path: &Path, fingerprint: u64) -> std::result::Result<Decoded, String> {
    let mut bytes = std::fs::read(path).map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() < HEADER + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a fedrun image cache".into());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != tail {
        return Err("damaged (its checksum does not match)".into());
    }
    let at = MAGIC.len();
    if u64_at(&bytes, at) != fingerprint {
        return Err("made from other files or settings than these".into());
    }
    let side = u64_at(&bytes, at + 8) as usize;
    let (n_train, n_test) = (
        u64_at(&bytes, at + 16) as usize,
        u64_at(&bytes, at + 24) as usize,
    );
    let per = 3 * side * side;
    let n = n_train + n_test;
    if bytes.len() - 4 != HEADER + n * (1 + per) {
        return Err("its size does not match its header".into());
    }
    bytes.truncate(bytes.len() - 4);
    let test_pixels = bytes.split_off(HEADER + n + n_train * per);
    let train_pixels = bytes.split_off(HEADER + n);
    let labels = &bytes[HEADER..];
    Ok(Decoded {
        side,
        train: Images {
            labels: labels[..n_train].to_vec(),
            pixels: train_pixels,
        },
        test: Images {
            labels: labels[n_train..].to_vec(),
            pixels: test_pixels,
        },
    })
}

/// Write a cache file atomically.
fn write(path: &Path, fingerprint: u64, d: &Decoded) -> Result<()> {
    let mut header = MAGIC.to_vec();
    for v in [
        fingerprint,
        d.side as u64,
        d.train.labels.len() as u64,
        d.test.labels.len() as u64,
    ] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    let parts = [
        &header[..],
        &d.train.labels,
        &d.test.labels,
        &d.train.pixels,
        &d.test.pixels,
    ];
    let mut crc = crc32fast::Hasher::new();
    parts.iter().for_each(|p| crc.update(p));
    let crc = crc.finalize();
    crate::io::write_atomic_with(path, |w| {
        for p in parts {
            w.write_all(p)?;
        }
        w.write_all(&crc.to_le_bytes())
    })
    .map_err(|e| Error::Data(e.to_string()))
}
