//! What a run writes: one CSV row per evaluated round, the final `summary.json`, and the test
//! evaluation that fills them.

pub mod csv;
mod device_eval;
pub mod eval;
pub mod provenance;
pub mod summary;
pub mod tensorboard;
