//! `fedrun check`: validate a spec (its keys, and a size of work that can finish) and print it
//! resolved, every key the run reads with its value: the five sections and the tables of the
//! spec's algorithm (another algorithm's table is left out; the run does not read it).

use super::spec_args::SpecArgs;
use crate::error::Result;
use crate::fl::algorithms::{NAMES, tables, tables_of};

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The data directory the run will be given (`--data-dir`; default: the spec's
    /// `data.path`), whose files are checked.
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
    /// Check the spec alone, not its data (on a machine that will not run it).
    #[arg(long, conflicts_with = "data_dir")]
    pub no_data: bool,
    /// Also estimate the run's wall time here: load the data and time a few local steps and a
    /// slice of the evaluation of the spec's model on this machine and backend (seconds to a
    /// minute; a GPU backend first compiles its kernels).
    #[arg(long, conflicts_with = "no_data")]
    pub time: bool,
}

pub fn check(a: &CheckArgs) -> Result<()> {
    let spec = a.spec.load()?;
    // the run's own gates: work that can finish, sizes this machine can hold
    use crate::fl::engine::resources::{available_memory, check_spec, check_work, memory};
    check_work(&spec, None)?;
    if let Some(budget) = available_memory() {
        check_spec(&spec, budget)?;
    }
    // the spec as the run will record it: `data.path` the `--data-dir` given
    let mut spec = crate::data::recorded(&spec, a.data_dir.as_deref());
    let reads = tables_of(&spec.fl.algorithm);
    for t in tables() {
        if !reads.contains(&t.name()) {
            spec.tables.remove(t.name());
        }
    }
    print!(
        "{}",
        annotated(&spec.to_toml(), &crate::schema::schema().unread(&spec))
    );
    // the names the unknown-algorithm error lists too: the registry's and the papers' aliases
    let aliases: Vec<String> = (crate::fl::algorithms::ALIASES.iter())
        .map(|a| {
            let sets: Vec<String> = a.sets.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            match sets.is_empty() {
                true => format!("{} ({})", a.name, a.algorithm),
                false => format!("{} ({}, {})", a.name, a.algorithm, sets.join(", ")),
            }
        })
        .collect();
    println!(
        "\n# fl.algorithm is one of: {}; or an alias: {}",
        NAMES.join(", "),
        aliases.join(", ")
    );
    println!(
        "# other algorithms' tables are left out: `fedrun check --set fl.algorithm=\"NAME\"` prints NAME's"
    );
    println!("# {}", work_line(&spec));
    if spec.run.cohort > 1 {
        println!("# {}", cohort_line(&spec));
    }
    let on_gpu = spec.run.backend != crate::config::Backend::Flex;
    println!("# {}", crate::fl::engine::graph_line(&spec));
    println!("# {}", memory(&spec).line(on_gpu));
    if let Some(p) = crate::fl::engine::precision(&spec.run) {
        println!("# precision: {p}");
    }
    if a.no_data {
        return Ok(());
    }
    let path = crate::data::path_of(&spec, a.data_dir.as_deref());
    match crate::data::probe::probe(&spec, &path) {
        Ok(found) => {
            println!("# data: {found}");
            if a.time {
                let data = crate::data::load(&spec, a.data_dir.as_deref())?;
                if let Some(budget) = available_memory() {
                    crate::fl::engine::resources::check_batches(&spec, &data, budget)?;
                }
                println!("# {}", super::estimate::estimate(&spec, data)?);
            }
            Ok(())
        }
        Err(why) => Err(crate::error::Error::Data(format!(
            "the spec is valid, but its data is not there: {why} (pass --data-dir DIR to check the directory the run will be given)"
        ))),
    }
}

/// The work of a spec: rounds, local steps and test evaluations (docs/PERFORMANCE.md gives the
/// time a round takes of each paper setting on the machines measured).
fn work_line(spec: &crate::config::Spec) -> String {
    let (fl, l) = (&spec.fl, &spec.local);
    let evals =
        fl.rounds / fl.eval_every.max(1) + usize::from(fl.rounds % fl.eval_every.max(1) != 0);
    let steps = if l.epochs > 0 {
        format!(
            "{} epoch{} of batch {} over each client's samples",
            l.epochs,
            if l.epochs == 1 { "" } else { "s" },
            l.batch_size
        )
    } else {
        let total = fl.rounds as u128 * fl.clients_per_round as u128 * l.steps as u128;
        format!(
            "{} steps of batch {} ({total} local steps in all)",
            l.steps, l.batch_size
        )
    };
    let extra =
        crate::fl::algorithms::extra_work(spec).map_or(String::new(), |e| format!("; {}", e.line));
    let plural = if evals == 1 { "" } else { "s" };
    format!(
        "the work: {} rounds × {} clients × {steps}{extra}; {evals} test evaluation{plural}; the time a round takes on the machines measured: docs/PERFORMANCE.md",
        fl.rounds, fl.clients_per_round
    )
}

/// The spec's TOML with each key the run will not read marked so, and why: `check` shows what
/// the run will do, not only what the file says.
fn annotated(toml: &str, unread: &[crate::config::Unread]) -> String {
    let mut section = String::new();
    let mut out = String::with_capacity(toml.len());
    for line in toml.lines() {
        out.push_str(line);
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
        } else if let Some((key, _)) = line.split_once(" = ") {
            let full = format!("{section}.{key}");
            if let Some(u) = unread.iter().find(|u| u.key == full) {
                out.push_str(&format!("  # not read {}", u.why));
            }
        }
        out.push('\n');
    }
    out
}

/// What `run.cohort` will do with this spec (for `"auto"`, the K it picks and why; on a GPU
/// backend the run measures the device's free memory too, which `check` does not open).
fn cohort_line(spec: &crate::config::Spec) -> String {
    use crate::config::Backend;
    use crate::config::COHORT_AUTO;
    use crate::fl::engine::resources::{DEVICE_SHARE, cohort};
    match cohort(spec) {
        (_, Some(why)) if spec.run.cohort == COHORT_AUTO && spec.run.backend != Backend::Flex => {
            format!(
                "{why}; the run keeps it within {:.0} % of the device's free memory too, measured when it starts (where the runtime states the capacity: cuda, vulkan)",
                DEVICE_SHARE * 100.0
            )
        }
        (_, Some(why)) => why,
        (k, None) => format!("run.cohort = {k}: up to {k} clients train as one computation"),
    }
}
