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
    if spec.run.cohort > 1 {
        println!("# {}", cohort_line(&spec));
    }
    Ok(())
}

/// What `run.cohort` will do with this spec.
fn cohort_line(spec: &crate::config::Spec) -> String {
    let k = spec.run.cohort;
    match crate::model::stacked::why_not(&spec.model) {
        Some(why) => format!("run.cohort = {k}: {why}; the clients train one at a time"),
        None => format!(
            "run.cohort = {k}: up to {k} clients train as one computation; a round whose clients' step reads more than the cross-entropy of the logits (frozen models, a loss of its own, the starting model's gradient) trains them one at a time, and the run says so"
        ),
    }
}
