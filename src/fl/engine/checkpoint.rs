//! The checkpoint file: a JSON header line, then the raw little-endian f32 vectors, written
//! atomically.

use std::path::Path;

use crate::error::{Error, Result};
use std::io::Write;

use crate::io::write_atomic_with;
use serde::{Deserialize, Serialize};

pub const MAGIC: &str = "FEDRUN-CHECKPOINT-1";

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
}

pub fn write(path: &Path, header: &Header, vectors: &[(String, &[f32])]) -> Result<()> {
    let head = serde_json::to_vec(header).expect("json");
    write_atomic_with(path, |w| {
        w.write_all(&head)?;
        w.write_all(b"\n")?;
        for (_, v) in vectors {
            for x in v.iter() {
                w.write_all(&x.to_le_bytes())?;
            }
        }
        Ok(())
    })
}

/// Named vectors of a checkpoint.
pub type Vectors = Vec<(String, Vec<f32>)>;

/// The header alone (the first line), without reading the vectors.
pub fn read_header(path: &Path) -> Result<Header> {
    let f = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("cannot read checkpoint {}", path.display()), e))?;
    let mut line = Vec::new();
    std::io::BufRead::read_until(&mut std::io::BufReader::new(f), b'\n', &mut line)
        .map_err(|e| Error::io(format!("cannot read checkpoint {}", path.display()), e))?;
    if line.last() != Some(&b'\n') {
        return Err(Error::Run(format!(
            "{}: not a fedrun checkpoint",
            path.display()
        )));
    }
    parse_header(path, &line[..line.len() - 1])
}

fn parse_header(path: &Path, line: &[u8]) -> Result<Header> {
    let header: Header = serde_json::from_slice(line)
        .map_err(|e| Error::Run(format!("{}: bad checkpoint header: {e}", path.display())))?;
    if header.magic != MAGIC {
        return Err(Error::Run(format!(
            "{}: not a fedrun checkpoint",
            path.display()
        )));
    }
    Ok(header)
}

pub fn read(path: &Path) -> Result<(Header, Vectors)> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::io(format!("cannot read checkpoint {}", path.display()), e))?;
    let nl = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| Error::Run(format!("{}: not a fedrun checkpoint", path.display())))?;
    let header = parse_header(path, &bytes[..nl])?;
    let mut pos = nl + 1;
    let mut vecs = Vec::new();
    for (name, len) in &header.vectors {
        let end = pos + len * 4;
        if end > bytes.len() {
            return Err(Error::Run(format!(
                "{}: truncated checkpoint",
                path.display()
            )));
        }
        let v = bytes[pos..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        vecs.push((name.clone(), v));
        pos = end;
    }
    Ok((header, vecs))
}
