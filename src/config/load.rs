//! Loading a spec: parse the TOML, check every key and type, apply `--set`, resolve the
//! schema's tables, parse the sections, and check the values. Loading is strict: an unknown key
//! (with a "did you mean"), a value of the wrong type, or a value out of range is an error that
//! names the key path and what is expected.

use std::path::Path;

use super::keys::{apply_override, parse_spec_str};
use super::schema::Schema;
use super::spec::Spec;
use super::tables::deserialize;
use super::unread::set_keys;
use super::validate::validate;
use crate::error::{Error, Result};

impl Spec {
    /// Load a spec file, apply `--set` overrides, and validate against `schema`.
    pub fn load(path: &Path, overrides: &[String], schema: &Schema) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read config {}", path.display()), e))?;
        super::extends::not_empty(&text, path)?;
        Self::parse(&text, &path.display().to_string(), overrides, schema)
    }

    /// Parse spec text (`origin` names it in errors), apply overrides, validate.
    pub fn parse(text: &str, origin: &str, overrides: &[String], schema: &Schema) -> Result<Spec> {
        let layout = layout(schema);
        let mut table = parse_spec_str(text, origin, &layout)?;
        for o in overrides {
            apply_override(&mut table, o, &layout)?;
        }
        resolve_alias(&mut table, schema)?;
        model_defaults(&mut table);
        let mut tables = toml::Table::new();
        for t in &schema.tables {
            let given = match table.remove(t.name()) {
                Some(toml::Value::Table(given)) => given,
                _ => toml::Table::new(),
            };
            tables.insert(
                t.name().to_string(),
                toml::Value::Table(t.resolve(given, origin)?),
            );
        }
        let mut spec: Spec = deserialize(toml::Value::Table(table), "", origin)?;
        spec.tables = tables;
        validate(&spec, schema)?;
        Ok(spec)
    }
}

impl Spec {
    /// A user's spec (a config file or the quickstart, and `--set`): parsed as [`Spec::parse`]
    /// does, then a `--set` of a key the run will not read is an error that says why, and each
    /// key the file sets that the run will not read gives a warning line (returned).
    pub fn parse_user(
        text: &str,
        origin: &str,
        overrides: &[String],
        schema: &Schema,
    ) -> Result<(Spec, Vec<String>)> {
        let spec = Self::parse(text, origin, overrides, schema)?;
        let unread = schema.unread(&spec);
        let find = |key: &str| unread.iter().find(|u| u.key == key);
        let refused: Vec<String> = overrides
            .iter()
            .filter_map(|o| {
                let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k.trim());
                find(key).map(|u| format!("--set {o}: `{key}` is not read {}", u.why))
            })
            .collect();
        if !refused.is_empty() {
            return Err(Error::Config(refused.join("\n")));
        }
        // a key the file sets to its default is not worth a warning: the run is the same
        // whether the key is read or not (a run folder's own `spec.toml`, which writes every
        // key, given back as `--config`; a shared config's defaults)
        let file: toml::Table = text.parse().unwrap_or_default();
        let defaults = toml::Value::try_from(Self::parse("", origin, &[], schema)?)
            .map_err(|e| Error::Config(format!("the default spec: {e}")))?;
        let file = toml::Value::Table(file);
        let warnings = set_keys(file.as_table().expect("a table"))
            .iter()
            .filter(|k| value_at(&file, k) != value_at(&defaults, k))
            .filter_map(|k| find(k).map(|u| format!("{origin}: `{k}` is not read {}", u.why)))
            .collect();
        Ok((spec, warnings))
    }
}

/// Keys whose defaults (the FedNAR CIFAR-10 scripts') change the local update, where another
/// tool's default would leave it plain: weight decay, clipping, a decaying rate.
const SHAPING: [&str; 3] = ["local.weight_decay", "local.max_norm", "local.lr_decay"];

impl Spec {
    /// A line naming the keys of [`SHAPING`] that a user's file and `--set` leave at fedrun's
    /// defaults while the run reads them, with their values (None when there are none), so that a
    /// user's own config does not take FedNAR's settings without a word.
    pub fn defaults_taken(
        &self,
        text: &str,
        overrides: &[String],
        schema: &Schema,
    ) -> Option<String> {
        let file: toml::Value = text.parse::<toml::Table>().ok().map(toml::Value::Table)?;
        let resolved = toml::Value::try_from(self).ok()?;
        let unread = schema.unread(self);
        let set = |k: &str| {
            value_at(&file, k).is_some()
                || overrides
                    .iter()
                    .any(|o| o.split_once('=').is_some_and(|(a, _)| a.trim() == k))
        };
        let taken: Vec<String> = SHAPING
            .iter()
            .filter(|k| !set(k) && !unread.iter().any(|u| u.key == **k))
            .filter_map(|k| value_at(&resolved, k).map(|v| format!("{k} = {v}")))
            .collect();
        (!taken.is_empty()).then(|| {
            format!(
                "the local update takes fedrun's defaults (the FedNAR CIFAR-10 scripts') for {}; set them in the spec to choose",
                taken.join(", ")
            )
        })
    }
}

/// The value at dotted path `key` (`local.steps`) of `v`.
fn value_at<'a>(v: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(v, |v, k| v.get(k))
}

/// The `[model]` keys the spec leaves unset whose default is its model's own
/// (`ModelKind::own_defaults`); an unknown kind is left for the parse to name.
fn model_defaults(table: &mut toml::Table) {
    let Some(model) = table.get_mut("model").and_then(|m| m.as_table_mut()) else {
        return;
    };
    let kind = model
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or_default();
    let Some(kind) = super::ModelKind::from_name(kind) else {
        return;
    };
    for &(key, value) in kind.own_defaults() {
        model
            .entry(key)
            .or_insert_with(|| toml::Value::Float(value));
    }
}

/// Replace an alias in `fl.algorithm` by its algorithm and set the keys it stands for; a key the
/// spec sets otherwise is an error.
fn resolve_alias(table: &mut toml::Table, schema: &Schema) -> Result<()> {
    let name = table
        .get("fl")
        .and_then(|f| f.get("algorithm"))
        .and_then(|a| a.as_str())
        .unwrap_or_default()
        .to_string();
    let Some(alias) = schema.aliases.iter().find(|a| a.name == name) else {
        return Ok(());
    };
    for (key, value) in alias.sets {
        let value: toml::Value = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .ok_or_else(|| Error::Config(format!("alias {name}: bad value {value}")))?;
        let (section, k) = key.split_once('.').unwrap_or(("", key));
        let t = table
            .entry(section.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(t) = t.as_table_mut() else { continue };
        match t.get(k) {
            Some(v) if *v != value => {
                return Err(Error::Config(format!(
                    "fl.algorithm = \"{name}\" is `{}` with `{key} = {value}`, but the spec sets `{key} = {v}`",
                    alias.algorithm
                )));
            }
            _ => {
                t.insert(k.to_string(), value);
            }
        }
    }
    if let Some(fl) = table.get_mut("fl").and_then(|f| f.as_table_mut()) {
        fl.insert(
            "algorithm".into(),
            toml::Value::String(alias.algorithm.into()),
        );
    }
    Ok(())
}

/// Every key a spec may hold, with its default: the sections' and the schema's tables'.
fn layout(schema: &Schema) -> toml::Table {
    let mut t = match toml::Value::try_from(Spec::default()) {
        Ok(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    for k in &schema.tables {
        t.insert(k.name().to_string(), toml::Value::Table(k.defaults()));
    }
    t
}
