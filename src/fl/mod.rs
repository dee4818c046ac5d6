//! Federated learning: the round engine, the local (client) training loop, the local optimizer
//! chain with the FedNAR plug-in, and one file per algorithm.

pub mod algorithm;
pub mod algorithms;
pub mod client;
pub mod engine;
pub mod losses;
pub mod per_client;
pub mod resident;
pub mod schedule;
pub mod step;
