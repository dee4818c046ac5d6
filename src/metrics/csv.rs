//! `rounds.csv`: one row per evaluated round, appended and flushed row by row (the `csv`
//! crate writes and reads it; the numbers are formatted here, so equal runs give equal bytes).

use super::tensorboard::Events;
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// The CSV's first round: a row's `round` is the number of rounds completed (the model after
/// k rounds is row k), as the papers count (FedACG's "rounds to reach", PyTorch's
/// `MultiStepLR` milestones), in the CSV, the summary, `report` and `plot` alike.
pub const ROUNDS_FROM: usize = 1;
pub const HEADER: &str = "round,test_acc,test_loss,train_loss,lr,clipped_steps,mean_clip_norm,update_norm,server_lr,server_state_norm,vhat_at_floor,down_bytes,up_bytes,elapsed_s";

/// One row. Floats are written in Rust's shortest round-trip form, so equal values give
/// equal bytes and the file carries full precision.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub round: usize,
    pub test_acc: f64,
    pub test_loss: f64,
    pub train_loss: f64,
    pub lr: f64,
    pub clipped_steps: usize,
    pub mean_clip_norm: f64,
    pub update_norm: f64,
    pub server_lr: f64,
    pub server_state_norm: Option<f64>,
    /// The fraction of v̂'s coordinates at its ε floor (the AMSGrad family; empty otherwise).
    pub vhat_at_floor: Option<f64>,
    /// Bytes the server sent to the round's clients, and they to it: the model and whatever
    /// else the algorithm transmits (4 bytes a float; a quantized update as its bits, rounded
    /// up to whole bytes per client).
    pub down_bytes: u64,
    pub up_bytes: u64,
    pub elapsed_s: f64,
}

impl Row {
    /// The row's columns as (tag, value), `round` left out (it is the step) and an empty optional
    /// column too (TensorBoard's scalars, `tensorboard.rs`).
    pub fn scalars(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("test_acc", self.test_acc),
            ("test_loss", self.test_loss),
            ("train_loss", self.train_loss),
            ("lr", self.lr),
            ("clipped_steps", self.clipped_steps as f64),
            ("mean_clip_norm", self.mean_clip_norm),
            ("update_norm", self.update_norm),
            ("server_lr", self.server_lr),
        ];
        v.extend(self.server_state_norm.map(|x| ("server_state_norm", x)));
        v.extend(self.vhat_at_floor.map(|x| ("vhat_at_floor", x)));
        v.extend([
            ("down_bytes", self.down_bytes as f64),
            ("up_bytes", self.up_bytes as f64),
            // as rounds.csv holds it, to the millisecond
            (
                "elapsed_s",
                format!("{:.3}", self.elapsed_s)
                    .parse()
                    .unwrap_or(self.elapsed_s),
            ),
        ]);
        v
    }

    pub fn line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3}",
            self.round,
            self.test_acc,
            self.test_loss,
            self.train_loss,
            self.lr,
            self.clipped_steps,
            self.mean_clip_norm,
            self.update_norm,
            self.server_lr,
            self.server_state_norm
                .map(|v| v.to_string())
                .unwrap_or_default(),
            self.vhat_at_floor
                .map(|v| v.to_string())
                .unwrap_or_default(),
            self.down_bytes,
            self.up_bytes,
            self.elapsed_s
        )
    }
}

/// `rounds.csv` through the `csv` crate's writer, flushed after every row, each row also
/// written to the folder's TensorBoard event file of this invocation (`tensorboard.rs`).
pub struct CsvWriter {
    w: csv::Writer<File>,
    path: PathBuf,
    events: Events,
}

/// The TensorBoard event file beside `path`, the only one there: the folder's old ones removed,
/// and the rows `path` holds now written into it (a resume's kept rows; none for a new file).
fn events_beside(path: &Path) -> Result<Events> {
    let dir = path.parent().unwrap_or(Path::new("."));
    super::tensorboard::remove_all(dir)?;
    let mut events = Events::create(dir)?;
    let Ok((header, rows)) = read(path) else {
        return Ok(events);
    };
    for row in rows {
        let Some(Ok(step)) = row.first().map(|r| r.parse::<u64>()) else {
            continue;
        };
        let scalars: Vec<(&str, f64)> = (header.iter().zip(&row).skip(1))
            .filter_map(|(tag, cell)| cell.parse::<f64>().ok().map(|v| (tag.as_str(), v)))
            .collect();
        events.write(step, &scalars)?;
    }
    Ok(events)
}

impl CsvWriter {
    fn io(&self, e: impl Into<std::io::Error>) -> Error {
        Error::io(format!("cannot write {}", self.path.display()), e.into())
    }

    /// Create a new file with the header (truncating any old one).
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::create(path)
            .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        let mut w = CsvWriter {
            w: csv::Writer::from_writer(file),
            path: path.to_path_buf(),
            events: events_beside(path)?,
        };
        w.w.write_record(HEADER.split(','))
            .and_then(|_| w.w.flush().map_err(csv::Error::from))
            .map_err(|e| w.io(e))?;
        Ok(w)
    }

    /// Open an existing file for appending after truncating it to `len` bytes (resume).
    pub fn resume(path: &Path, len: u64) -> Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        file.set_len(len)
            .map_err(|e| Error::io(format!("cannot truncate {}", path.display()), e))?;
        drop(file);
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        Ok(CsvWriter {
            w: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(file),
            path: path.to_path_buf(),
            events: events_beside(path)?,
        })
    }

    pub fn write(&mut self, row: &Row) -> Result<()> {
        let line = row.line();
        self.w
            .write_record(line.split(','))
            .and_then(|_| self.w.flush().map_err(csv::Error::from))
            .map_err(|e| self.io(e))?;
        self.events.write(row.round as u64, &row.scalars())
    }

    /// fsync and return the file length (for checkpoints).
    pub fn sync(&mut self) -> Result<u64> {
        self.w.flush().map_err(|e| self.io(e))?;
        let f = self.w.get_ref();
        f.sync_data()
            .map_err(|e| Error::io(format!("cannot sync {}", self.path.display()), e))?;
        Ok(f.metadata().map(|m| m.len()).unwrap_or(0))
    }
}

/// Read a rounds.csv back with the `csv` crate: the header's columns and the rows as strings
/// (a partly written last line, from a crash, is a row with fewer fields).
pub fn read(path: &Path) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    let bad = |e: csv::Error| Error::Data(format!("{}: not a readable CSV: {e}", path.display()));
    let mut r = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| match e.into_kind() {
            csv::ErrorKind::Io(io) => Error::io(format!("cannot read {}", path.display()), io),
            other => Error::Data(format!("{}: {other:?}", path.display())),
        })?;
    let header: Vec<String> = r.headers().map_err(bad)?.iter().map(String::from).collect();
    let mut rows = Vec::new();
    for rec in r.records() {
        rows.push(rec.map_err(bad)?.iter().map(String::from).collect());
    }
    Ok((header, rows))
}
