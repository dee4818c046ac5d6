//! A spec that extends another: `extends = "../cifar_fedavg.toml"` at the top of a file takes
//! every key of that file and states only what differs, so that a study's configs say what the
//! study changes. The path is relative to the extending file's folder (as `#include` and
//! most config formats resolve theirs), a base may extend another, and tables merge key by key:
//! a key of the extending file replaces the base's. A run folder's `spec.toml` is the whole
//! resolved spec, as always.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Bases followed at most (a longer chain is a cycle or a slip).
const MAX_DEPTH: usize = 16;

/// The text of the spec file `path` with its `extends` chain resolved: one TOML document.
pub fn resolve(path: &Path) -> Result<String> {
    let mut chain: Vec<PathBuf> = Vec::new();
    let table = read(path, &mut chain)?;
    if chain.len() == 1 {
        // no base: the file's own text, comments and order as written
        return std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read config {}", path.display()), e));
    }
    toml::to_string(&table).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

/// Refuse a spec file `path` whose `text` is empty or only comments: it would run every default
/// (a 1,000-round CIFAR-10 study) in silence.
pub(crate) fn not_empty(text: &str, path: &Path) -> Result<()> {
    let empty = (text.lines().map(str::trim)).all(|l| l.is_empty() || l.starts_with('#'));
    match empty {
        false => Ok(()),
        true => Err(Error::Config(format!(
            "config {} is empty (or only comments): a spec names at least its data set; `fedrun check --config configs/cifar_fedavg.toml` prints a complete one, and `fedrun` alone runs the quickstart",
            path.display()
        ))),
    }
}

/// The table of `path` over its bases; `chain` holds the files read so far.
fn read(path: &Path, chain: &mut Vec<PathBuf>) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read config {}", path.display()), e))?;
    not_empty(&text, path)?;
    let here = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if chain.contains(&here) || chain.len() >= MAX_DEPTH {
        let files: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::Config(format!(
            "{}: `extends` comes back to a file already read ({} → {})",
            path.display(),
            files.join(" → "),
            here.display()
        )));
    }
    chain.push(here);
    let mut table: toml::Table = text
        .parse()
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    let Some(base) = table.remove("extends") else {
        return Ok(table);
    };
    let Some(base) = base.as_str() else {
        return Err(Error::Config(format!(
            "{}: key `extends` must be the path of the spec this one extends, as a string",
            path.display()
        )));
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let base_path = dir.join(base);
    if !base_path.is_file() {
        return Err(Error::Config(format!(
            "{}: key `extends` = \"{base}\": {} is not a file (the path is relative to {})",
            path.display(),
            base_path.display(),
            if dir.as_os_str().is_empty() {
                "the current folder".to_string()
            } else {
                format!("the extending file's folder, {}", dir.display())
            }
        )));
    }
    let mut merged = read(&base_path, chain)?;
    merge(&mut merged, table);
    Ok(merged)
}

/// `over`'s keys into `base`: tables merge key by key, any other value replaces the base's.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}
