//! What the spec learns from the parts of fedrun it does not know.

use super::spec::Spec;
use super::tables::KeyTable;
use super::unread::Unread;
use crate::error::Result;

/// A name for an algorithm with some of its keys set (`mimelite`: `mime` with `mime.base =
/// "sgdm"`), resolved when the spec is read so that the resolved spec shows what runs.
pub struct Alias {
    pub name: &'static str,
    pub algorithm: &'static str,
    /// Keys it sets, as `key = TOML value` (`("mime.lite", "true")`).
    pub sets: &'static [(&'static str, &'static str)],
}

/// The tables other parts of fedrun own, the names `fl.algorithm` may take, and their checks
/// of a whole spec.
pub struct Schema {
    /// The tables, in the order `spec.toml` and `fedrun check` print them.
    pub tables: Vec<&'static dyn KeyTable>,
    /// The values of `fl.algorithm`.
    pub algorithms: Vec<&'static str>,
    /// Other names of algorithms, with the keys they set.
    pub aliases: &'static [Alias],
    /// Checks of a whole spec (a model that cannot train clients in parallel, …), run after
    /// the value checks.
    pub checks: Vec<fn(&Spec) -> Result<()>>,
    /// Rules that name the keys a spec's run does not read.
    pub unread: Vec<fn(&Spec) -> Vec<Unread>>,
}

impl Schema {
    /// Every key `spec`'s run does not read, by the schema's rules.
    pub fn unread(&self, spec: &Spec) -> Vec<Unread> {
        self.unread.iter().flat_map(|rule| rule(spec)).collect()
    }
}
