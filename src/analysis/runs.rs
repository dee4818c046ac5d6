//! Run folders as the analysis sees them: the spec, the curve and the status; and grouping of
//! runs that differ only by seed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::config::Spec;
use crate::error::{Error, Result};
use crate::fl::algorithms::is_algorithm_table;
use crate::fl::engine::RunLock;
use crate::metrics::csv;
use crate::metrics::summary::{Status, Summary};

#[derive(Clone, Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub spec: Spec,
    /// Every key of the spec, flattened (`local.weight_decay` → "0.01").
    pub keys: BTreeMap<String, String>,
    /// The keys the run does not read (they are not part of its configuration).
    pub unread: BTreeSet<String>,
    pub status: Status,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Added to the CSV's `round` to count rounds completed: 1 for a folder written before
    /// fedrun counted them so (its `summary.json` has no `rounds_from`), else 0.
    pub round_shift: usize,
    /// What does not read back whole (a corrupt `summary.json`, a row cut mid-line, a cell
    /// that is NaN or infinite); the run's status is then `damaged`.
    pub damage: Vec<String>,
}

impl Run {
    pub fn load(dir: &Path) -> Result<Run> {
        let sp = dir.join("spec.toml");
        let text = std::fs::read_to_string(&sp).map_err(|e| {
            Error::Data(format!(
                "{} is not a fedrun run folder (no spec.toml: {e})",
                dir.display()
            ))
        })?;
        let spec = crate::schema::parse(&text, &sp.display().to_string(), &[])?;
        let summary = Summary::read(dir);
        let round_shift = match &summary {
            Ok(s) if s.rounds_from == 0 => 1,
            _ => 0,
        };
        let csv_path = dir.join("rounds.csv");
        let (columns, mut rows) = csv::read(&csv_path)?;
        // fedrun ends every row with a newline: a file that does not end in one was cut
        let whole = std::fs::read(&csv_path).is_ok_and(|b| b.last().is_none_or(|&c| c == b'\n'));
        let mut damage = damaged_rows(&columns, &mut rows, whole);
        if let Ok(s) = &summary {
            damage.extend(s.mismatches(dir));
        }
        let held = RunLock::is_held(dir);
        let status = match summary.map(|s| s.status) {
            // a run in progress holds its folder's lock
            Ok(Status::Interrupted) | Err(_) if held => Status::Running,
            Ok(s) if damage.is_empty() => s,
            Ok(_) => Status::Damaged,
            Err(e) if dir.join("summary.json").exists() => {
                damage.push(e.to_string());
                Status::Damaged
            }
            Err(_) if damage.is_empty() => Status::Interrupted,
            Err(_) => Status::Damaged,
        };
        let mut keys = BTreeMap::new();
        let value = toml::Value::try_from(&spec)
            .map_err(|e| Error::Data(format!("{}: {e}", sp.display())))?;
        flatten(&value, "", &mut keys);
        let unread = crate::schema::schema()
            .unread(&spec)
            .into_iter()
            .map(|u| u.key)
            .collect();
        Ok(Run {
            dir: dir.to_path_buf(),
            spec,
            keys,
            unread,
            status,
            columns,
            rows,
            round_shift,
            damage,
        })
    }

    /// A column as (rounds completed, value) pairs, skipping empty cells and values that are not
    /// finite (`Run::damage` names those).
    pub fn series(&self, column: &str) -> Result<(Vec<usize>, Vec<f64>)> {
        let c = self
            .columns
            .iter()
            .position(|h| h == column)
            .ok_or_else(|| {
                Error::Config(format!(
                    "{}: no column `{column}` (columns: {})",
                    self.dir.display(),
                    self.columns.join(", ")
                ))
            })?;
        let mut r = Vec::new();
        let mut v = Vec::new();
        for row in &self.rows {
            if let (Some(a), Some(b)) = (
                row.first().and_then(|s| s.parse::<usize>().ok()),
                row.get(c)
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|v| v.is_finite()),
            ) {
                r.push(a + self.round_shift);
                v.push(b);
            }
        }
        Ok((r, v))
    }

    /// Whether the run finished.
    pub fn complete(&self) -> bool {
        self.status == Status::Complete
    }
}

