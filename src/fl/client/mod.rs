//! Local training of one client, from its [`ClientPlan`](super::plan::ClientPlan): exactly K
//! steps (or E epochs) of mini-batches from a shuffled pass over the client's data, reshuffled
//! when it runs out; the last batch of a pass may be short. One model object and three flat
//! buffers (x, g, and the starting model's gradient g_anchor that Mime's correction reads) are
//! reused for every client.
//!
//! Each step runs on the host (parameters written to the device, the gradient read back, the
//! chain over flat vectors: fastest on the CPU) or, with the device-resident step
//! (`run.local_step`), stays on the training device (fewest transfers on a GPU).
//!
//! | file | what |
//! |---|---|
//! | `trainer.rs` | the [`Trainer`]: a client's training from its plan |
//! | `batches.rs` | the shuffled stream of a client's batches |
//! | `chain.rs` | the local optimizer: term, clip and decay (baseline or FedNAR order), the plan's rule |
//! | `device.rs` | the device-resident step |
//! | `deferred.rs` | a device-resident training's per-step numbers, read once at its end; the count of reads |
//! | `cohort.rs` | the cohort step: several clients' steps as one computation (`run.cohort`) |
//! | `cohort_batches.rs` | a cohort's batches at a step, each client's from its own stream, grouped by size |
//! | `cohort_loss.rs` | a cohort's per-client objectives: the cross-entropy, or a plan's local loss on its client's slice of the stacked outputs |
//! | `cohort_device.rs` | the cohort step with its parameters on the training device (`run.local_step`) |

mod batches;
mod chain;
mod cohort;
mod cohort_batches;
mod cohort_device;
mod cohort_loss;
pub mod deferred;
mod device;
mod trainer;

pub use chain::{ClipDecay, DeviceChain, HostChain};
pub use cohort::{Cohort, why_not as cohort_why_not};
pub use trainer::{LocalStats, Trainer, Work, local_steps};
