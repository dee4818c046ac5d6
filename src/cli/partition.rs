//! `fedrun partition`: how the spec splits the training data among clients (sizes and samples
//! per class), printed, written as CSV and drawn, exactly as a run would split it.

use clap::Args;
use std::path::PathBuf;

use super::spec_args::SpecArgs;
use crate::analysis::figure;
use crate::analysis::partition::{Partition, PartitionFigure};
use crate::error::{Error, Result};

#[derive(Args, Debug)]
pub struct PartitionArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Data directory (overrides data.path).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Write each client's size and samples per class here (CSV).
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Draw the split (.png, .svg or .pdf): a bar per client, stacked by class.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Clients listed on the terminal.
    #[arg(long, default_value_t = 10)]
    pub show: usize,
}

pub fn partition(a: &PartitionArgs) -> Result<()> {
    let spec = a.spec.load()?;
    let data = crate::data::load(&spec, a.data_dir.as_deref())?;
    let p = Partition {
        counts: data.class_counts(),
    };
    if p.counts.is_empty() {
        return Err(Error::Data("the split has no clients".into()));
    }
    println!(
        "{}: data.partition = \"{}\"",
        data.name, spec.data.partition
    );
    print!("{}", p.summary());
    let csv = p.csv();
    let shown: Vec<&str> = csv.lines().take(a.show + 1).collect();
    println!("{}", shown.join("\n"));
    if p.counts.len() > a.show {
        println!("… ({} clients in all; --csv writes them)", p.counts.len());
    }
    if let Some(f) = &a.csv {
        crate::io::write_atomic(f, csv.as_bytes())?;
        println!("wrote {}", f.display());
    }
    if let Some(f) = &a.plot {
        let title = format!(
            "{}, {} ({} clients): label skew {:.2}",
            data.name,
            spec.data.partition,
            p.counts.len(),
            p.label_skew()
        );
        let fig = PartitionFigure {
            partition: &p,
            title,
        };
        figure::write(f, (900, 500), &fig)?;
        println!("wrote {}", f.display());
    }
    Ok(())
}
