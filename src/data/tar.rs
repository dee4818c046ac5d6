//! A minimal reader of (gzip-compressed) ustar archives: regular files only.

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
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw)
            .read_to_end(&mut out)
            .map_err(|e| Error::Data(format!("{origin}: corrupt gzip data: {e}")))?;
        parse(&out)
    } else {
        parse(raw)
    }
    .map_err(|m| Error::Data(format!("{origin}: {m}")))
}

fn field(h: &[u8]) -> String {
    let end = h.iter().position(|&b| b == 0).unwrap_or(h.len());
    String::from_utf8_lossy(&h[..end]).trim().to_string()
}

pub fn parse(bytes: &[u8]) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 512 <= bytes.len() {
        let h = &bytes[pos..pos + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let name = field(&h[0..100]);
        let prefix = field(&h[345..500]);
        let size = usize::from_str_radix(&field(&h[124..136]), 8)
            .map_err(|_| format!("bad tar header at byte {pos}"))?;
        let kind = h[156];
        pos += 512;
        if pos + size > bytes.len() {
            return Err(format!("truncated tar entry {name}"));
        }
        if kind == b'0' || kind == 0 {
            let full = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            out.push((full, bytes[pos..pos + size].to_vec()));
        }
        pos += size.div_ceil(512) * 512;
    }
    Ok(out)
}
