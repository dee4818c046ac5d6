//! The spec arguments that `run`, `check` and `sweep` share: `--config` and `--set`.

use clap::Args;
use std::path::PathBuf;

use crate::config::{QUICKSTART, Spec};
use crate::error::Result;

#[derive(Args, Debug, Clone)]
pub struct SpecArgs {
    /// The experiment spec (TOML). Without it, the embedded Shakespeare quickstart's spec
    /// (configs/quickstart.toml) is used.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Override a key: --set local.weight_decay=0.05 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SpecArgs {
    /// The spec's text and its name in messages.
    pub fn text(&self) -> Result<(String, String)> {
        match &self.config {
            Some(p) => {
                let text = crate::config::extends::resolve(p)?;
                Ok((text, p.display().to_string()))
            }
            None => Ok((
                QUICKSTART.to_string(),
                "configs/quickstart.toml (embedded)".into(),
            )),
        }
    }

    /// The spec, `--set` applied and validated; a `--set` of a key the run will not read is an
    /// error, and each key of the file the run will not read gives a warning on stderr.
    pub fn load(&self) -> Result<Spec> {
        let (text, origin) = self.text()?;
        let (spec, warnings) = crate::schema::parse_user(&text, &origin, &self.set)?;
        for w in warnings {
            eprintln!("warning: {w}");
        }
        if let Some(note) = spec.defaults_taken(&text, &self.set, crate::schema::schema()) {
            eprintln!("note: {note}");
        }
        Ok(spec)
    }
}
