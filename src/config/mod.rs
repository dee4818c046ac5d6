//! The experiment spec: one TOML file with the sections `[data]`, `[model]`, `[fl]`, `[local]`
//! and `[run]`. Every key has a default (the FedNAR CIFAR-10 scripts', spec §2.4), so the
//! resolved spec printed by `fedrun check` names every knob of a run.
//!
//! Loading is strict: an unknown key (with a "did you mean"), a value of the wrong type, or a
//! value out of range is an error that names the key path and what is expected.

mod keys;
pub(crate) mod validate;

pub use keys::{apply_override, parse_spec_str};
pub use validate::validate;

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataSpec {
    /// `cifar10` | `shakespeare` (from the plays) | `leaf` (LEAF JSON) | `synthetic` (tests).
    pub dataset: String,
    /// Directory (or archive) of the data set; "" = the data set's default location.
    pub path: String,
    /// `iid` | `dirichlet` | `shards` (McMahan et al., `shards_per_client` label-sorted shards
    /// each) | `natural` (one client per user) | `file` (`partition_file`).
    pub partition: String,
    pub alpha: f64,
    /// Dirichlet variant: `fedexp-equal` (§8.1) | `fedacg-balanced` (§8.2).
    pub variant: String,
    /// A published split (FedACG's `{client: [indices]}` files), used with `partition = "file"`.
    pub partition_file: String,
    pub num_clients: usize,
    /// `partition = "shards"`: shards per client (2: every client holds one or two classes).
    pub shards_per_client: usize,
    /// CIFAR augmentation: `batch` (FedNAR: one crop/flip per batch) | `sample` | `none`.
    pub augmentation: String,
    /// Shakespeare: fraction of each role's samples used for training.
    pub train_fraction: f64,
    /// Shakespeare (FedNAR §8.5): keep users with more than this many train / test samples ...
    pub min_train_samples: usize,
    pub min_test_samples: usize,
    /// ... and crop a window of this many train / test samples per user (0 = keep all).
    pub crop_train: usize,
    pub crop_test: usize,
    /// Synthetic data (tests): samples per client and test samples.
    pub synthetic_train: usize,
    pub synthetic_test: usize,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            dataset: "cifar10".into(),
            path: String::new(),
            partition: "dirichlet".into(),
            alpha: 0.3,
            variant: "fedexp-equal".into(),
            partition_file: String::new(),
            num_clients: 100,
            shards_per_client: 2,
            augmentation: "batch".into(),
            train_fraction: 0.9,
            min_train_samples: 2000,
            min_test_samples: 400,
            crop_train: 2000,
            crop_test: 400,
            synthetic_train: 64,
            synthetic_test: 128,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSpec {
    /// `cnn` | `resnet18` | `transformer` | `lstm` | `lstm-small` | `mlp` | `linear` | `tiny-cnn`
    /// | `mnist-cnn` (the Fed-LAMB MNIST CNN, 1×28×28 input).
    pub kind: String,
    /// ResNet-18 head: `fednar` (avg_pool2d(3) on the 4x4 map, §7.1) | `global`.
    pub head: String,
    /// Transformer: layers, width, heads, FFN width, dropout.
    pub layers: usize,
    pub d_model: usize,
    pub heads: usize,
    pub d_ff: usize,
    pub dropout: f64,
    /// Transformer: all layers start from identical weights (PyTorch deep-copy quirk, §7.2).
    pub identical_layers: bool,
    /// LSTM hidden size and layers (LEAF: 256 x 2; FedDyn: 100 x 2).
    pub hidden: usize,
    /// MLP hidden width (tests, MNIST).
    pub mlp_hidden: usize,
    /// CNN / ResNet-18: MOON's projection head to this width before the classifier (256 in
    /// MOON); 0 = none.
    pub projection: usize,
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            kind: "resnet18".into(),
            head: "fednar".into(),
            layers: 6,
            d_model: 128,
            heads: 4,
            d_ff: 512,
            dropout: 0.1,
            identical_layers: true,
            hidden: 256,
            mlp_hidden: 200,
            projection: 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlSpec {
    /// One of `fl::algorithms::NAMES` (`fedrun check` lists them); its own keys are in its
    /// table (`[fedprox]`, `[fedacg]`, …).
    pub algorithm: String,
    /// Rounds run: t = 0 .. rounds-1. (The FedNAR code runs `num_rounds + 1`.)
    pub rounds: usize,
    pub clients_per_round: usize,
    /// Server learning rate η_g (FedExP: the lower bound of its adaptive step).
    pub global_lr: f64,
    /// Evaluate every this many rounds (the last round is always evaluated).
    pub eval_every: usize,
    /// Evaluation batch size.
    pub eval_batch_size: usize,
    /// Client weights in Δ̄: `size` (p_i ∝ n_i, the FedNAR code) | `uniform` (1/M, the FedACG
    /// code).
    pub aggregation: String,
}

impl Default for FlSpec {
    fn default() -> Self {
        FlSpec {
            algorithm: "fedavg".into(),
            rounds: 1000,
            clients_per_round: 20,
            global_lr: 1.0,
            eval_every: 1,
            eval_batch_size: 100,
            aggregation: "size".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalSpec {
    /// Exactly this many local steps per client and round (reshuffling on exhaustion) ...
    pub steps: usize,
    /// ... or, when > 0, this many epochs over the client's data instead.
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f64,
    /// Decay factor d of the learning-rate schedule.
    pub lr_decay: f64,
    /// `round`: l = lr·d^(t+1) for all of round t (the FedNAR code) | `epoch`: l = lr·d^(t+e)
    /// in local epoch e of round t (the FedACG code: LambdaLR stepped per local epoch) |
    /// `step`: l = lr·lr_step_factor^k in round t, k = the milestones ≤ t (Fed-LAMB: ÷10 at
    /// rounds 30 and 70); `lr_decay` is not used by `step`.
    pub lr_schedule: String,
    /// `step` schedule: the rounds at which the rate is multiplied by `lr_step_factor`.
    pub lr_milestones: Vec<usize>,
    pub lr_step_factor: f64,
    pub weight_decay: f64,
    /// Clip threshold A on the global L2 norm; 0 disables clipping.
    pub max_norm: f64,
    /// FedNAR: clip g + wd·x jointly instead of clipping g then adding wd·x.
    pub nar: bool,
}

impl Default for LocalSpec {
    fn default() -> Self {
        LocalSpec {
            steps: 20,
            epochs: 0,
            batch_size: 50,
            lr: 0.01,
            lr_decay: 0.998,
            lr_schedule: "round".into(),
            lr_milestones: vec![30, 70],
            lr_step_factor: 0.1,
            weight_decay: 0.05,
            max_norm: 10.0,
            nar: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    pub name: String,
    pub seed: u64,
    /// `flex` (CPU) | `wgpu` (GPU, cargo feature `wgpu`).
    pub backend: String,
    /// `fedrun` (fedrun's own CPU kernels for the convolutions on flex; burn's ops elsewhere)
    /// | `burn` (burn's reference ops everywhere). Results agree to float rounding.
    pub kernels: String,
    /// Where a local step runs: `host` (parameters and gradient as flat vectors in host
    /// memory: fastest on the CPU) | `device` (parameters, gradient, the algorithm's term and
    /// the optimizer chain as tensor ops on the training device: fewest transfers on a GPU)
    /// | `auto` (device on wgpu, host on flex). Results agree to float rounding. Algorithms
    /// with their own update rule (the Fed-LAMB family) step on the host.
    pub local_step: String,
    /// Write a checkpoint every this many rounds (and at the end); 0 = only at the end.
    pub checkpoint_every: usize,
    /// Clients trained at once, each on one core; 0 = auto (one per core for small models
    /// without dropout, else 1). Results are identical whatever the value.
    pub client_workers: usize,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            name: "fedrun".into(),
            seed: 0,
            backend: "flex".into(),
            kernels: "fedrun".into(),
            local_step: "auto".into(),
            checkpoint_every: 10,
            client_workers: 0,
        }
    }
}

/// The spec. Unknown keys are refused by the schema check in `keys.rs` (serde's
/// `deny_unknown_fields` does not combine with `flatten`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spec {
    pub data: DataSpec,
    pub model: ModelSpec,
    pub fl: FlSpec,
    pub local: LocalSpec,
    pub run: RunSpec,
    /// Each algorithm's own table (`[fedprox]`, `[fedacg]`, …), owned by its file in
    /// `fl/algorithms/`.
    #[serde(flatten)]
    pub algorithms: crate::fl::algorithms::AlgorithmKeys,
}

/// The quickstart spec, run when no --config is given.
pub const QUICKSTART: &str = include_str!("../../configs/quickstart.toml");

impl Spec {
    /// Load a spec file, apply `--set` overrides, and validate.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read config {}", path.display()), e))?;
        Self::from_str_with(&text, &path.display().to_string(), overrides)
    }

    /// Parse spec text (`origin` names it in errors), apply overrides, validate.
    pub fn from_str_with(text: &str, origin: &str, overrides: &[String]) -> Result<Spec> {
        let mut table = parse_spec_str(text, origin)?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        let spec: Spec = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| Error::Config(format!("{origin}: {}", e.message())))?;
        validate(&spec)?;
        Ok(spec)
    }

    /// The resolved spec, every key included, as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("spec serialises")
    }

    /// Keys whose values differ between two specs (for resume checks).
    pub fn diff_keys(&self, other: &Spec) -> Vec<String> {
        let a = toml::Value::try_from(self).expect("spec");
        let b = toml::Value::try_from(other).expect("spec");
        let mut out = Vec::new();
        keys::diff(&a, &b, "", &mut out);
        out
    }
}
