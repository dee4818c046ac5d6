//! Small file-system helpers shared by the outputs (run folders, summaries, sweeps).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The one rule for a name fedrun turns into a path (a run's folder, and so a sweep point's,
/// whose name becomes its `run.name`, and the sweep's log beside it): one plain path component,
/// not empty, not `.` or `..`, with no separator and no control character (a newline or a tab
/// would make a folder that a listing or the summary line prints across lines). `what` names
/// the key in the error.
pub fn path_component(what: &str, name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\'])
        || name.chars().any(char::is_control);
    match bad {
        false => Ok(()),
        true => Err(Error::Config(format!(
            "{what} must be a plain folder name (no `/` or `\\`, no control character, not `.` or `..`), got \"{}\"",
            name.escape_debug()
        ))),
    }
}

/// Write a file atomically: temp file, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Write a file atomically from a writer callback (large files stream through a buffer
/// instead of being built in memory first): temp file, fsync, rename. A write that fails (a
/// full disk) removes the temp file and leaves `path` as it was.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let written = write_synced(&tmp, fill);
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    std::fs::rename(&tmp, path).map_err(|e| {
        Error::io(
            format!("cannot rename {} to {}", tmp.display(), path.display()),
            e,
        )
    })
}

/// Create `tmp`, fill it, flush and fsync it.
fn write_synced(
    tmp: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let f = std::fs::File::create(tmp)
        .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    fill(&mut w)
        .and_then(|_| w.flush())
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
    let f = w
        .into_inner()
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e.into_error()))?;
    f.sync_all()
        .map_err(|e| Error::io(format!("cannot sync {}", tmp.display()), e))
}
