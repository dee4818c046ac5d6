//! The round engine. It knows nothing about any particular algorithm: it samples clients,
//! runs the local loop, aggregates, calls the algorithm's hooks, evaluates, and writes the
//! outputs and checkpoints. Every random stream is derived from (seed, round, client), so a
//! resumed run replays exactly what the uninterrupted one would have done.
//!
//! | file | concern |
//! |---|---|
//! | `options.rs` | run options, devices, model shape, client workers |
//! | `experiment.rs` | what is built before the first round; one round of it |
//! | `local_trainer.rs` | local training as the round sees it ([`LocalTrainer`]) |
//! | `workers.rs` | its implementation: the burn trainers, worker pool and cohort |
//! | `round.rs` | one round: sample, train, aggregate, server update, count the traffic |
//! | `membership.rs` | the clients in the federation: all, or a dynamic active set |
//! | `checkpoint.rs` | the checkpoint format |
//! | `run_dir.rs` | the run folder: finished or resumable, spec check, checkpoints, summary |
//! | `lock.rs` | one writer per run folder: an OS lock held for the life of the run |
//! | `resources.rs` | the sizes a spec implies, checked against memory before allocation |
//! | `run.rs` | the outer loop: rounds, evaluation, CSV, divergence, progress |

pub mod checkpoint;
mod experiment;
#[cfg(any(
    feature = "wgpu",
    feature = "vulkan",
    feature = "cuda",
    feature = "kernel-cache"
))]
mod gpu;
pub mod kernel_cache;
pub mod launches;
mod local_trainer;
mod lock;
pub mod membership;
pub mod memory_limit;
mod options;
pub mod resources;
mod round;
mod run;
mod run_dir;
mod workers;

pub use experiment::{Experiment, RoundMark};
#[cfg(feature = "autotune")]
pub use gpu::tune_cache_dir;
pub use local_trainer::LocalTrainer;
pub use lock::RunLock;
pub use options::{
    RunOptions, check_backend, client_workers, compiled_backends, devices, devices_for, graph_line,
    precision, shape_of,
};
pub use round::{RoundConfig, RoundStats, Stop, run_round, sample_clients};
pub use run::{run, stopped_message};
pub use workers::BurnClients;
