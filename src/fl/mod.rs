//! Federated learning: the round engine, the two sides of an algorithm (the server's
//! [`Strategy`](strategy::Strategy) and the client's [`ClientPlan`](plan::ClientPlan)), local
//! training, and one file per algorithm.
//!
//! | file | what |
//! |---|---|
//! | `strategy.rs` | the server's side: the hooks of a round, `Setup`, the round's facts |
//! | `server.rs` | the server step as a chain of links, the aggregate and the server's log |
//! | `state.rs` | what an algorithm keeps between rounds, declared once |
//! | `plan.rs` | the client's side as values: the plan, the loss input, the typed uplink |
//! | `term.rs` | an algorithm's term in the local gradient, on the host and on the device |
//! | `client/` | local training from a plan: batches, the local chain, host and device steps |
//! | `engine/` | the round loop, the run folder, checkpoints |
//! | `algorithms/` | one file per algorithm, and the registry |
//! | `acg.rs` | ACG, the lookahead broadcast and server momentum, around another algorithm |
//! | `unread.rs` | which `[local]` keys and algorithm tables a spec's run leaves unread, and why |
//! | `losses.rs` | the local objectives' terms as tensor ops |
//! | `per_client/` | model-sized vectors kept per client, in memory or spilled to a slot file |
//! | `schedule.rs` | the local learning-rate schedules |

pub mod acg;
pub mod algorithms;
pub mod client;
pub mod engine;
pub mod losses;
pub mod per_client;
pub mod plan;
pub mod schedule;
pub mod server;
pub mod state;
pub mod strategy;
pub mod term;
pub mod unread;
