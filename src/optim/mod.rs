//! Optimizer links in the manner of optax: each link owns its state (its constructor is optax's
//! `init`) and rewrites an update in place; a chain of links is an optimizer, and `x ← x − u`
//! applies it. The server's chains (scale, momentum, the adaptive rules, keep-last) run over flat
//! vectors ([`Transform`]). The clients' local chains (clip, weight decay, FedNAR's order of the
//! two, the local momentum, the rule's links: AMSGrad's moments, the trust ratio, a fixed
//! scale) run over K clients' rows of device tensors ([`TensorTransform`]), on every backend; a
//! rule's link as a client's plan gives it is a description with its state ([`LocalLink`]).
//! Each link is written once.
//!
//! | file | what |
//! |---|---|
//! | `transform.rs` | the [`Transform`] (server), [`TensorTransform`] (local, over rows) and [`LocalLink`] (a rule's link in a plan) traits, the step's context and log |
//! | `rows.rs` | K clients' parameters as the rows of `[K, n]` device tensors, and a factor per row |
//! | `buffers.rs` | a device training's state as a list of buffers, written in place by the next training's (a kept captured graph replays on them) |
//! | `steps.rs` | what changes between a device training's steps (each row's learning rate and whether it steps) as tables on the device, read at a step index there |
//! | `rows_links.rs` | the local rules' links (AMSGrad, decay, fixed scale, trust ratio) over K clients' rows, built from their plans' links |
//! | `norm.rs` | the global L2 norm, in a fixed order |
//! | `clip.rs` | `clip_by_global_norm` |
//! | `decay.rs` | `add_decayed_weights` (coupled L2 weight decay) |
//! | `heavy_ball.rs` | the local SGD's heavy-ball momentum over K clients' rows (`local.momentum`) |
//! | `scale.rs` | `scale` by a constant (server), or elementwise by a fixed vector (a local rule) |
//! | `quantize.rs` | FedPAQ's unbiased stochastic quantizer of an uplink, and its bit count |
//! | `moments.rs` | the moving-average moment update (`ema`, `ema_sq`) and the server's AMSGrad second moment v̂ |
//! | `keep.rs` | keep the last update (FedCM's server) |
//! | `momentum.rs` | heavy-ball momentum: `trace` and its dampened (EMA) form |
//! | `amsgrad.rs` | AMSGrad's moments against a frozen second moment (Fed-LAMB's local rule), as a plan gives it |
//! | `adaptive.rs` | the adaptive server rules: Adam, Adagrad, Yogi in three forms |
//! | `trust.rs` | LAMB's trust ratio, a per-tensor learning rate, as a plan gives it |

mod adaptive;
mod amsgrad;
pub mod buffers;
mod clip;
mod decay;
mod heavy_ball;
mod keep;
mod moments;
mod momentum;
mod norm;
pub mod quantize;
mod rows;
mod rows_links;
mod scale;
mod steps;
mod transform;
mod trust;

pub use adaptive::{AdaptiveForm, AdaptiveRule, ScaleByAdaptive};
pub use amsgrad::ScaleByAmsgrad;
pub use clip::ClipByGlobalNorm;
pub use decay::AddDecayedWeights;
pub use heavy_ball::HeavyBall;
pub use keep::KeepLast;
pub use moments::{SecondMoment, ema, ema_sq, fraction_at_floor};
pub use momentum::Momentum;
pub use norm::global_norm;
pub use rows::{RowFactor, row_sums, upload_rows};
pub use rows_links::rows_links;
pub use scale::{Scale, ScaleBy};
pub use steps::{Steps, table};
pub use transform::{
    Ctx, LocalLink, Log, Moments, RowsForm, TensorStep, TensorTransform, Transform,
};
pub use trust::ScaleByTrustRatio;
