//! The spec arguments that `run`, `check` and `sweep` share: `--config` and `--set`.

use clap::Args;
use std::path::PathBuf;

use crate::config::{QUICKSTART, Spec};
use crate::error::Result;

#[derive(Args, Debug, Clone)]
pub struct SpecArgs {
    /// The experiment spec (TOML). Without it, the embedded Shakespeare quickstart runs.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Override a key: --set local.weight_decay=0.05 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SpecArgs {
    /// The spec, `--set` applied and validated.
    pub fn load(&self) -> Result<Spec> {
        match &self.config {
            Some(p) => crate::schema::load(p, &self.set),
            None => {
                crate::schema::parse(QUICKSTART, "configs/quickstart.toml (embedded)", &self.set)
            }
        }
    }
}
