//! Small file-system helpers shared by the outputs (run folders, summaries, sweeps).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Write a file atomically: temp file, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)
        .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?;
    f.write_all(bytes)
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
    f.sync_all()
        .map_err(|e| Error::io(format!("cannot sync {}", tmp.display()), e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| {
        Error::io(
            format!("cannot rename {} to {}", tmp.display(), path.display()),
            e,
        )
    })
}
