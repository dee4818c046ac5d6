//! `fedrun check`: validate a spec (its keys, and a size of work that can finish) and print it
//! resolved, every key with its default.

use super::spec_args::SpecArgs;
use crate::error::Result;

pub fn check(a: &SpecArgs) -> Result<()> {
    let spec = a.load()?;
    crate::fl::engine::resources::check_work(&spec, None)?;
    print!("{}", spec.to_toml());
    println!(
        "\n# fl.algorithm is one of: {}",
        crate::fl::algorithms::NAMES.join(", ")
    );
    Ok(())
}
