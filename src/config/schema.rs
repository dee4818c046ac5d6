//! What the spec learns from the parts of fedrun it does not know.

use super::spec::Spec;
use super::tables::KeyTable;
use crate::error::Result;

/// The tables other parts of fedrun own, the names `fl.algorithm` may take, and their checks
/// of a whole spec.
pub struct Schema {
    /// The tables, in the order `spec.toml` and `fedrun check` print them.
    pub tables: Vec<&'static dyn KeyTable>,
    /// The values of `fl.algorithm`.
    pub algorithms: Vec<&'static str>,
    /// Checks of a whole spec (a model that cannot train clients in parallel, …), run after
    /// the value checks.
    pub checks: Vec<fn(&Spec) -> Result<()>>,
}
