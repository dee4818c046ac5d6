//! Loading a spec: parse the TOML, check every key and type, apply `--set`, resolve the
//! schema's tables, parse the sections, and check the values. Loading is strict: an unknown key
//! (with a "did you mean"), a value of the wrong type, or a value out of range is an error that
//! names the key path and what is expected.

use std::path::Path;

use super::keys::{apply_override, parse_spec_str};
use super::schema::Schema;
use super::spec::Spec;
use super::tables::deserialize;
use super::validate::validate;
use crate::error::{Error, Result};

impl Spec {
    /// Load a spec file, apply `--set` overrides, and validate against `schema`.
    pub fn load(path: &Path, overrides: &[String], schema: &Schema) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read config {}", path.display()), e))?;
        Self::parse(&text, &path.display().to_string(), overrides, schema)
    }

    /// Parse spec text (`origin` names it in errors), apply overrides, validate.
    pub fn parse(text: &str, origin: &str, overrides: &[String], schema: &Schema) -> Result<Spec> {
        let layout = layout(schema);
        let mut table = parse_spec_str(text, origin, &layout)?;
        for o in overrides {
            apply_override(&mut table, o, &layout)?;
        }
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
