//! The link traits: a server link over flat vectors ([`Transform`]), a local link over K
//! clients' rows of device tensors ([`TensorTransform`]) and a local rule's link as a client's
//! plan describes it ([`LocalLink`]); the step's context and log.

use std::ops::Range;

use burn::tensor::{Bool, Tensor};

use super::steps::Steps;

/// What a link may read besides the update and the parameters. A local step fills the step's
/// fields, a server step the round's; each link reads only what it needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ctx {
    /// The round t, from 0.
    pub round: usize,
    /// Local step: the step's learning rate l.
    pub lr: f64,
    /// Local step: the client's number of steps K this round.
    pub steps: usize,
    /// Server step: G, the weighted mean of the clients' ‖Δ_i‖².
    pub mean_sq_norm: f64,
    /// Server step: the number of clients aggregated.
    pub clients: usize,
}

/// What a step's links measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Log {
    /// The global norm that the clip link saw (of g, or of g + wd·x with FedNAR).
    pub pre_clip_norm: f64,
    /// Whether the clip link clipped.
    pub clipped: bool,
    /// The step size a scaling link applied (the server's η_g, or FedExP's adaptive one).
    pub step_size: Option<f64>,
}

/// A link's first and second moments at the end of a client's training (Fed-LAMB's m_i and
/// v_i, which the client sends up).
#[derive(Clone, Debug, PartialEq)]
pub struct Moments {
    pub m: Vec<f32>,
    pub v: Vec<f32>,
}

/// One link of an optimizer: it owns its state and rewrites the update `u` in place, given the
/// parameters `x` that `u` will move.
pub trait Transform: Send {
    fn update(&mut self, u: &mut [f32], x: &[f32], ctx: &Ctx, log: &mut Log);

    /// The vectors it keeps across steps, by name (a server link's state, which checkpoints
    /// hold; default: none).
    fn vectors(&mut self) -> Vec<(&'static str, &mut Vec<f32>)> {
        Vec::new()
    }

    /// The same vectors, read-only (a strategy reads its link's state by name: ACG's momentum,
    /// FedCM's last update; default: none).
    fn state(&self) -> Vec<(&'static str, &[f32])> {
        Vec::new()
    }

    /// The norm of its state, for the log (a server momentum's ‖m‖; default: none).
    fn state_norm(&self) -> Option<f64> {
        None
    }
}

/// A link of a client's local rule (`fl::plan::Rule`): what it is, its settings and this
/// client's state, as the local step takes it ([`RowsForm`]); the step builds one link over K
/// clients' rows from their K forms (`optim::rows_links`).
pub trait LocalLink: Send {
    fn rows_form(&self) -> RowsForm<'_>;
}

/// A client's rule link as the local step takes it ([`LocalLink::rows_form`]): its kind, its
/// settings and its state, which K clients' forms of one kind upload as rows
/// (`optim::rows_links`).
pub enum RowsForm<'a> {
    /// AMSGrad's moments against a frozen v̂: the client's m, v and `1/√v̂`.
    Amsgrad {
        beta1: f32,
        beta2: f32,
        m: &'a [f32],
        v: &'a [f32],
        inv_sqrt_vhat: &'a [f32],
    },
    /// `u ← u + wd·x`.
    Decay(f32),
    /// `u ← s ⊙ u`: the client's fixed vector s.
    ScaleBy(&'a [f32]),
    /// LAMB's trust ratio over the parameter tensors at `tensors`, `on_zero` where a norm is 0.
    Trust {
        tensors: &'a [Range<usize>],
        on_zero: f64,
    },
}

/// A device step's tensors: the update `u` and the parameters `x`, one tensor `[K, n]` per
/// parameter tensor whose K rows are K clients' (one row for one client: the device-resident
/// step; a cohort's rows: the device-resident cohort step), the training's step tables at the
/// step ([`Steps`]: each row's learning rate, read on the device), the rows that step (`[K, 1]`,
/// true for a client in this step), the norm a link measured (`[K, 1]`, which the step reads
/// once with its losses), and a second gradient on the same batches (each row's starting
/// model's: Mime's correction), one tensor per parameter tensor, or empty when no term reads it.
pub struct TensorStep<'a> {
    pub u: &'a mut [Tensor<2>],
    pub x: &'a [Tensor<2>],
    pub aux: &'a [Tensor<2>],
    pub steps: &'a Steps,
    pub active: Tensor<2, Bool>,
    pub norm: Option<Tensor<2>>,
}

/// A link over the parameter tensors on the training device (the device-resident local step),
/// row by row: each row is one client's. A link with state leaves the rows that do not step
/// as they were.
pub trait TensorTransform: Send {
    fn update_tensors(&mut self, s: &mut TensorStep);

    /// Fill `log` from the norm `update_tensors` left, once read (default: nothing).
    fn read_norm(&self, _norm: f64, _log: &mut Log) {}

    /// Whether it scales the update by the step's learning rate itself (LAMB's trust ratio),
    /// so that the step's update is `x ← x − u` rather than `x ← x − l·u` (default: no).
    fn applies_lr(&self) -> bool {
        false
    }

    /// The moments the link holds now, `(m, v)` as rows of one tensor per parameter tensor, if
    /// it keeps any (default: none); left in place (a captured graph keeps their buffers).
    fn moments(&self) -> Option<(Vec<Tensor<2>>, Vec<Tensor<2>>)> {
        None
    }

    /// The link's state buffers and the host numbers its launches are given, in a fixed order,
    /// after a number of its own that tells the link's kind ([`super::buffers`]): a link with
    /// state or numbers lists them all, or a captured graph would replay another training's
    /// (default: none).
    fn buffers<'a>(&'a mut self, _out: &mut Vec<super::buffers::Buf<'a>>) {}
}
