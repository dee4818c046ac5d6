//! `fedrun check`: validate a spec and print it resolved, every key with its default.

use super::spec_args::SpecArgs;
use crate::error::Result;

pub fn check(a: &SpecArgs) -> Result<()> {
    let spec = a.load()?;
    print!("{}", spec.to_toml());
    println!(
        "\n# fl.algorithm is one of: {}",
        crate::fl::algorithms::NAMES.join(", ")
    );
    Ok(())
}
