//! fedrun: federated-learning experiments on burn. See docs/ARCHITECTURE.md.

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
