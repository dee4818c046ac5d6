//! The experiment spec: the five sections, and the tables that other parts of fedrun own
//! (`[fedprox]`, `[fedacg]`, …), kept as data (loaded in `load.rs`).

use serde::{Deserialize, Serialize};

use super::keys::diff;
use super::sections::{DataSpec, FlSpec, LocalSpec, ModelSpec, RunSpec};
use super::tables::Keys;
use crate::error::{Error, Result};

/// The spec. Unknown keys are refused by the key check in `keys.rs` (serde's
/// `deny_unknown_fields` does not combine with `flatten`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spec {
    pub data: DataSpec,
    pub model: ModelSpec,
    pub fl: FlSpec,
    pub local: LocalSpec,
    pub run: RunSpec,
    /// The schema's tables, resolved (every key, defaults filled in), in the schema's order;
    /// each is parsed by its owner with [`Spec::keys`].
    #[serde(flatten)]
    pub tables: toml::Table,
}

/// The quickstart spec, run when no --config is given.
pub const QUICKSTART: &str = include_str!("../../configs/quickstart.toml");

impl Spec {
    /// The keys of table `K`, parsed (the defaults where the spec has no such table).
    pub fn keys<K: Keys>(&self) -> Result<K> {
        match self.tables.get(K::TABLE) {
            Some(v) => v.clone().try_into().map_err(|e: toml::de::Error| {
                Error::Config(format!("[{}]: {}", K::TABLE, e.message()))
            }),
            None => Ok(K::default()),
        }
    }

    /// The resolved spec, every key included, as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("spec serialises")
    }

    /// A resolved spec as `spec.toml` holds it (every key written), read without the schema:
    /// a key missing from the text takes the section's default, and the tables are taken as
    /// they are. (`schema::parse` reads the same text with every check and default.)
    pub fn from_resolved(text: &str, origin: &str) -> Result<Spec> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            Error::Config(format!("{origin}: not a resolved spec ({})", e.message()))
        })
    }

    /// Keys whose values differ between two specs (for resume checks), in sorted order.
    pub fn diff_keys(&self, other: &Spec) -> Vec<String> {
        let a = toml::Value::try_from(self).expect("spec");
        let b = toml::Value::try_from(other).expect("spec");
        let mut out = Vec::new();
        diff(&a, &b, "", &mut out);
        out.sort();
        out
    }
}
