//! One writer per run folder: `run.lock`, held with an OS advisory lock (the standard library's
//! `File::try_lock`, `flock` on Linux) for the life of the run, with the holder's PID written
//! in it. The OS releases the lock when the process ends, however it ends, so a lock left by a
//! killed run never blocks a resume; a second process on a held folder is refused at once.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The lock file's name in a run folder.
pub const LOCK_FILE: &str = "run.lock";

/// A held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

fn open(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))
}

/// The PID written in a lock file, if it has one.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

impl RunLock {
    /// Take the lock of run folder `dir` (which must exist), or say who holds it.
    pub fn acquire(dir: &Path) -> Result<RunLock> {
        let path: PathBuf = dir.join(LOCK_FILE);
        let mut file = open(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let who = holder(&mut file)
                    .map(|p| format!("PID {p}"))
                    .unwrap_or_else(|| "a process whose PID is not recorded".into());
                return Err(Error::Run(format!(
                    "{} is in use by another fedrun process ({who}); wait for it to end, or stop it, before running into this folder again",
                    dir.display()
                )));
            }
            Err(TryLockError::Error(e)) => {
                return Err(Error::io(format!("cannot lock {}", path.display()), e));
            }
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(pid.as_bytes()))
            .and_then(|_| file.flush())
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        Ok(RunLock { _file: file })
    }

    /// Whether a process holds the lock of run folder `dir` now (a run in progress).
    pub fn is_held(dir: &Path) -> bool {
        let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
            return false;
        };
        matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock))
    }
}
