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
    file: File,
}

impl Drop for RunLock {
    /// Released at once, not when the last descriptor of the file closes: a child process that
    /// another thread is starting holds a copy of every descriptor until it executes its program
    /// (closing them then), and `flock` is held while any copy is open, so a run in the same
    /// process that takes the folder next was refused as "in use by another fedrun process"
    /// (this process's own PID) now and then.
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
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
        Ok(RunLock { file })
    }

    /// Whether a process holds the lock of run folder `dir` now (a run in progress).
    pub fn is_held(dir: &Path) -> bool {
        let Ok(file) = File::open(dir.join(LOCK_FILE)) else {
            return false;
        };
        matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock))
    }
}

#[cfg(test)]
mod tests {
    use super::RunLock;

    /// A copy of the lock's descriptor still open elsewhere (as in a child process between its
    /// start and its program) does not keep the folder locked once the lock is dropped.
    #[test]
    fn a_dropped_lock_is_free_while_a_copy_of_its_descriptor_is_open() {
        let dir = std::env::temp_dir().join(format!("fedrun-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lock = RunLock::acquire(&dir).unwrap();
        assert!(RunLock::acquire(&dir).is_err(), "held");
        let copy = lock.file.try_clone().unwrap();
        drop(lock);
        let again = RunLock::acquire(&dir);
        drop(copy);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(again.is_ok(), "{again:?}");
    }
}
