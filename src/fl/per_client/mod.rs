//! Model-sized vectors kept per client (SCAFFOLD's c_i, FedDyn's g_i, FedDC's h_i and g_i,
//! MOON's previous models, Fed-LAMB's m_i): allocated when a client first stores one (so a run
//! holds only those of clients that have trained), and checkpointed as `<prefix>_<client>`.
//!
//! With a memory budget (`run.client_state_mb`, shared by every store of a run), a store keeps
//! the vectors it used last in memory and spills the others to a slot file in the run folder
//! ([`slots`]); the engine stages a round's clients before they train. Where a vector lives
//! changes no number: it is stored and read back bit for bit. A checkpoint then holds the
//! vectors only in memory inline, and the slots of those on disk (`<prefix>@disk`: triples of
//! client, slot, CRC-32 as the bits of f32 values); the slot file is part of the checkpoint.

mod journal;
pub mod slots;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use slots::{Slot, SlotFile};

/// The key an algorithm with per-client state reads (its `FromSetup::READS`).
pub const CLIENT_STATE: &[&str] = &["run.client_state_mb"];

/// The memory a run's per-client stores may hold together, in bytes.
pub struct Budget {
    limit: u64,
    used: AtomicU64,
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Budget {
            limit,
            used: AtomicU64::new(0),
        })
    }

    fn add(&self, bytes: u64) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    fn sub(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn over(&self) -> bool {
        self.used.load(Ordering::Relaxed) > self.limit
    }
}

pub struct PerClient {
    prefix: &'static str,
    dim: usize,
    /// The vectors in memory.
    v: Vec<Option<Vec<f32>>>,
    /// The copy on disk, when there is one (stale while the client is `dirty`).
    disk: Vec<Option<Slot>>,
    /// In memory and changed since it was last written to disk.
    dirty: Vec<bool>,
    last_use: Vec<u64>,
    tick: u64,
    /// Clients staged for the current group of trainings: never spilled.
    pinned: Vec<usize>,
    budget: Arc<Budget>,
    file: Option<SlotFile>,
    /// `<prefix>@disk` as the checkpoint holds it.
    table: Vec<f32>,
    /// While a round is in flight, each changed client's vector as it was before
    /// ([`journal`]).
    journal: Option<journal::Journal>,
}

impl PerClient {
    pub fn new(prefix: &'static str, clients: usize, dim: usize) -> Self {
        PerClient {
            prefix,
            dim,
            v: vec![None; clients],
            disk: vec![None; clients],
            dirty: vec![false; clients],
            last_use: vec![0; clients],
            tick: 0,
            pinned: Vec::new(),
            budget: Budget::new(u64::MAX),
            file: None,
            table: Vec::new(),
            journal: None,
        }
    }

    fn bytes(&self) -> u64 {
        4 * self.dim as u64
    }

    fn disk_name(&self) -> String {
        format!("{}@disk", self.prefix)
    }

    /// Spill to `client_state_<prefix>.bin` in `dir` beyond `budget` (shared by a run's stores).
    /// `fresh`: a new run, so a file an earlier run left there is removed.
    pub fn spill_to(&mut self, dir: &Path, budget: Arc<Budget>, fresh: bool) -> Result<()> {
        let path = dir.join(format!("client_state_{}.bin", self.prefix));
        let mut file = SlotFile::new(path, self.dim);
        if fresh {
            file.reset()?;
        }
        let held = self.v.iter().flatten().count() as u64 * self.bytes();
        self.budget.sub(held);
        budget.add(held);
        self.budget = budget;
        self.file = Some(file);
        self.evict(None)
    }

    /// Client `i`'s vector, if it has one. A vector on disk must have been staged first.
    pub fn get(&self, i: usize) -> Option<&[f32]> {
        if self.v[i].is_none() && self.disk[i].is_some() {
            panic!(
                "client {i}'s `{}` vector is on disk: the engine stages a round's clients before it plans them",
                self.prefix
            );
        }
        self.v[i].as_deref()
    }

    /// Whether client `i` has a vector, in memory or on disk.
    pub fn has(&self, i: usize) -> bool {
        self.v[i].is_some() || self.disk[i].is_some()
    }

    /// Bring client `i`'s vector into memory, if it has one on disk.
    fn resident(&mut self, i: usize) -> Result<()> {
        self.tick += 1;
        self.last_use[i] = self.tick;
        if self.v[i].is_some() {
            return Ok(());
        }
        let Some(slot) = self.disk[i] else {
            return Ok(());
        };
        let mut v = vec![0f32; self.dim];
        self.file
            .as_mut()
            .expect("a vector on disk has a file")
            .read(slot, &mut v)?;
        self.v[i] = Some(v);
        self.budget.add(self.bytes());
        Ok(())
    }

