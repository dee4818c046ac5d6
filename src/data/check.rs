//! What a spec needs of its data set, checked before anything loads.

use crate::config::{Partition, Spec};
use crate::error::{Error, Result};

/// The data's check of a whole spec (part of the schema): a natural partition needs users.
pub fn check_spec(s: &Spec) -> Result<()> {
    let d = &s.data;
    if d.partition == Partition::Natural && !super::info(d).users {
        return Err(Error::Config(format!(
            "data.partition = \"natural\" needs a data set with users (shakespeare, leaf, femnist, celeba), not {}",
            d.dataset
        )));
    }
    Ok(())
}

/// Why `dir` cannot be read as a data directory: "is a file, not a directory" or "does not
/// exist".
pub fn absent(dir: &std::path::Path) -> &'static str {
    if dir.exists() {
        "is a file, not a directory"
    } else {
        "does not exist"
    }
}