/// What in a `rounds.csv` does not read back whole: a last row cut mid-line (dropped here: its
/// values are not what the run wrote) and cells that are NaN or infinite.
fn damaged_rows(columns: &[String], rows: &mut Vec<Vec<String>>, whole: bool) -> Vec<String> {
    let mut out = Vec::new();
    if rows
        .last()
        .is_some_and(|r| r.len() != columns.len() || !whole)
    {
        let cut = rows.pop().unwrap_or_default();
        out.push(format!(
            "rounds.csv: its last row is cut ({} of {} fields: {:?}) and is left out",
            cut.len(),
            columns.len(),
            cut.join(",")
        ));
    }
    for (k, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            if cell.parse::<f64>().is_ok_and(|v| !v.is_finite()) {
                let name = columns.get(c).map_or("?", String::as_str);
                out.push(format!(
                    "rounds.csv row {}: {name} = {cell} (left out of figures and tables)",
                    k + 1
                ));
            }
        }
    }
    out
}

fn flatten(v: &toml::Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &p, out);
            }
        }
        toml::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        toml::Value::Float(f) => {
            out.insert(prefix.to_string(), number(*f));
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// A key's value as every label, table and figure of the analysis writes it: plain decimals from
/// 10⁻⁴ to 10⁶ (`0.0001`, `0.01`, `10`), so that the values of one sweep read alike, and
/// scientific notation outside (`1e-8`, `1e300`), never a 300-digit number.
pub fn number(f: f64) -> String {
    if f == 0.0 || (1e-4..1e6).contains(&f.abs()) || !f.is_finite() {
        format!("{f}")
    } else {
        format!("{f:e}")
    }
}

/// Keys that never distinguish configurations.
const IGNORED: [&str; 6] = [
    "run.seed",
    "run.name",
    "run.checkpoint_every",
    "run.checkpoint_minutes",
    "data.path",
    "run.backend",
];

fn ignored(key: &str) -> bool {
    IGNORED.contains(&key)
}

/// Runs grouped by configuration (every key but the seed and name), in first-seen order, each
/// with a label made of the keys that differ between groups.
pub struct Group {
    pub label: String,
    pub keys: BTreeMap<String, String>,
    /// The keys this group's runs do not read.
    pub unread: BTreeSet<String>,
    pub runs: Vec<Run>,
}

impl Group {
    /// Whether this group's runs do not read `key`.
    fn ignores(&self, key: &str) -> bool {
        self.unread.contains(key)
    }

    /// `weight_decay=0.01, nar=true` for `keys`, leaving out those the group's algorithm does
    /// not read.
    pub fn describe(&self, keys: &[String]) -> String {
        keys.iter()
            .filter(|k| !self.ignores(k))
            .map(|k| {
                format!(
                    "{}={}",
                    short(k),
                    self.keys.get(k).map(String::as_str).unwrap_or("-")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn group(runs: Vec<Run>) -> Vec<Group> {
    group_keeping(runs, "")
}

/// The key of those [`group`] leaves out (the seed, the name, …) that `key` names, in full or by
/// its last part (`seed`): a figure against it groups runs by it too.
pub fn ignored_named(key: &str) -> Option<&'static str> {
    IGNORED
        .iter()
        .copied()
        .find(|k| *k == key || short(k) == key)
}

/// [`group`], with `keep` (one of the keys it leaves out, or "") a key of the configuration.
pub fn group_keeping(runs: Vec<Run>, keep: &str) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for r in runs {
        // keys the run does not read (another algorithm's table, `data.alpha` without a
        // Dirichlet split, …) are not its configuration
        let keys: BTreeMap<String, String> = r
            .keys
            .iter()
            .filter(|(k, _)| (!ignored(k) || *k == keep) && !r.unread.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match groups.iter_mut().find(|g| g.keys == keys) {
            Some(g) => g.runs.push(r),
            None => groups.push(Group {
                label: String::new(),
                keys,
                unread: r.unread.clone(),
                runs: vec![r],
            }),
        }
    }
    let differing = differing_keys(&groups);
    // order by the differing keys' values, numerically where they are numbers
    groups.sort_by(|a, b| {
        for k in &differing {
            let (x, y) = (a.keys.get(k), b.keys.get(k));
            let o = match (
                x.and_then(|v| v.parse::<f64>().ok()),
                y.and_then(|v| v.parse::<f64>().ok()),
            ) {
                (Some(p), Some(q)) => p.total_cmp(&q),
                _ => x.cmp(&y),
            };
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    for g in &mut groups {
        g.label = if differing.is_empty() {
            // the algorithm, and NAR when it is on (the FedNAR variant of that algorithm)
            let alg = g.keys.get("fl.algorithm").cloned().unwrap_or_default();
            match g.keys.get("local.nar").map(String::as_str) {
                Some("true") => format!("{alg} + NAR"),
                _ => alg,
            }
        } else {
            g.describe(&differing)
        };
    }
    groups
}

/// Keys whose values differ between groups, the common tables' first. A key of an algorithm's
/// table is compared only between the groups whose algorithm reads it.
pub fn differing_keys(groups: &[Group]) -> Vec<String> {
    let all: std::collections::BTreeSet<(bool, &String)> = groups
        .iter()
        .flat_map(|g| g.keys.keys())
        .map(|k| (is_algorithm_table(table(k)), k))
        .collect();
    all.into_iter()
        .map(|(_, k)| k)
        .filter(|k| {
            let mut vals = groups
                .iter()
                .filter(|g| !g.ignores(k))
                .map(|g| g.keys.get(*k));
            let first = vals.next();
            vals.any(|v| Some(v) != first)
        })
        .cloned()
        .collect()
}

/// `local.weight_decay` → `local`.
fn table(key: &str) -> &str {
    key.split('.').next().unwrap_or(key)
}

/// `local.weight_decay` → `weight_decay`.
pub fn short(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// Resolve a key given in full or by its last part (`weight_decay`).
pub fn resolve_key(groups: &[Group], key: &str) -> Result<String> {
    let Some(g) = groups.first() else {
        return Err(Error::Config("no runs".into()));
    };
    if g.keys.contains_key(key) {
        return Ok(key.to_string());
    }
    let m: Vec<&String> = g.keys.keys().filter(|k| short(k) == key).collect();
    match m.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(Error::Config(format!(
            "unknown or ambiguous spec key `{key}` for --x"
        ))),
    }
}

/// Why `paths` hold no run: no run folder in them, and for a file (a run's `rounds.csv`, a
/// sweep's `sweep.csv`) that runs are read from folders, with the folder that holds it.
fn no_runs(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut why = format!("no run folders (with spec.toml) in: {}", names.join(", "));
    if let Some(f) = paths.iter().find(|p| p.is_file()) {
        let dir = f.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.map_or(".".into(), |d| d.display().to_string());
        why.push_str(&format!(
            "; {} is a file: runs are read from their folders (each with spec.toml and rounds.csv) or from a folder of them, such as {dir}",
            f.display()
        ));
    }
    why
}

/// The runs named on the command line: a folder with `spec.toml` is a run; any other folder
/// contributes the run folders inside it (sorted by name). What is neither (a sweep's `.log`
/// files and `sweep.csv`, which a shell glob over a sweep folder brings along, or a folder
/// without runs) is skipped and named in one note. No run at all is an error.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<Run>> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        if p.join("spec.toml").exists() {
            out.push(Run::load(p)?);
            continue;
        }
        if !p.is_dir() {
            if !p.exists() {
                return Err(Error::Data(format!(
                    "{}: no such file or folder",
                    p.display()
                )));
            }
            skipped.push(p.display().to_string());
            continue;
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| Error::io(format!("cannot read {}", p.display()), e))?
            .flatten()
            .map(|e| e.path())
            .filter(|q| q.join("spec.toml").exists())
            .collect();
        subs.sort();
        if subs.is_empty() {
            skipped.push(format!("{} (no run folders inside)", p.display()));
        }
        for s in subs {
            out.push(Run::load(&s)?);
        }
    }
    if out.is_empty() {
        return Err(Error::Data(no_runs(paths)));
    }
    if !skipped.is_empty() {
        eprintln!(
            "note: skipped {} path(s) that are not runs: {}",
            skipped.len(),
            skipped.join(", ")
        );
    }
    for r in &out {
        if !r.complete() {
            eprintln!(
                "warning: {} is {} (not complete)",
                r.dir.display(),
                r.status
            );
        }
        for d in &r.damage {
            eprintln!("warning: {}: {d}", r.dir.display());
        }
    }
    Ok(out)
}
