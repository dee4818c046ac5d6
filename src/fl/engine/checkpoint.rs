//! The checkpoint file, format version 2: a JSON header line, the raw little-endian f32
//! vectors, and an 8-byte trailer (the CRC-32 of every byte before it, little-endian, then
//! `FRC2`), written atomically. Reading checks the trailer before trusting anything: a truncated
//! file, a damaged one (any byte changed) and an unknown format version are each refused with an
//! error that says which and how to go on. Version-1 files (fedrun before checksums) are read
//! without a check, with a warning.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::write_atomic_with;

/// The magic of the format this fedrun writes.
pub const MAGIC: &str = "FEDRUN-CHECKPOINT-2";
/// The format before checksums, still read.
const LEGACY: &str = "FEDRUN-CHECKPOINT-1";
const PREFIX: &str = "FEDRUN-CHECKPOINT-";
const TRAILER: &[u8; 4] = b"FRC2";

#[derive(Serialize, Deserialize)]
pub struct Header {
    pub magic: String,
    pub next_round: usize,
    pub csv_bytes: u64,
    pub elapsed_s: f64,
    pub best: Option<(f64, usize)>,
    pub last: Option<(f64, f64)>,
    pub spec: String,
    pub vectors: Vec<(String, usize)>,
    /// How the CSV it resumes counts rounds ([`ROUNDS_FROM`](crate::metrics::csv::ROUNDS_FROM));
    /// 0 (absent) in checkpoints of fedrun before it counted rounds completed.
    #[serde(default)]
    pub rounds_from: usize,
    /// The clients in the federation after `next_round` rounds, when they are not all of them
    /// (`fl.active_clients`); absent otherwise and in checkpoints of fedrun before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Vec<usize>>,
    /// The CRC-32 and the row count of the first `csv_bytes` bytes of `rounds.csv` when the
    /// checkpoint was written: a resume refuses a file that is not that one. Absent in
    /// checkpoints of fedrun before it (then only the length is checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv_crc: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv_rows: Option<usize>,
    /// The fingerprint of the data the run ran on ([`crate::data::fingerprint`]): a resume
    /// refuses other data. Absent in checkpoints of fedrun before it (then not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_crc: Option<u32>,
}

/// Named vectors of a checkpoint.
pub type Vectors = Vec<(String, Vec<f32>)>;

/// A writer that keeps the CRC-32 of what passes through it.
struct Crc<'a, W: Write> {
    inner: &'a mut W,
    hasher: crc32fast::Hasher,
}

impl<W: Write> Write for Crc<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

pub fn write(path: &Path, header: &Header, vectors: &[(String, &[f32])]) -> Result<()> {
    let head = serde_json::to_vec(header)
        .map_err(|e| Error::Run(format!("cannot encode a checkpoint header: {e}")))?;
    write_atomic_with(path, |w| {
        let mut c = Crc {
            inner: w,
            hasher: crc32fast::Hasher::new(),
        };
        c.write_all(&head)?;
        c.write_all(b"\n")?;
        for (_, v) in vectors {
            for x in v.iter() {
                c.write_all(&x.to_le_bytes())?;
            }
        }
        let crc = c.hasher.finalize();
        w.write_all(&crc.to_le_bytes())?;
        w.write_all(TRAILER)
    })
}

/// How to go on from a checkpoint that cannot be resumed.
fn refuse(path: &Path, what: String) -> Error {
    Error::Run(format!(
        "{}: {what}; the run cannot resume from it (run with --force to start the run afresh, or restore the file from a copy)",
        path.display()
    ))
}

/// Parse a header line, checking its magic.
fn parse_header(path: &Path, line: &[u8]) -> Result<Header> {
    if !line.starts_with(PREFIX.as_bytes()) && !line.starts_with(b"{") {
        return Err(Error::Run(format!(
            "{}: not a fedrun checkpoint",
            path.display()
        )));
    }
    let header: Header = serde_json::from_slice(line)
        .map_err(|e| refuse(path, format!("bad checkpoint header ({e})")))?;
    if header.magic != MAGIC && header.magic != LEGACY {
        let what = match header.magic.strip_prefix(PREFIX) {
            Some(v) => format!(
                "checkpoint format version {v}; this fedrun reads versions 1 and 2 (a newer fedrun wrote it?)"
            ),
            None => "not a fedrun checkpoint".into(),
        };
        return Err(refuse(path, what));
    }
    Ok(header)
}

/// The header and where the vectors start.
fn split(path: &Path, bytes: &[u8]) -> Result<(Header, usize)> {
    let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
        return Err(refuse(
            path,
            "truncated checkpoint (no complete header)".into(),
        ));
    };
    Ok((parse_header(path, &bytes[..nl])?, nl + 1))
}

/// The file's length that `header` implies.
fn expected_len(header: &Header, body: usize) -> Option<usize> {
    let floats = header
        .vectors
        .iter()
        .try_fold(0usize, |a, (_, n)| a.checked_add(*n))?;
    let trailer = if header.magic == MAGIC { 8 } else { 0 };
    floats.checked_mul(4)?.checked_add(body + trailer)
}

/// Whether the file ends with a version-2 trailer whose CRC matches; None without a trailer.
fn crc_ok(bytes: &[u8]) -> Option<bool> {
    let n = bytes.len();
    if n < 8 || &bytes[n - 4..] != TRAILER {
        return None;
    }
    let stored = u32::from_le_bytes([bytes[n - 8], bytes[n - 7], bytes[n - 6], bytes[n - 5]]);
    Some(stored == crc32fast::hash(&bytes[..n - 8]))
}

/// The header of a checked file: a trailer whose CRC matches, then the sizes; a file without a
/// trailer is a legacy one (read unchecked), a truncated one, or a damaged one.
fn check(path: &Path, bytes: &[u8]) -> Result<(Header, usize)> {
    let n = bytes.len();
    let crc = crc_ok(bytes);
    if crc == Some(false) {
        return Err(refuse(
            path,
            "checksum mismatch: the checkpoint is damaged".into(),
        ));
    }
    let (header, body) = split(path, bytes)?;
    let want = expected_len(&header, body)
        .ok_or_else(|| refuse(path, "damaged checkpoint (impossible sizes)".into()))?;
    if crc.is_none() && header.magic == MAGIC {
        return Err(refuse(
            path,
            match n < want {
                true => format!("truncated checkpoint ({n} of {want} bytes)"),
                false => "damaged checkpoint (no end marker)".into(),
            },
        ));
    }
    if n < want {
        return Err(refuse(
            path,
            format!("truncated checkpoint ({n} of {want} bytes)"),
        ));
    }
    if n != want {
        return Err(refuse(
            path,
            format!("damaged checkpoint ({n} bytes, its header says {want})"),
        ));
    }
    if header.magic == LEGACY {
        eprintln!(
            "warning: {} has no checksum (an older fedrun wrote it); resuming without an integrity check",
            path.display()
        );
    }
    Ok((header, body))
}

/// A checkpoint, checked whole before anything in it is used.
pub fn read(path: &Path) -> Result<(Header, Vectors)> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::io(format!("cannot read checkpoint {}", path.display()), e))?;
    let (header, body) = check(path, &bytes)?;
    let mut pos = body;
    let mut vecs = Vec::with_capacity(header.vectors.len());
    for (name, len) in &header.vectors {
        let end = pos + len * 4;
        let v = bytes[pos..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        vecs.push((name.clone(), v));
        pos = end;
    }
    Ok((header, vecs))
}
