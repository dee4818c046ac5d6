//! What a spec needs of its data set, checked before anything loads.

use crate::config::{Dataset, Partition, Spec};
use crate::error::{Error, Result};

/// The data's check of a whole spec (part of the schema): a natural partition needs users.
pub fn check_spec(s: &Spec) -> Result<()> {
    let d = &s.data;
    let users = matches!(d.dataset, Dataset::Shakespeare | Dataset::Leaf);
    if d.partition == Partition::Natural && !users {
        return Err(Error::Config(format!(
            "data.partition = \"natural\" needs a data set with users (shakespeare, leaf), not {}",
            d.dataset
        )));
    }
    Ok(())
}
