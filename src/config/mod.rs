//! The experiment spec: one TOML file with the sections `[data]`, `[model]`, `[fl]`, `[local]`
//! and `[run]`, and the tables that other parts of fedrun own (`[fedprox]`, …), which the spec
//! keeps as data. Every key has a default (the FedNAR CIFAR-10 scripts'), so the resolved spec
//! printed by `fedrun check` names every knob of a run. This module knows no algorithm, model
//! or data set: which tables exist, which algorithm names are valid, and the checks that need
//! a model's or an algorithm's knowledge come in through a [`Schema`].
//!
//! | file | what |
//! |---|---|
//! | `sections.rs` | the five sections: every key, its default, its meaning; closed sets as enums |
//! | `spec.rs` | the [`Spec`]: the sections and the resolved tables, printed and compared |
//! | `load.rs` | loading a spec: parse, `--set`, resolve the tables, validate |
//! | `extends.rs` | a spec file that extends another (`extends = "PATH"`), resolved into one |
//! | `tables.rs` | key tables owned elsewhere ([`Keys`], [`key_table!`]) |
//! | `schema.rs` | the [`Schema`]: the tables, algorithm names, checks and read rules given from outside |
//! | `unread.rs` | keys a run does not read ([`Unread`]), named by the schema's rules |
//! | `choice.rs` | closed sets of names as enums ([`choice!`]) |
//! | `keys.rs` | key-level checks: unknown keys with "did you mean", types, `--set` |
//! | `validate.rs` | value checks, and the check functions key tables name |

mod choice;
pub mod extends;
mod keys;
mod load;
mod schema;
mod sections;
mod spec;
mod tables;
mod unread;
pub mod validate;

pub use choice::unknown_value;
pub use schema::{Alias, Schema};
pub use sections::{
    Aggregation, Augmentation, Backend, COHORT_AUTO, Cifar100Labels, DataSpec, Dataset, Deal,
    DirichletVariant, FlSpec, GraphChoice, Head, Init, KernelChoice, LocalSpec, LrSchedule,
    ModelKind, ModelSpec, Partition, RunSpec, ShardCut, UplinkScope,
};
pub use spec::{QUICKSTART, Spec};
pub use tables::{KeyTable, Keys, table};
pub use unread::{Unread, set_keys};
