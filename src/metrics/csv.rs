//! `rounds.csv`: one row per evaluated round, appended and flushed row by row.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const HEADER: &str = "round,test_acc,test_loss,train_loss,lr,clipped_steps,mean_clip_norm,update_norm,server_lr,server_state_norm,elapsed_s";

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
    pub elapsed_s: f64,
}

impl Row {
    pub fn line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{:.3}",
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
            self.elapsed_s
        )
    }
}

pub struct CsvWriter {
    file: File,
    path: PathBuf,
}

impl CsvWriter {
    /// Create a new file with the header (truncating any old one).
    pub fn create(path: &Path) -> Result<Self> {
        let mut file = File::create(path)
            .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        writeln!(file, "{HEADER}")
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        file.flush().ok();
        Ok(CsvWriter {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Open an existing file for appending after truncating it to `len` bytes (resume).
    pub fn resume(path: &Path, len: u64) -> Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        file.set_len(len)
            .map_err(|e| Error::io(format!("cannot truncate {}", path.display()), e))?;
        let mut file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        file.flush().ok();
        Ok(CsvWriter {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn write(&mut self, row: &Row) -> Result<()> {
        writeln!(self.file, "{}", row.line())
            .map_err(|e| Error::io(format!("cannot write {}", self.path.display()), e))?;
        self.file
            .flush()
            .map_err(|e| Error::io(format!("cannot write {}", self.path.display()), e))
    }

    /// fsync and return the file length (for checkpoints).
    pub fn sync(&mut self) -> Result<u64> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("cannot sync {}", self.path.display()), e))?;
        Ok(self.file.metadata().map(|m| m.len()).unwrap_or(0))
    }
}

/// Read a rounds.csv back: the header's columns and the rows as strings.
pub fn read(path: &Path) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(String::from)
        .collect();
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    Ok((header, rows))
}