    /// Client `i`'s vector to change, zeros when it has none yet.
    pub fn get_mut(&mut self, i: usize) -> Result<&mut Vec<f32>> {
        self.resident(i)?;
        self.note_before(i)?;
        if self.v[i].is_none() {
            self.v[i] = Some(vec![0.0; self.dim]);
            self.budget.add(self.bytes());
        }
        self.dirty[i] = true;
        self.evict(Some(i))?;
        Ok(self.v[i].as_mut().expect("resident above"))
    }

    /// Note, from now on, each client's vector before its first change ([`journal`]).
    pub fn begin_journal(&mut self) {
        self.journal = Some(journal::Journal::new(self.v.len()));
    }

    /// The changes since [`begin_journal`](Self::begin_journal) stand; noting stops.
    pub fn end_journal(&mut self) {
        self.journal = None;
    }

    /// Put every vector changed since [`begin_journal`](Self::begin_journal) back as it was
    /// (a client that had none has none again); noting stops.
    pub fn rollback(&mut self) -> Result<()> {
        let Some(j) = self.journal.take() else {
            return Ok(());
        };
        for (i, before) in j.into_changes() {
            self.drop_vector(i);
            if let Some(v) = before {
                self.set(i, v)?;
            }
        }
        Ok(())
    }

    /// Before client `i`'s vector changes: note it, the first time since the journal began
    /// (read back from the slot file when it was spilled).
    fn note_before(&mut self, i: usize) -> Result<()> {
        if !self.journal.as_ref().is_some_and(|j| j.wants(i)) {
            return Ok(());
        }
        let before = match (&self.v[i], self.disk[i]) {
            (Some(v), _) => Some(v.clone()),
            (None, Some(slot)) => {
                let mut v = vec![0f32; self.dim];
                self.file
                    .as_mut()
                    .expect("a vector on disk has a file")
                    .read(slot, &mut v)?;
                Some(v)
            }
            (None, None) => None,
        };
        if let Some(j) = self.journal.as_mut() {
            j.note(i, before);
        }
        Ok(())
    }

    /// Replace client `i`'s vector.
    pub fn set(&mut self, i: usize, v: Vec<f32>) -> Result<()> {
        *self.get_mut(i)? = v;
        Ok(())
    }

    /// Forget client `i` (a client that left the federation): its vector is dropped and its
    /// memory freed; it starts from zeros if the client comes back.
    pub fn remove(&mut self, i: usize) -> Result<()> {
        self.note_before(i)?;
        self.drop_vector(i);
        Ok(())
    }

    /// Drop client `i`'s vector, in memory and on disk.
    fn drop_vector(&mut self, i: usize) {
        if self.v[i].take().is_some() {
            self.budget.sub(self.bytes());
        }
        if let (Some(s), Some(f)) = (self.disk[i].take(), self.file.as_mut()) {
            f.release(s);
        }
        self.dirty[i] = false;
        self.retable();
    }

    /// Client `i`'s vector, removed from the store.
    pub fn take(&mut self, i: usize) -> Result<Option<Vec<f32>>> {
        self.resident(i)?;
        self.note_before(i)?;
        let v = self.v[i].take();
        if v.is_some() {
            self.budget.sub(self.bytes());
        }
        self.drop_vector(i);
        Ok(v)
    }

    /// Keep `clients`' vectors in memory until the next call: the engine stages each group of
    /// clients before they are planned and trained.
    pub fn stage(&mut self, clients: &[usize]) -> Result<()> {
        self.pinned.clear();
        self.pinned.extend_from_slice(clients);
        for &c in clients {
            self.resident(c)?;
        }
        self.evict(None)
    }

    /// Every stored vector with its client, in client order (those on disk read one at a
    /// time, without bringing them into memory).
    pub fn for_each(&mut self, mut f: impl FnMut(usize, &[f32])) -> Result<()> {
        let mut buf = Vec::new();
        for i in 0..self.v.len() {
            if let Some(v) = &self.v[i] {
                f(i, v);
            } else if let Some(s) = self.disk[i] {
                buf.resize(self.dim, 0.0);
                self.file.as_mut().expect("on disk").read(s, &mut buf)?;
                f(i, &buf);
            }
        }
        Ok(())
    }

