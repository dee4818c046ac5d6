//! The plays archive (and any `.tar` / `.tar.gz`), read with the `tar` crate: regular files
//! only, as (path, bytes) in archive order.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// All regular files of a `.tar` or `.tar.gz` archive, as (path, bytes), in archive order.
pub fn read_archive(path: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let raw = std::fs::read(path)
        .map_err(|e| Error::Data(format!("cannot read archive {}: {e}", path.display())))?;
    read_archive_bytes(&raw, &path.display().to_string())
}

/// The same from bytes in memory; `origin` names them in errors.
pub fn read_archive_bytes(raw: &[u8], origin: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let files = if raw.starts_with(&[0x1f, 0x8b]) {
        files(flate2::read::GzDecoder::new(raw))
    } else {
        files(raw)
    };
    files.map_err(|e| Error::Data(format!("{origin}: not a readable tar archive: {e}")))
}

fn files(reader: impl Read) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut archive = tar::Archive::new(reader);
    let mut out = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path()?.to_string_lossy().to_string();
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes)?;
        out.push((name, bytes));
    }
    Ok(out)
}
