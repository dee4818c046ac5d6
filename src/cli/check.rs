//! `fedrun check`: validate a spec (its keys, and a size of work that can finish) and print it
//! resolved, every key the run reads with its value: the five sections and the tables of the
//! spec's algorithm (another algorithm's table is left out; the run does not read it).

use super::spec_args::SpecArgs;
use crate::error::Result;
use crate::fl::algorithms::{NAMES, tables, tables_of};

pub fn check(a: &SpecArgs) -> Result<()> {
    let mut spec = a.load()?;
    crate::fl::engine::resources::check_work(&spec, None)?;
    let reads = tables_of(&spec.fl.algorithm);
    for t in tables() {
        if !reads.contains(&t.name()) {
            spec.tables.remove(t.name());
        }
    }
    print!("{}", spec.to_toml());
    println!("\n# fl.algorithm is one of: {}", NAMES.join(", "));
    println!(
        "# other algorithms' tables are left out: `fedrun check --set fl.algorithm=\"NAME\"` prints NAME's"
    );
    Ok(())
}
