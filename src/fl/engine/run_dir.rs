//! A run's folder, `<out>/<run.name>/`: `spec.toml`, `rounds.csv`, `summary.json` and
//! `checkpoint.bin`, and what a run knows of its own progress. It decides whether a run is
//! finished, where one resumes (after checking that the spec is the same), and writes and
//! restores checkpoints.

use std::path::{Path, PathBuf};

use super::checkpoint;
use super::experiment::Experiment;
use super::lock::{LOCK_FILE, RunLock};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::io::write_atomic;
use crate::metrics::csv::CsvWriter;
use crate::metrics::summary::{Seal, Status, Summary};

/// Where a run stands: the next round, the time spent, the best and the last evaluation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    pub next: usize,
    pub elapsed_s: f64,
    /// Best test accuracy and its round.
    pub best: Option<(f64, usize)>,
    /// Last test accuracy and loss.
    pub last: Option<(f64, f64)>,
}

impl Progress {
    /// Record the evaluation after `round` rounds.
    pub fn evaluated(&mut self, round: usize, acc: f64, loss: f64) {
        if self.best.is_none_or(|b| acc > b.0) {
            self.best = Some((acc, round));
        }
        self.last = Some((acc, loss));
    }

    /// The summary of a run that stands here, with `status` and `message`.
    pub fn summary(&self, name: &str, status: Status, message: String) -> Summary {
        Summary {
            status,
            name: name.to_string(),
            rounds: self.next,
            final_test_acc: self.last.map(|l| l.0),
            best_test_acc: self.best.map(|b| b.0),
            best_round: self.best.map(|b| b.1),
            final_test_loss: self.last.map(|l| l.1),
            elapsed_s: self.elapsed_s,
            message,
            rounds_from: crate::metrics::csv::ROUNDS_FROM,
            ..Default::default()
        }
    }
}

pub struct RunDir {
    dir: PathBuf,
    /// The folder's lock, once taken.
    lock: Option<RunLock>,
    /// The checked checkpoint to resume from (read by `resume_point`, used by `restore`).
    pending: Option<(checkpoint::Header, checkpoint::Vectors)>,
    /// How `spec.toml` is read back ([`RunOptions::parse_spec`](super::RunOptions)).
    parse_spec: fn(&str, &str) -> Result<Spec>,
}

