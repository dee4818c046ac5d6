//! The spec as fedrun reads it: `config`'s sections, plus what the other parts of fedrun
//! contribute through a [`Schema`]: the algorithms' key tables and names (the registry in
//! `fl::algorithms`) and the models' checks. This is the one place that joins `config` with
//! them, so that `config` imports none of them.

use std::path::Path;
use std::sync::LazyLock;

use crate::config::{Schema, Spec};
use crate::error::Result;
use crate::fl::algorithms;

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema {
    tables: algorithms::tables(),
    algorithms: algorithms::NAMES.to_vec(),
    checks: vec![crate::model::check_spec],
});

/// The schema of every spec fedrun reads.
pub fn schema() -> &'static Schema {
    &SCHEMA
}

/// Parse spec text (`origin` names it in errors), apply `--set` overrides, and validate.
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<Spec> {
    Spec::parse(text, origin, overrides, schema())
}

/// Load a spec file, apply `--set` overrides, and validate.
pub fn load(path: &Path, overrides: &[String]) -> Result<Spec> {
    Spec::load(path, overrides, schema())
}
