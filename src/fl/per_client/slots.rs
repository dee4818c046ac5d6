//! The file a per-client store spills to (`client_state_<prefix>.bin` in the run folder): slots
//! of one model-sized vector each (raw little-endian f32), written and read in place, each
//! written with the CRC-32 of its bytes, which is checked before a read is trusted.
//!
//! The slots a checkpoint refers to are *committed*: they are never overwritten until the next
//! checkpoint has been written, so a run killed at any moment resumes from its last checkpoint
//! with every vector as it was then. A vector written since gets a fresh slot (or its own
//! uncommitted one again); a committed slot that no longer holds a current vector is freed when
//! the next checkpoint commits.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where a vector lies in the file, and the CRC-32 of its bytes there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub index: u32,
    pub crc: u32,
}

pub struct SlotFile {
    path: PathBuf,
    file: Option<File>,
    /// Bytes of one slot.
    bytes: u64,
    /// Slots handed out so far: the file's length in slots.
    next: u32,
    free: Vec<u32>,
    committed: Vec<bool>,
    /// Written since the last sync.
    unsynced: bool,
}

impl SlotFile {
    pub fn new(path: PathBuf, dim: usize) -> Self {
        SlotFile {
            path,
            file: None,
            bytes: 4 * dim as u64,
            next: 0,
            free: Vec::new(),
            committed: Vec::new(),
            unsynced: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, what: &str, e: std::io::Error) -> Error {
        Error::io(format!("{what} {}", self.path.display()), e)
    }

    /// A fresh run: whatever an earlier run left at the path is not this run's state.
    pub fn reset(&mut self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(self.io("cannot remove the stale client-state file", e))
            }
            _ => Ok(()),
        }
    }

    fn file(&mut self) -> Result<&File> {
        if self.file.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)
                .map_err(|e| self.io("cannot open the client-state file", e))?;
            self.file = Some(f);
        }
        Ok(self.file.as_ref().expect("opened above"))
    }

    fn is_committed(&self, index: u32) -> bool {
        self.committed.get(index as usize).copied().unwrap_or(false)
    }

    /// Write `v`, in `prev`'s slot unless a checkpoint refers to it; where it now lies.
    pub fn write(&mut self, prev: Option<Slot>, v: &[f32]) -> Result<Slot> {
        let index = match prev {
            Some(p) if !self.is_committed(p.index) => p.index,
            _ => self.free.pop().unwrap_or_else(|| {
                self.next += 1;
                self.next - 1
            }),
        };
        let bytes: &[u8] = bytemuck::cast_slice(v);
        let at = index as u64 * self.bytes;
        let mut f = self.file()?;
        f.seek(SeekFrom::Start(at))
            .and_then(|_| f.write_all(bytes))
            .map_err(|e| self.io("cannot write client state to", e))?;
        self.unsynced = true;
        Ok(Slot {
            index,
            crc: crc32fast::hash(bytes),
        })
    }

    /// Read slot `s` into `out`, refusing it unless its bytes have the CRC they were written
    /// with.
    pub fn read(&mut self, s: Slot, out: &mut [f32]) -> Result<()> {
        let at = s.index as u64 * self.bytes;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        let mut f = self.file()?;
        f.seek(SeekFrom::Start(at))
            .and_then(|_| f.read_exact(bytes))
            .map_err(|e| self.io("cannot read client state from", e))?;
        if crc32fast::hash(bytes) != s.crc {
            return Err(Error::Run(format!(
                "{}: slot {} fails its checksum: the client-state file is damaged (use --force to start afresh)",
                self.path.display(),
                s.index
            )));
        }
        Ok(())
    }

    /// A slot that no longer holds a current vector: reused at once unless a checkpoint
    /// refers to it (then at the next commit).
    pub fn release(&mut self, s: Slot) {
        if !self.is_committed(s.index) {
            self.free.push(s.index);
        }
    }

    /// Make what was written durable (before a checkpoint refers to it).
    pub fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            self.file()?
                .sync_data()
                .map_err(|e| self.io("cannot sync the client-state file", e))?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// A checkpoint referring to `committed` has been written: those are kept until the next
    /// one; every slot neither committed nor `held` by a vector (a stale copy that its client
    /// will overwrite in place) is free.
    pub fn commit(&mut self, committed: &[u32], held: &[u32]) {
        self.committed = vec![false; self.next as usize];
        let mut taken = vec![false; self.next as usize];
        for &s in committed {
            self.committed[s as usize] = true;
            taken[s as usize] = true;
        }
        for &s in held {
            taken[s as usize] = true;
        }
        self.free = (0..self.next)
            .rev()
            .filter(|&i| !taken[i as usize])
            .collect();
    }

    /// Resume from a checkpoint that refers to `slots`: they must lie within the file.
    pub fn restore(&mut self, slots: &[u32]) -> Result<()> {
        self.next = slots.iter().map(|&s| s + 1).max().unwrap_or(0);
        let needed = self.next as u64 * self.bytes;
        let len = self
            .file()?
            .metadata()
            .map_err(|e| self.io("cannot read the length of", e))?
            .len();
        if len < needed {
            return Err(Error::Run(format!(
                "{}: {len} bytes, but the checkpoint refers to {needed}: the client-state file is truncated (use --force to start afresh)",
                self.path.display()
            )));
        }
        self.commit(slots, slots);
        Ok(())
    }
}