impl RunDir {
    /// The folder `<out>/<name>`; if it exists, its lock is taken at once (another process in
    /// it is an error), so that nothing in it is read while another run writes it.
    pub fn open(
        out: &Path,
        name: &str,
        parse_spec: fn(&str, &str) -> Result<Spec>,
    ) -> Result<Self> {
        let dir = out.join(name);
        let lock = match dir.is_dir() {
            true => Some(RunLock::acquire(&dir)?),
            false => None,
        };
        Ok(RunDir {
            dir,
            lock,
            pending: None,
            parse_spec,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn checkpoint(&self) -> PathBuf {
        self.dir.join("checkpoint.bin")
    }

    fn csv(&self) -> PathBuf {
        self.dir.join("rounds.csv")
    }

    /// The summary of a run here that is finished for `spec` (complete or diverged, and not a
    /// complete run asked for more rounds than it has); None when there is work to do.
    pub fn finished(&self, spec: &Spec, force: bool) -> Result<Option<Summary>> {
        if force {
            return Ok(None);
        }
        let Ok(s) = Summary::read(&self.dir) else {
            return Ok(None);
        };
        let extend =
            s.status == Status::Complete && s.rounds < spec.fl.rounds && self.checkpoint().exists();
        if s.status == Status::Interrupted || extend {
            return Ok(None);
        }
        self.check_same_spec(spec, None)?;
        let wrong = s.mismatches(&self.dir);
        if !wrong.is_empty() {
            return Err(Error::Run(format!(
                "{}: its run is {}, but {}; its results cannot be trusted: run with --force to run it again, or use another run.name",
                self.dir.display(),
                s.status,
                wrong.join("; ")
            )));
        }
        Ok(Some(s))
    }

    /// The round to resume at, if there is a checkpoint to resume from: the whole file is
    /// checked (a damaged or truncated one is refused) and the spec compared.
    pub fn resume_point(&mut self, spec: &Spec, force: bool) -> Result<Option<usize>> {
        if force || !self.checkpoint().exists() {
            return Ok(None);
        }
        let (h, v) = checkpoint::read(&self.checkpoint())?;
        if h.rounds_from != crate::metrics::csv::ROUNDS_FROM {
            return Err(Error::Run(format!(
                "{}: its rounds.csv counts rounds from {} (an older fedrun); this fedrun counts rounds completed, from {}, and will not mix the two in one file: run with --force to start afresh, or keep the folder and use another run.name",
                self.checkpoint().display(),
                h.rounds_from,
                crate::metrics::csv::ROUNDS_FROM
            )));
        }
        self.check_csv_columns()?;
        let next = h.next_round;
        self.check_same_spec(spec, Some(next))?;
        self.check_checkpoint_spec(&h, spec)?;
        self.check_csv_prefix(&h)?;
        self.pending = Some((h, v));
        Ok(Some(next))
    }

    /// Refuse to append to a `rounds.csv` whose header is not this fedrun's (an older fedrun
    /// wrote fewer columns): its rows and the new ones would not line up.
    fn check_csv_columns(&self) -> Result<()> {
        let Ok(text) = std::fs::read_to_string(self.csv()) else {
            return Ok(());
        };
        let header = text.lines().next().unwrap_or_default();
        if header == crate::metrics::csv::HEADER {
            return Ok(());
        }
        Err(Error::Run(format!(
            "{}: its columns ({header}) are not this fedrun's ({}); an older fedrun wrote it, and this one will not append rows of other columns to it: run with --force to start afresh, or keep the folder and use another run.name",
            self.csv().display(),
            crate::metrics::csv::HEADER
        )))
    }

    /// Refuse a folder whose spec differs, naming the keys. When resuming from a checkpoint at
    /// round `next`, `fl.rounds` alone may differ, if it is at least `next`: nothing a round
    /// computes depends on the total, so rounds before it are the same either way.
    fn check_same_spec(&self, spec: &Spec, next: Option<usize>) -> Result<()> {
        let p = self.dir.join("spec.toml");
        let text = std::fs::read(&p).map_err(|e| {
            Error::Run(format!(
                "{}: cannot read it ({e}); a run writes it when it starts, and this folder holds a run's results, so they cannot be checked against this spec: run with --force to start afresh, or use another run.name",
                p.display()
            ))
        })?;
        let text = String::from_utf8(text).map_err(|_| {
            Error::Run(format!(
                "{}: not text (damaged or replaced); this folder's results cannot be checked against this spec: run with --force to start afresh, or use another run.name",
                p.display()
            ))
        })?;
        let old = (self.parse_spec)(&text, &p.display().to_string())?;
        let diff = differing(&old, spec, next);
        if diff.is_empty() {
            return Ok(());
        }
        Err(Error::Config(format!(
            "{} holds a run with a different spec (keys that differ: {}); use --force to start afresh, or another run.name",
            self.dir.display(),
            diff.join(", ")
        )))
    }

    /// Refuse a checkpoint written by a run of another spec (one copied in from another folder,
    /// or a `spec.toml` edited and given back as `--config`), naming the keys.
    fn check_checkpoint_spec(&self, h: &checkpoint::Header, spec: &Spec) -> Result<()> {
        let ck = self.checkpoint();
        let what = format!("the spec inside {}", ck.display());
        let old = (self.parse_spec)(&h.spec, &what)?;
        let diff = differing(&old, spec, Some(h.next_round));
        if diff.is_empty() {
            return Ok(());
        }
        Err(Error::Run(format!(
            "{}: written by a run of another spec (keys that differ: {}): it is not this folder's run, or the spec changed since; resuming would splice two runs into one rounds.csv. Run with --force to start afresh, or use another run.name",
            ck.display(),
            diff.join(", ")
        )))
    }

    /// Refuse a `rounds.csv` that is not the one the checkpoint was written after: shorter (cut
    /// or replaced) or with other bytes (another run's, or edited). A longer one holds rows
    /// written after the checkpoint (a crash before the next one): they are cut off, with a note,
    /// and those rounds run again.
    fn check_csv_prefix(&self, h: &checkpoint::Header) -> Result<()> {
        let (p, ck) = (self.csv(), self.checkpoint());
        let refuse = |why: String| {
            Err(Error::Run(format!(
                "{}: {why}; resuming from {} would pad or splice it. Run with --force to start afresh, or use another run.name",
                p.display(),
                ck.display()
            )))
        };
        let bytes = match std::fs::read(&p) {
            Ok(b) => b,
            Err(e) => return refuse(format!("cannot read it ({e})")),
        };
        let want = usize::try_from(h.csv_bytes).unwrap_or(usize::MAX);
        if bytes.len() < want {
            return refuse(format!(
                "{} bytes, shorter than the {want} it had when the checkpoint was written (cut or replaced)",
                bytes.len()
            ));
        }
        let (crc, rows) = csv_digest(&bytes[..want]);
        if h.csv_crc.is_some_and(|c| c != crc) || h.csv_rows.is_some_and(|r| r != rows) {
            return refuse(format!(
                "its first {want} bytes are not those the checkpoint was written after (another run's file, or edited)"
            ));
        }
        if bytes.len() > want {
            eprintln!(
                "note: {}: {} bytes after the checkpoint's {want} (rows written after it) are cut off; those rounds run again",
                p.display(),
                bytes.len() - want
            );
        }
        Ok(())
    }

    /// Make the folder and hold its lock (with `force`, empty it first, keeping the lock).
    pub fn prepare(&mut self, force: bool) -> Result<()> {
        let dir = &self.dir;
        if force && dir.exists() {
            empty(dir)?;
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create output folder {}", dir.display()), e))?;
        if self.lock.is_none() {
            self.lock = Some(RunLock::acquire(dir)?);
        }
        Ok(())
    }

    /// Write the resolved spec (again on resume: `fl.rounds` may have changed).
    pub fn write_spec(&self, spec: &Spec) -> Result<()> {
        write_atomic(&self.dir.join("spec.toml"), spec.to_toml().as_bytes())
    }

    /// A new `rounds.csv`.
    pub fn new_csv(&self) -> Result<CsvWriter> {
        CsvWriter::create(&self.csv())
    }

    /// Restore the experiment from the checkpoint, and reopen `rounds.csv` at the length it had.
    pub fn restore(&mut self, ex: &mut Experiment) -> Result<(Progress, CsvWriter)> {
        let (h, mut vecs) = match self.pending.take() {
            Some(p) => p,
            None => checkpoint::read(&self.checkpoint())?,
        };
        check_same_data(&self.checkpoint(), h.data_crc, ex.data_crc)?;
        let gi = vecs
            .iter()
            .position(|(n, _)| n == "global")
            .ok_or_else(|| Error::Run("checkpoint has no global model".into()))?;
        let g = vecs.swap_remove(gi).1;
        if g.len() != ex.layout.total {
            return Err(Error::Run(format!(
                "checkpoint model has {} parameters, the spec's model {}",
                g.len(),
                ex.layout.total
            )));
        }
        ex.global = g;
        ex.alg.state().restore(vecs)?;
        ex.members.restore(h.active.clone())?;
        let csv = CsvWriter::resume(&self.csv(), h.csv_bytes)?;
        let progress = Progress {
            next: h.next_round,
            elapsed_s: h.elapsed_s,
            best: h.best,
            last: h.last,
        };
        Ok((progress, csv))
    }

    /// Write a checkpoint of the experiment at `progress` (after syncing the CSV).
    pub fn save(
        &self,
        ex: &mut Experiment,
        csv: &mut CsvWriter,
        progress: &Progress,
    ) -> Result<()> {
        // what the checkpoint refers to on disk is durable before it does
        for store in ex.alg.state().stores() {
            store.sync()?;
        }
        let csv_bytes = csv.sync()?;
        let written = std::fs::read(self.csv())
            .map_err(|e| Error::io(format!("cannot read {}", self.csv().display()), e))?;
        let prefix =
            usize::try_from(csv_bytes).map_or(&written[..], |n| &written[..n.min(written.len())]);
        let (csv_crc, csv_rows) = csv_digest(prefix);
        let mut vectors: Vec<(String, &[f32])> = vec![("global".into(), &ex.global)];
        vectors.extend(ex.alg.state().checkpoint());
        let header = checkpoint::Header {
            magic: checkpoint::MAGIC.into(),
            next_round: progress.next,
            csv_bytes,
            elapsed_s: progress.elapsed_s,
            best: progress.best,
            last: progress.last,
            spec: ex.spec.to_toml(),
            vectors: vectors.iter().map(|(n, v)| (n.clone(), v.len())).collect(),
            rounds_from: crate::metrics::csv::ROUNDS_FROM,
            active: ex.members.active().map(<[usize]>::to_vec),
            csv_crc: Some(csv_crc),
            csv_rows: Some(csv_rows),
            data_crc: Some(ex.data_crc),
        };
        checkpoint::write(&self.checkpoint(), &header, &vectors)?;
        drop(vectors);
        for store in ex.alg.state().stores() {
            store.commit();
        }
        Ok(())
    }

    /// Write `s`; a finished run's (complete or diverged) is sealed with the `rounds.csv` and
    /// `spec.toml` it ended with.
    pub fn write_summary(&self, s: &Summary) -> Result<()> {
        let mut s = s.clone();
        if matches!(s.status, Status::Complete | Status::Diverged) {
            s.seal = Some(Seal::of(&self.dir)?);
        }
        s.write(&self.dir)
    }
}

/// Refuse to resume on data other than the run's: the checkpoint `ck` holds the fingerprint of
/// the data it was written on (`then`; none before fedrun kept it), `now` is the loaded data's.
fn check_same_data(ck: &Path, then: Option<u32>, now: u32) -> Result<()> {
    match then {
        Some(then) if then != now => Err(Error::Run(format!(
            "{}: the run ran on other data than it is given now (the loaded data's CRC-32 was {then:08x}, it is {now:08x}): --data-dir or data.path points at other files, or they changed since; resuming would splice two runs into one rounds.csv. Give the run its data, run with --force to start afresh, or use another run.name",
            ck.display()
        ))),
        _ => Ok(()),
    }
}

/// The keys in which `new` differs from `old`; when resuming at round `next`, `fl.rounds` may
/// differ if it is at least `next` (nothing a round computes depends on the total). `data.path`
/// never counts: it says where the data was read, not what the run is, and a run may go on
/// reading the same data set from another place (a copy on another node's disk).
fn differing(old: &Spec, new: &Spec, next: Option<usize>) -> Vec<String> {
    let mut diff = old.diff_keys(new);
    diff.retain(|k| k != "data.path");
    if let Some(next) = next
        && new.fl.rounds >= next
    {
        diff.retain(|k| k != "fl.rounds");
    }
    diff
}

/// The CRC-32 of a `rounds.csv` prefix and its rows (lines after the header).
fn csv_digest(bytes: &[u8]) -> (u32, usize) {
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    (crc32fast::hash(bytes), lines.saturating_sub(1))
}

/// Remove everything in `dir` but its lock file (which this process holds: removing it would
/// let a second process lock a new one).
fn empty(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?;
    for e in entries.flatten() {
        let p = e.path();
        if e.file_name() == LOCK_FILE {
            continue;
        }
        let removed = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        removed.map_err(|e| Error::io(format!("cannot remove {}", p.display()), e))?;
    }
    Ok(())
}
