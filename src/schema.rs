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
    aliases: algorithms::ALIASES,
    checks: vec![
        crate::model::check_spec,
        crate::data::check_spec,
        crate::fl::algorithms::check_spec,
        crate::fl::engine::check_backend,
    ],
    unread: vec![
        crate::data::unread_keys,
        crate::model::unread_keys,
        crate::fl::unread::unread_keys,
    ],
});

/// The schema of every spec fedrun reads.
pub fn schema() -> &'static Schema {
    &SCHEMA
}

/// Parse spec text (`origin` names it in errors), apply `--set` overrides, and validate.
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<Spec> {
    Spec::parse(text, origin, overrides, schema())
}

/// A run folder's `spec.toml` read back with every check and default (for
/// [`RunOptions::parse_spec`](crate::fl::engine::RunOptions)).
pub fn parse_resolved(text: &str, origin: &str) -> Result<Spec> {
    parse(text, origin, &[])
}

/// Load a spec file, apply `--set` overrides, and validate.
pub fn load(path: &Path, overrides: &[String]) -> Result<Spec> {
    Spec::load(path, overrides, schema())
}

/// A user's spec: as [`parse`], and a `--set` of a key the run will not read is an error; the
/// warnings name the keys the text sets that the run will not read.
pub fn parse_user(text: &str, origin: &str, overrides: &[String]) -> Result<(Spec, Vec<String>)> {
    Spec::parse_user(text, origin, overrides, schema())
}
