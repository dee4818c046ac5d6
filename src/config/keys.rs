//! Key-level checks of a spec table against its layout (every key a spec may hold, with its
//! default): unknown keys (with a suggestion), types, and `--set`.

use crate::error::{Error, Result};

/// Parse TOML text into a table and check every key and type against `schema`, the layout.
pub fn parse_spec_str(text: &str, origin: &str, schema: &toml::Table) -> Result<toml::Table> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let pos = e
            .span()
            .map(|s| {
                let (line, col) = line_col(text, s.start);
                format!(" at line {line}, column {col}")
            })
            .unwrap_or_default();
        Error::Config(format!("{origin}: malformed TOML{pos}: {}", e.message()))
    })?;
    check_table(&table, schema, "", origin)?;
    Ok(table)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

fn check_table(t: &toml::Table, schema: &toml::Table, prefix: &str, origin: &str) -> Result<()> {
    for (k, v) in t {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let Some(expected) = schema.get(k) else {
            return Err(unknown_key(&path, k, schema, prefix, origin));
        };
        check_value(v, expected, &path, origin)?;
    }
    Ok(())
}

/// The count keys that must be at least 1 (the others at least 0).
pub const AT_LEAST_ONE: &[&str] = &[
    "run.cohort",
    "data.num_clients",
    "data.shards_per_client",
    "model.layers",
    "model.heads",
    "fl.rounds",
    "fl.clients_per_round",
    "fl.eval_every",
    "fl.eval_batch_size",
    "local.steps",
    "local.batch_size",
];

/// What a count key accepts, for its errors: the same words for a 0 and for a negative value
/// (`run.cohort` also takes `"auto"`).
pub fn count_rule(key: &str) -> String {
    let least = if AT_LEAST_ONE.contains(&key) { 1 } else { 0 };
    let auto = if key == "run.cohort" {
        ", or \"auto\""
    } else {
        ""
    };
    format!("key `{key}` must be a whole number >= {least}{auto}")
}

/// The integer keys that also take the string `"auto"`.
const AUTO_KEYS: &[&str] = &["run.cohort"];

fn check_value(v: &toml::Value, expected: &toml::Value, path: &str, origin: &str) -> Result<()> {
    use toml::Value as V;
    match (v, expected) {
        (V::Table(t), V::Table(s)) => check_table(t, s, path, origin),
        (V::String(s), V::Integer(_)) if s == "auto" && AUTO_KEYS.contains(&path) => Ok(()),
        (V::Integer(_), V::Float(_)) => Ok(()),
        // integers are counts and sizes, never negative, except where the default is (a
        // sentinel such as `run.init_seed = -1`, whose own check says what it accepts)
        (V::Integer(i), V::Integer(d)) if *i < 0 && *d >= 0 => Err(Error::Config(format!(
            "{origin}: {}, got {i}",
            count_rule(path)
        ))),
        // lists hold counts (`local.lr_milestones`): never negative either
        (V::Array(items), V::Array(_)) => {
            match items.iter().filter_map(V::as_integer).find(|&i| i < 0) {
                Some(i) => Err(Error::Config(format!(
                    "{origin}: key `{path}` must hold non-negative integers, got {i} in {v}"
                ))),
                None => Ok(()),
            }
        }
        (a, b) if std::mem::discriminant(a) == std::mem::discriminant(b) => Ok(()),
        // `--set local.lr=1e400`: a number TOML cannot hold arrives as a string
        (V::String(t), V::Float(_)) if t.parse::<f64>().is_ok_and(f64::is_infinite) => {
            Err(Error::Config(format!(
                "{origin}: key `{path}` = {t} is outside the range of a 64-bit float (at most about 1.8e308)"
            )))
        }
        (a, b) => Err(Error::Config(format!(
            "{origin}: key `{path}` expects {}{}, got {} ({a})",
            type_name(b),
            match AUTO_KEYS.contains(&path) {
                true => " or \"auto\"",
                false => "",
            },
            type_name(a)
        ))),
    }
}

/// Keys that moved into their algorithm's own table.
const MOVED: &[(&str, &str)] = &[
    ("fl.prox_mu", "fedprox.mu"),
    ("fl.server_momentum", "fedavgm.momentum"),
    ("fl.adam_beta1", "fedadam.beta1"),
    ("fl.adam_beta2", "fedadam.beta2"),
    ("fl.adam_eps", "fedadam.eps"),
    ("fl.adam_variant", "fedadam.variant"),
    ("fl.fedexp_eps", "fedexp.eps"),
    ("fl.fedexp_eps_form", "fedexp.eps_form"),
    ("fl.fedexp_eval_avg", "fedexp.eval_avg"),
];

