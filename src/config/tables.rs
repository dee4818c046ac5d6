//! Tables of keys that other parts of fedrun own (an algorithm's `[fedprox]`). The spec keeps
//! each table as data; its owner parses it into its own type ([`Keys`], usually declared with
//! [`key_table!`]).

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::choice::is_unknown_value;
use crate::error::{Error, Result};

/// A table's keys as a type: the table's name, its defaults (`Default`) and its value checks.
pub trait Keys: Serialize + DeserializeOwned + Default + Send + Sync + 'static {
    /// The table's name in the spec (`fedprox` for `[fedprox]`).
    const TABLE: &'static str;
    /// Check the values (the types were checked by parsing), naming the key at fault.
    fn validate(&self) -> Result<()>;
}

/// A table as the spec sees it, without its type.
pub trait KeyTable: Sync {
    fn name(&self) -> &'static str;
    /// Every key at its default, in declaration order.
    fn defaults(&self) -> toml::Table;
    /// The table with the keys `given` sets (already checked for names and types against
    /// [`KeyTable::defaults`]): parsed, its values checked, and every key present, in
    /// declaration order. `origin` names the spec in errors.
    fn resolve(&self, given: toml::Table, origin: &str) -> Result<toml::Table>;
}

struct Table<K>(PhantomData<fn() -> K>);

fn to_table<T: Serialize>(v: &T, what: &str) -> Result<toml::Table> {
    match toml::Value::try_from(v) {
        Ok(toml::Value::Table(t)) => Ok(t),
        Ok(_) => Err(Error::Config(format!("{what} is not a table"))),
        Err(e) => Err(Error::Config(format!("{what}: {e}"))),
    }
}

impl<K: Keys> KeyTable for Table<K> {
    fn name(&self) -> &'static str {
        K::TABLE
    }

    fn defaults(&self) -> toml::Table {
        to_table(&K::default(), K::TABLE).unwrap_or_default()
    }

    fn resolve(&self, given: toml::Table, origin: &str) -> Result<toml::Table> {
        let keys: K = deserialize(toml::Value::Table(given), &format!("{}.", K::TABLE), origin)?;
        keys.validate()?;
        to_table(&keys, K::TABLE)
    }
}

/// The table of `K`, as the schema lists it.
pub const fn table<K: Keys>() -> &'static dyn KeyTable {
    <K as Erased>::TABLE
}

trait Erased {
    const TABLE: &'static dyn KeyTable;
}

impl<K: Keys> Erased for K {
    const TABLE: &'static dyn KeyTable = &Table::<K>(PhantomData);
}

/// Deserialise `value`, naming the key at fault: a value outside a closed set as
/// ``key `<prefix><path>`: …``, anything else as `<origin>: …`.
pub(crate) fn deserialize<T: DeserializeOwned>(
    value: toml::Value,
    prefix: &str,
    origin: &str,
) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().message().to_string();
        if is_unknown_value(&message) {
            let key = format!("{prefix}{path}");
            Error::Config(format!("key `{key}`: {message}{}", hint(&key)))
        } else {
            Error::Config(format!("{origin}: {message}"))
        }
    })
}

/// What a user who wrote an unknown value for `key` most likely wants to know.
fn hint(key: &str) -> &'static str {
    match key {
        "run.backend" => {
            " (the GPU backends: `vulkan` or `wgpu` for any GPU with a Vulkan driver, `cuda` for NVIDIA GPUs; `cargo build --release --features gpu` builds them all, README, Backends)"
        }
        _ => "",
    }
}

/// A table of keys: the struct, its `Default`, its [`Keys`] impl and the constant `KEYS` (the
/// table as the registry names it; one table per module) in one declaration. Each
/// field has its default and, after `=>`, the checks of its value (functions of the key's
/// dotted name and the value, from `config::validate`):
///
/// ```ignore
/// key_table! {
///     /// `[fedprox]`
///     pub struct Keys in "fedprox" {
///         /// μ: `½μ‖x − x_global‖²` joins the local loss.
///         pub mu: f64 = 0.001 => non_negative;
///     }
/// }
/// ```
#[macro_export]
macro_rules! key_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident in $table:literal {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident: $ty:ty = $default:expr $(=> $($check:path),+)?;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $( $field: $default, )*
                }
            }
        }

        /// This table, as the algorithm registry names it.
        pub const KEYS: &'static dyn $crate::config::KeyTable = $crate::config::table::<$name>();

        impl $crate::config::Keys for $name {
            const TABLE: &'static str = $table;

            fn validate(&self) -> $crate::error::Result<()> {
                $( $( $( $check(concat!($table, ".", stringify!($field)), self.$field)?; )+ )? )*
                Ok(())
            }
        }
    };
}
