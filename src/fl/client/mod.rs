//! Local training, one path for one client and for a cohort: a [`Trainer`] trains the clients
//! it is given, one (`run.cohort = 1`) or up to K of a round (`run.cohort = K`), as one
//! computation on the model's K copies. Each client runs exactly its steps (or E epochs) of
//! mini-batches from a shuffled pass over its data, reshuffled when it runs out (the last batch
//! of a pass may be short), from its [`ClientPlan`](super::plan::ClientPlan): its objective,
//! the frozen models it reads, its chain (term, clip and decay, rule).
//!
//! The steps run on the training device, on every backend (flex included): the parameters stay
//! there as rows, one per client, and no step reads anything back.
//!
//! | file | what |
//! |---|---|
//! | `trainer.rs` | the [`Trainer`]: a training's objectives, chain and steps; the full-data gradient |
//! | `resident.rs` | the steps, with the parameters on the training device as rows |
//! | `feed.rs` | a device training's batches and dropout seeds drawn before its first step, as tables on the device read at the step index |
//! | `captured.rs` | the full steps of a device training as one captured graph, replayed (`run.graph`) |
//! | `work.rs` | what a client is asked to do ([`Work`]) and what it reports besides Δ ([`LocalStats`]) |
//! | `objectives.rs` | each client's objective on its slice of the outputs, the frozen models it reads |
//! | `draw.rs` | the clients' batches at a step, each from its own stream, grouped by size; their contexts at a window of steps |
//! | `batches.rs` | the shuffled stream of a client's batches |
//! | `chain.rs` | the local optimizer: term, clip and decay (baseline or FedNAR order), the plan's rule |
//! | `deferred.rs` | a training's per-step numbers, read once at its end; the count of reads |

mod batches;
mod captured;
mod chain;
pub mod deferred;
mod draw;
mod feed;
mod objectives;
mod resident;
mod trainer;
mod work;

pub use crate::kernels::capture::{captures, hardware_graphs};
pub use captured::{eager_steps, full_steps};
pub use chain::{ClipDecay, DeviceChain, StepPlan};
pub use deferred::DeviceFailed;
pub use trainer::Trainer;
pub use work::{LocalStats, Work, local_steps, step_masks};