/// Keys that no longer exist, and why.
const RETIRED: &[(&str, &str)] = &[(
    "run.local_step",
    "every local step runs on the training device, one step engine on every backend (flex included); remove the key",
)];

fn unknown_key(path: &str, key: &str, schema: &toml::Table, prefix: &str, origin: &str) -> Error {
    if let Some((_, new)) = MOVED.iter().find(|(old, _)| *old == path) {
        return Error::Config(format!(
            "{origin}: key `{path}` has moved to its algorithm's table: `{new}`"
        ));
    }
    if let Some((_, why)) = RETIRED.iter().find(|(old, _)| *old == path) {
        return Error::Config(format!("{origin}: key `{path}` was retired: {why}"));
    }
    // in sorted order, so that ties and the list do not depend on the declaration order
    let mut valid: Vec<&String> = schema.keys().collect();
    valid.sort();
    let best = valid
        .iter()
        .map(|c| (strsim::levenshtein(key, c), *c))
        .min_by_key(|(d, _)| *d);
    let section = if prefix.is_empty() {
        "the top level".to_string()
    } else {
        format!("[{prefix}]")
    };
    let mut msg = format!("{origin}: unknown key `{path}` in {section}");
    let nested = nested_homes(key, schema, prefix);
    if key == "extends" && !prefix.is_empty() {
        // TOML puts a key after a table header into that table
        msg.push_str("; `extends` belongs at the top of the file, before the first [table]");
    } else if !nested.is_empty() {
        msg.push_str(&format!("; did you mean `{}`?", nested.join("` or `")));
    } else if let Some((d, c)) = best
        && d <= 3.max(key.len() / 3)
    {
        let full = if prefix.is_empty() {
            c.clone()
        } else {
            format!("{prefix}.{c}")
        };
        msg.push_str(&format!("; did you mean `{full}`?"));
    }
    let valid: Vec<&str> = valid.iter().map(|s| s.as_str()).collect();
    msg.push_str(&format!(" (valid keys: {})", valid.join(", ")));
    Error::Config(msg)
}

/// The full names of the keys called `key` one table below `schema` (whose path is `prefix`),
/// in sorted order: where a key given without its table lives (`weight_decay` →
/// `local.weight_decay`).
fn nested_homes(key: &str, schema: &toml::Table, prefix: &str) -> Vec<String> {
    let mut homes: Vec<String> = schema
        .iter()
        .filter(|(_, v)| v.as_table().is_some_and(|t| t.contains_key(key)))
        .map(|(t, _)| match prefix {
            "" => format!("{t}.{key}"),
            p => format!("{p}.{t}.{key}"),
        })
        .collect();
    homes.sort();
    homes
}

/// Apply one `--set key.path=value`. The value is read as a TOML value; a bare word that is
/// not valid TOML is taken as a string (`--set run.name=foo`).
pub fn apply_override(
    table: &mut toml::Table,
    assignment: &str,
    schema: &toml::Table,
) -> Result<()> {
    let origin = format!("--set {assignment}");
    let Some((key, raw)) = assignment.split_once('=') else {
        return Err(Error::Config(format!(
            "{origin}: expected key=value, e.g. --set local.weight_decay=0.05"
        )));
    };
    let key = key.trim();
    let raw = raw.trim();
    let value = match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").expect("v"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    // Check against the schema by building a one-key table.
    let mut probe = value.clone();
    for p in parts.iter().rev() {
        let mut t = toml::Table::new();
        t.insert((*p).to_string(), probe);
        probe = toml::Value::Table(t);
    }
    let probe_table = match probe {
        toml::Value::Table(t) => t,
        _ => unreachable!(),
    };
    check_table(&probe_table, schema, "", &origin)?;
    let mut cur = table;
    for p in &parts[..parts.len() - 1] {
        let entry = cur
            .entry((*p).to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => return Err(Error::Config(format!("{origin}: `{p}` is not a section"))),
        };
    }
    cur.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

/// Collect the dotted keys whose values differ.
pub fn diff(a: &toml::Value, b: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    match (a, b) {
        (toml::Value::Table(ta), toml::Value::Table(tb)) => {
            for (k, va) in ta {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match tb.get(k) {
                    Some(vb) => diff(va, vb, &p, out),
                    None => out.push(p),
                }
            }
        }
        _ => {
            if a != b {
                out.push(prefix.to_string());
            }
        }
    }
}
