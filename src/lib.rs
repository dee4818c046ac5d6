//! fedrun: federated-learning experiments on burn. `docs/ARCHITECTURE.md` gives the data flow
//! from the spec to the CSV; each module's header says what it owns.

pub mod analysis;
pub mod cli;
pub mod config;
pub mod data;
pub mod error;
pub mod fl;
pub mod io;
pub mod kernels;
pub mod metrics;
pub mod model;
pub mod optim;
pub mod rng;
pub mod schema;
pub mod sweep;
