//! TensorBoard's event files beside `rounds.csv`: every column of each row as a scalar at its
//! round, so that `tensorboard --logdir results/` watches a run or a whole sweep. The format is
//! TensorFlow's record file (each record its length, the length's masked CRC-32C, the bytes, their
//! masked CRC-32C) of `Event` protocol buffers (`wall_time` 1, `step` 2, `file_version` 3,
//! `summary` 5; a `Summary` is repeated `Value`s of `tag` 1 and `simple_value` 2), written here
//! directly: no crate writes it without pulling in TensorFlow's protobuf stack. A folder holds
//! one event file, as `rounds.csv` holds one row a round: a run that starts afresh removes the
//! event files of an attempt that died before its first checkpoint, and a resumed run writes
//! its file anew from the rows `rounds.csv` keeps (those after the checkpoint are cut from both),
//! so TensorBoard shows each round once.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The file-name prefix TensorBoard looks for.
pub const PREFIX: &str = "events.out.tfevents.";

/// Remove the event files in `dir`.
pub fn remove_all(dir: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(PREFIX) {
            std::fs::remove_file(e.path())
                .map_err(|err| Error::io(format!("cannot remove {}", e.path().display()), err))?;
        }
    }
    Ok(())
}

/// An event file open for appending.
pub struct Events {
    file: File,
    path: PathBuf,
}

impl Events {
    /// A new event file in `dir`, named by the time (and made unique), its version record
    /// written.
    pub fn create(dir: &Path) -> Result<Self> {
        let now = wall_time();
        let mut k = 0;
        let path = loop {
            let p = dir.join(format!("{PREFIX}{}.fedrun{k}", now as u64));
            if !p.exists() {
                break p;
            }
            k += 1;
        };
        let file = File::create(&path)
            .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        let mut ev = Events { file, path };
        let mut e = Vec::new();
        double(&mut e, 1, now);
        bytes(&mut e, 3, b"brain.Event:2");
        ev.record(&e)?;
        Ok(ev)
    }

    /// `scalars` (tag, value) at `step`.
    pub fn write(&mut self, step: u64, scalars: &[(&str, f64)]) -> Result<()> {
        let mut summary = Vec::new();
        for &(tag, v) in scalars {
            let mut value = Vec::new();
            bytes(&mut value, 1, tag.as_bytes());
            value.push(2 << 3 | 5);
            value.extend_from_slice(&(v as f32).to_le_bytes());
            bytes(&mut summary, 1, &value);
        }
        let mut e = Vec::new();
        double(&mut e, 1, wall_time());
        e.push(2 << 3);
        varint(&mut e, step);
        bytes(&mut e, 5, &summary);
        self.record(&e)
    }

    fn record(&mut self, data: &[u8]) -> Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        let mut r = Vec::with_capacity(data.len() + 16);
        r.extend_from_slice(&len);
        r.extend_from_slice(&masked_crc(&len).to_le_bytes());
        r.extend_from_slice(data);
        r.extend_from_slice(&masked_crc(data).to_le_bytes());
        self.file
            .write_all(&r)
            .and_then(|_| self.file.flush())
            .map_err(|e| Error::io(format!("cannot write {}", self.path.display()), e))
    }
}

fn wall_time() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field.
fn bytes(out: &mut Vec<u8>, field: u8, b: &[u8]) {
    out.push(field << 3 | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A 64-bit field.
fn double(out: &mut Vec<u8>, field: u8, v: f64) {
    out.push(field << 3 | 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// CRC-32C (Castagnoli), bit by bit over a table built once.
fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0x82f6_3b78 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8)
    })
}

/// TensorFlow's masked CRC: rotated right by 15 and offset, so that a CRC of CRCs is not a CRC.
fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// The scalars of an event file as (step, tag, value), each record's two CRCs checked: what a
/// test (or a user without TensorBoard) reads back.
pub fn read_scalars(path: &Path) -> Result<Vec<(u64, String, f32)>> {
    let raw =
        std::fs::read(path).map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let bad = |why: &str| Error::Data(format!("{}: {why}", path.display()));
    let mut out = Vec::new();
    let mut at = 0;
    while at < raw.len() {
        let head = raw
            .get(at..at + 12)
            .ok_or_else(|| bad("a record cut short"))?;
        let len = u64::from_le_bytes(head[..8].try_into().unwrap_or_default()) as usize;
        if masked_crc(&head[..8]).to_le_bytes() != head[8..12] {
            return Err(bad("a record length's CRC does not match"));
        }
        let data = raw
            .get(at + 12..at + 12 + len)
            .ok_or_else(|| bad("a record cut short"))?;
        let crc = raw
            .get(at + 12 + len..at + 16 + len)
            .ok_or_else(|| bad("a record cut short"))?;
        if masked_crc(data).to_le_bytes() != crc {
            return Err(bad("a record's CRC does not match"));
        }
        scalars_of(data, &mut out).ok_or_else(|| bad("not an Event record"))?;
        at += 16 + len;
    }
    Ok(out)
}

/// A protocol buffer field: its number, wire type, payload (length-delimited and fixed-size
/// fields) and value (varints).
type Field<'a> = (u64, u8, &'a [u8], u64);

/// The protocol buffer's fields of `b`.
fn fields(mut b: &[u8]) -> Option<Vec<Field<'_>>> {
    let read_varint = |b: &mut &[u8]| -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = b.split_first()?;
            *b = rest;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = read_varint(&mut b)?;
        let (field, wire) = (key >> 3, (key & 7) as u8);
        let (payload, value): (&[u8], u64) = match wire {
            0 => (&[], read_varint(&mut b)?),
            1 => (b.get(..8)?, 0),
            2 => {
                let n = read_varint(&mut b)? as usize;
                (b.get(..n)?, 0)
            }
            5 => (b.get(..4)?, 0),
            _ => return None,
        };
        b = &b[payload.len()..];
        out.push((field, wire, payload, value));
    }
    Some(out)
}

/// An Event's scalars into `out`.
fn scalars_of(event: &[u8], out: &mut Vec<(u64, String, f32)>) -> Option<()> {
    let f = fields(event)?;
    let step = f.iter().find(|x| x.0 == 2).map_or(0, |x| x.3);
    for (_, _, summary, _) in f.iter().filter(|x| x.0 == 5) {
        for (_, _, value, _) in fields(summary)?.iter().filter(|x| x.0 == 1) {
            let v = fields(value)?;
            let tag = v.iter().find(|x| x.0 == 1)?.2;
            let num = v.iter().find(|x| x.0 == 2 && x.1 == 5)?.2;
            let num = f32::from_le_bytes(num.try_into().ok()?);
            out.push((step, String::from_utf8_lossy(tag).into_owned(), num));
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CRC-32C's check value (RFC 3720's test vector) and TensorFlow's mask of it.
    #[test]
    fn crc32c_is_castagnolis() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
    }
}
