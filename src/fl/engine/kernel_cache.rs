//! The machine's kernel cache (cubecl's persistent environment in the user's cache folder, in a
//! build with `kernel-cache`, which `gpu` has): where it is, and its entries written to and read
//! from a file (a cubecl bundle), so that a cluster's machines with one GPU model share what one
//! of them compiled and tuned. A bundle is ignored (with cubecl's warning) by another cubecl
//! version or GPU; compiled kernels serve only the binary that compiled them.

use std::path::Path;

use crate::error::{Error, Result};

/// The cache folder, or None in a build without `kernel-cache`.
pub fn dir() -> Option<String> {
    imp::dir()
}

/// Write the machine's kernel cache to `out`; what was written.
pub fn export(out: &Path) -> Result<String> {
    imp::export(out)
}

/// Add the entries of the bundle `file` to the machine's kernel cache; what was added.
pub fn import(file: &Path) -> Result<String> {
    imp::import(file)
}

#[cfg(feature = "kernel-cache")]
mod imp {
    use super::*;
    use burn::cubecl::bundle::{self, BundleFormat};

    pub fn dir() -> Option<String> {
        super::super::gpu::configure();
        Some(burn::cubecl::environment::path().display().to_string())
    }

    pub fn export(out: &Path) -> Result<String> {
        super::super::gpu::configure();
        let m = burn::cubecl::environment::bundle()
            .save(out, BundleFormat::Sqlite)
            .map_err(|e| {
                Error::Run(format!(
                    "writing the kernel cache to {}: {e}",
                    out.display()
                ))
            })?;
        Ok(format!(
            "wrote {} (cubecl {}): this machine's compiled kernels and tuning results",
            out.display(),
            m.cubecl_version
        ))
    }

    pub fn import(file: &Path) -> Result<String> {
        super::super::gpu::configure();
        let b = bundle::open(file).map_err(|e| {
            Error::Data(format!(
                "{}: not a kernel-cache bundle: {e}",
                file.display()
            ))
        })?;
        let r = bundle::import(b.as_ref());
        Ok(format!(
            "{}: {} entries added to {}, {} already there, {} refused",
            file.display(),
            r.imported,
            burn::cubecl::environment::path().display(),
            r.skipped,
            r.failed
        ))
    }
}

#[cfg(not(feature = "kernel-cache"))]
mod imp {
    use super::*;

    fn missing() -> Error {
        Error::Config(
            "this fedrun has no kernel cache: build it with `--features gpu` (or `kernel-cache`)"
                .into(),
        )
    }

    pub fn dir() -> Option<String> {
        None
    }

    pub fn export(_out: &Path) -> Result<String> {
        Err(missing())
    }

    pub fn import(_file: &Path) -> Result<String> {
        Err(missing())
    }
}