    /// Spill the least recently used vectors (not pinned, not `keep`) while over budget.
    fn evict(&mut self, keep: Option<usize>) -> Result<()> {
        while self.file.is_some() && self.budget.over() {
            let victim = (0..self.v.len())
                .filter(|&i| self.v[i].is_some() && Some(i) != keep)
                .filter(|i| !self.pinned.contains(i))
                .min_by_key(|&i| self.last_use[i]);
            let Some(i) = victim else { break };
            let v = self.v[i].take().expect("resident");
            if let (true, Some(f)) = (self.dirty[i] || self.disk[i].is_none(), &mut self.file) {
                self.disk[i] = Some(f.write(self.disk[i], &v)?);
                self.dirty[i] = false;
            }
            self.budget.sub(self.bytes());
        }
        self.retable();
        Ok(())
    }

    /// Whether client `i`'s checkpoint entry is its slot (else its vector, inline).
    fn by_slot(&self, i: usize) -> bool {
        self.disk[i].is_some() && !self.dirty[i]
    }

    fn retable(&mut self) {
        if self.file.is_none() {
            return;
        }
        self.table.clear();
        for i in 0..self.v.len() {
            if let (true, Some(s)) = (self.by_slot(i), self.disk[i]) {
                let bits = [i as u32, s.index, s.crc];
                self.table.extend(bits.map(f32::from_bits));
            }
        }
    }

    /// The checkpoint entries, borrowed: `<prefix>_<i>` for the vectors in memory and changed
    /// since written, and `<prefix>@disk` for the others, when any are on disk.
    pub fn state(&self) -> impl Iterator<Item = (String, &[f32])> {
        let inline = (0..self.v.len()).filter(|&i| !self.by_slot(i));
        let inline = inline.filter_map(|i| self.v[i].as_deref().map(|v| (i, v)));
        let table = (!self.table.is_empty()).then(|| (self.disk_name(), self.table.as_slice()));
        inline
            .map(|(i, v)| (format!("{}_{i}", self.prefix), v))
            .chain(table)
    }

    /// Make what was spilled durable, before a checkpoint refers to it.
    pub fn sync(&mut self) -> Result<()> {
        self.file.as_mut().map_or(Ok(()), SlotFile::sync)
    }

    /// A checkpoint holding [`state`](Self::state) has been written: keep the slots it refers
    /// to until the next one.
    pub fn commit(&mut self) {
        let committed: Vec<u32> = self.table.chunks(3).map(|t| t[1].to_bits()).collect();
        let held: Vec<u32> = self.disk.iter().flatten().map(|s| s.index).collect();
        if let Some(f) = self.file.as_mut() {
            f.commit(&committed, &held);
        }
    }

    /// Take this store's entries out of a checkpoint's vectors, in one pass.
    pub fn load(&mut self, state: &mut Vec<(String, Vec<f32>)>) -> Result<()> {
        let mut rest = Vec::with_capacity(state.len());
        for (name, v) in state.drain(..) {
            if name == self.disk_name() {
                self.load_table(&name, &v)?;
                continue;
            }
            let i = name
                .strip_prefix(self.prefix)
                .and_then(|r| r.strip_prefix('_'))
                .and_then(|r| r.parse::<usize>().ok());
            match i {
                Some(i) if i < self.v.len() => {
                    if v.len() != self.dim {
                        return Err(Error::Run(format!(
                            "checkpoint state `{name}` has {} values, expected {}",
                            v.len(),
                            self.dim
                        )));
                    }
                    self.drop_vector(i);
                    self.v[i] = Some(v);
                    self.dirty[i] = true;
                    self.budget.add(self.bytes());
                }
                _ => rest.push((name, v)),
            }
        }
        *state = rest;
        self.evict(None)
    }

    /// The slots of the vectors a checkpoint left on disk.
    fn load_table(&mut self, name: &str, t: &[f32]) -> Result<()> {
        let bad = |what: &str| Error::Run(format!("checkpoint state `{name}`: {what}"));
        if !t.len().is_multiple_of(3) {
            return Err(bad("not a list of (client, slot, checksum)"));
        }
        let Some(file) = self.file.as_mut() else {
            return Err(bad(
                "client state on disk, but this run has no run folder to read it from",
            ));
        };
        let mut slots = Vec::new();
        for e in t.chunks(3) {
            let [i, index, crc] = [0, 1, 2].map(|k| e[k].to_bits());
            let i = i as usize;
            if i >= self.v.len() {
                return Err(bad(&format!("client {i} out of range")));
            }
            self.disk[i] = Some(Slot { index, crc });
            slots.push(index);
        }
        file.restore(&slots)?;
        self.retable();
        Ok(())
    }
}
