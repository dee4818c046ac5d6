//! `fedrun tune`: compile (and, in a build with `autotune`, tune) a spec's kernels on this
//! machine's GPU ahead of a study, and carry them to the machines of a cluster with the same GPU
//! and the same fedrun binary as one file (a cubecl bundle), so that no run there starts by
//! compiling. A GPU run of the default GPU build tunes nothing (fedrun's kernel rule), so this
//! is never needed for a run to start; it saves each new machine its first compilations.

use std::path::PathBuf;
use std::time::Instant;

use super::spec_args::SpecArgs;
use crate::config::Backend;
use crate::error::{Error, Result};
use crate::fl::engine::{Experiment, kernel_cache};

#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The data directory the run will be given (`--data-dir`; default: the spec's `data.path`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// After the spec's first round and an evaluation, write this machine's kernel cache (the
    /// compiled kernels, and the tuning results of an `autotune` build) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Add the entries of FILE (written by `--export` on a machine with the same GPU and the same
    /// fedrun binary) to this machine's kernel cache, and run nothing. Entries already here are
    /// kept.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["export", "data_dir"])]
    pub import: Option<PathBuf>,
}

pub fn tune(a: &TuneArgs) -> Result<()> {
    if let Some(f) = &a.import {
        println!("{}", kernel_cache::import(f)?);
        return Ok(());
    }
    let spec = a.spec.load()?;
    if spec.run.backend == Backend::Flex {
        return Err(Error::Config(
            "key `run.backend` = \"flex\": `fedrun tune` is for the GPU backends (flex compiles and tunes nothing); --set run.backend=\"cuda\" or \"vulkan\"".into(),
        ));
    }
    let t = Instant::now();
    let data = crate::data::load(&spec, a.data_dir.as_deref())?;
    let mut ex = Experiment::new(&spec, data)?;
    ex.round_stats(0)?;
    ex.evaluate()?;
    let _ = ex.device.sync();
    println!(
        "{}",
        serde_json::json!({"tune": spec.run.name, "backend": spec.run.backend.to_string(),
            "seconds": t.elapsed().as_secs_f64(), "cache": kernel_cache::dir()})
    );
    if let Some(f) = &a.export {
        println!("{}", kernel_cache::export(f)?);
    }
    Ok(())
}
