//! The spec's five sections, `[data]`, `[model]`, `[fl]`, `[local]` and `[run]`: every key with
//! its default (the FedNAR CIFAR-10 scripts') and meaning, and the closed sets of values as enums.

use serde::{Deserialize, Serialize};

crate::choice! {
    /// `data.dataset`: `cifar10` | `cifar100` | `tiny-imagenet` | `mnist` | `fashion-mnist` |
    /// `femnist`, `celeba` (LEAF JSON) | `shakespeare` (from the plays) | `leaf` (LEAF
    /// Shakespeare JSON) | `idx` (your own images and labels in the IDX format) | `synthetic`
    /// (tests).
    pub enum Dataset {
        Cifar10 = "cifar10",
        Cifar100 = "cifar100",
        TinyImagenet = "tiny-imagenet",
        Femnist = "femnist",
        Celeba = "celeba",
        Mnist = "mnist",
        FashionMnist = "fashion-mnist",
        Shakespeare = "shakespeare",
        Leaf = "leaf",
        Idx = "idx",
        Synthetic = "synthetic",
    }
}

crate::choice! {
    /// `data.partition`: `iid` | `dirichlet` | `shards` (McMahan et al., `shards_per_client`
    /// label-sorted shards each) | `natural` (one client per user) | `file` (`partition_file`).
    pub enum Partition {
        Iid = "iid",
        Dirichlet = "dirichlet",
        Shards = "shards",
        Natural = "natural",
        File = "file",
    }
}

crate::choice! {
    /// `data.shard_cut`, how `partition = "shards"` cuts its shards: `sorted` (McMahan et al.'s
    /// code: the label-sorted indices cut into equal shards, some of which straddle two classes) |
    /// `class` (each class cut into its own shards, sized to the class: every shard one class).
    pub enum ShardCut { Sorted = "sorted", Class = "class" }
}

crate::choice! {
    /// `data.deal`, when the training samples go to the clients: `once` (partitioned before
    /// round 0 and fixed for the run, as in every code base behind the papers' tables) | `round`
    /// (the Fed-LAMB paper's protocol read literally, "in each round the training samples are
    /// allocated to the active devices": before each round the whole training split is
    /// partitioned anew, as `data.partition` says, among that round's sampled clients alone).
    pub enum Deal { Once = "once", Round = "round" }
}

crate::choice! {
    /// `fl.uplink_scope`: one quantizer norm for the whole update (`vector`), per parameter
    /// tensor (`tensor`), or per convolution weight with every other tensor sent exact (`conv`).
    pub enum UplinkScope { Vector = "vector", Tensor = "tensor", Conv = "conv" }
}

crate::choice! {
    /// `data.cifar100_labels`: `fine` (100 classes) | `coarse` (20 superclasses).
    pub enum Cifar100Labels { Fine = "fine", Coarse = "coarse" }
}

crate::choice! {
    /// `data.variant`, the Dirichlet split: `fedexp-equal` (FedExP's equal-size clients) |
    /// `fedacg-balanced` (FedACG's balanced split).
    pub enum DirichletVariant { FedexpEqual = "fedexp-equal", FedacgBalanced = "fedacg-balanced" }
}

crate::choice! {
    /// `data.augmentation` of image batches: `batch` (FedNAR: one crop/flip per batch) |
    /// `sample` (one per image; the padding is 0 after normalisation, the mean colour) |
    /// `fedacg` (the FedACG code's: rotation by up to 10°, crop with black padding and flip per
    /// image, before normalisation with FedACG's constants; CIFAR and Tiny-ImageNet) | `none`.
    pub enum Augmentation { None = "none", Batch = "batch", Sample = "sample", Fedacg = "fedacg" }
}

crate::choice! {
    /// `model.kind`.
    pub enum ModelKind {
        Cnn = "cnn",
        Resnet18 = "resnet18",
        Transformer = "transformer",
        Lstm = "lstm",
        LstmSmall = "lstm-small",
        Mlp = "mlp",
        Linear = "linear",
        TinyCnn = "tiny-cnn",
        /// The Fed-LAMB MNIST CNN (1×28×28 input).
        MnistCnn = "mnist-cnn",
        /// LEAF's FEMNIST CNN (1×28×28).
        FemnistCnn = "femnist-cnn",
        /// LEAF's CelebA CNN (3×84×84).
        CelebaCnn = "celeba-cnn",
        /// The FedExP code's EMNIST CNN (1×28×28).
        EmnistCnn = "emnist-cnn",
    }
}

impl ModelKind {
    /// `[model]` keys whose default is this model's own, not `ModelSpec::default`'s: the
    /// Fed-LAMB MNIST CNN's dropout is the PyTorch MNIST example's 0.5 (the transformer's 0.1
    /// is the table's default).
    pub fn own_defaults(self) -> &'static [(&'static str, f64)] {
        match self {
            ModelKind::MnistCnn => &[("dropout", 0.5)],
            _ => &[],
        }
    }
}

crate::choice! {
    /// `model.head` of ResNet-18: `fednar` (avg_pool2d(3) on the 4×4 map, as the FedNAR code) |
    /// `global` (global average pooling).
    pub enum Head { Fednar = "fednar", Global = "global" }
}

crate::choice! {
    /// `model.init`, the initial weights: `pytorch` (PyTorch's layer defaults, the FedNAR,
    /// FedACG and Fed-LAMB code) | `leaf` (TensorFlow's, the LEAF code's: Glorot-uniform weights,
    /// zero biases).
    pub enum Init { Pytorch = "pytorch", Leaf = "leaf" }
}

crate::choice! {
    /// `fl.aggregation`, the client weights in Δ̄: `size` (p_i ∝ n_i, the FedNAR code) |
    /// `uniform` (1/M, the FedACG code).
    pub enum Aggregation { Size = "size", Uniform = "uniform" }
}

crate::choice! {
    /// `local.lr_schedule`: `round`: l = lr·d^(t+1) for all of round t (the FedNAR code) |
    /// `epoch`: l = lr·d^(t+e) in local epoch e of round t (the FedACG code: LambdaLR stepped
    /// per local epoch) | `step`: l = lr·lr_step_factor^k in round t, k = the milestones ≤ t
    /// (Fed-LAMB: ÷10 at rounds 30 and 70); `lr_decay` is not used by `step`.
    pub enum LrSchedule { Round = "round", Epoch = "epoch", Step = "step" }
}

crate::choice! {
    /// `run.backend`: `flex` (CPU) | `wgpu` (GPU through wgpu, cargo feature `wgpu`: WGSL
    /// kernels, or SPIR-V where the binary also has `vulkan`) | `vulkan` (GPU through wgpu
    /// pinned to Vulkan with burn's SPIR-V compiler, cargo feature `vulkan`) | `cuda` (NVIDIA GPU
    /// through burn's CUDA runtime, kernels compiled by NVRTC, cargo feature `cuda`).
    pub enum Backend { Flex = "flex", Wgpu = "wgpu", Vulkan = "vulkan", Cuda = "cuda" }
}

crate::choice! {
    /// `run.kernels`: `fedrun` (fedrun's own CPU kernels for the convolutions on flex; burn's
    /// ops elsewhere) | `burn` (burn's reference ops everywhere). Results agree to float
    /// rounding.
    pub enum KernelChoice { Fedrun = "fedrun", Burn = "burn" }
}

crate::choice! {
    /// `run.graph`, whether the local steps run as one captured graph, replayed a step: `auto`
    /// (on `cuda`, where burn records a CUDA graph: one launch a step instead of hundreds) |
    /// `on` (every backend: elsewhere the captured closure runs again each step, the same
    /// values, which is how the path is tested off a GPU) | `off`. Needs the training split
    /// kept on the device (`run.device_data_mb`); full steps give the eager step's bits.
    pub enum GraphChoice { Auto = "auto", On = "on", Off = "off" }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataSpec {
    pub dataset: Dataset,
    /// Directory (or archive) of the data set; "" = the data set's default location.
    pub path: String,
    pub partition: Partition,
    pub alpha: f64,
    pub variant: DirichletVariant,
    /// A published split (FedACG's `{client: [indices]}` files), used with `partition = "file"`.
    pub partition_file: String,
    pub num_clients: usize,
    /// `partition = "shards"`: shards per client (2: every client holds one or two classes,
    /// with `shard_cut = "class"`).
    pub shards_per_client: usize,
    pub shard_cut: ShardCut,
    /// Partition once, or deal the training split anew each round among its clients.
    pub deal: Deal,
    pub augmentation: Augmentation,
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
    /// CIFAR-100: fine (100 classes) or coarse (20) labels.
    pub cifar100_labels: Cifar100Labels,
    /// Your own data (`idx`): pixels are normalised as (p/255 − mean)/std.
    pub mean: f64,
    pub std: f64,
}

impl Default for DataSpec {
    fn default() -> Self {
        DataSpec {
            dataset: Dataset::Cifar10,
            path: String::new(),
            partition: Partition::Dirichlet,
            alpha: 0.3,
            variant: DirichletVariant::FedexpEqual,
            partition_file: String::new(),
            num_clients: 100,
            shards_per_client: 2,
            shard_cut: ShardCut::Sorted,
            deal: Deal::Once,
            augmentation: Augmentation::Batch,
            train_fraction: 0.9,
            min_train_samples: 2000,
            min_test_samples: 400,
            crop_train: 2000,
            crop_test: 400,
            synthetic_train: 64,
            synthetic_test: 128,
            cifar100_labels: Cifar100Labels::Fine,
            mean: 0.0,
            std: 1.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSpec {
    pub kind: ModelKind,
    pub head: Head,
    /// Transformer: layers, width, heads, FFN width, dropout.
    pub layers: usize,
    pub d_model: usize,
    pub heads: usize,
    pub d_ff: usize,
    /// The transformer's (0.1) and the MNIST CNN's (0.5, `ModelKind::own_defaults`) dropout.
    pub dropout: f64,
    /// Transformer: all layers start from identical weights (PyTorch deep-copy quirk, §7.2).
    pub identical_layers: bool,
    /// The initial weights' distribution (`pytorch` | `leaf`).
    pub init: Init,
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
            kind: ModelKind::Resnet18,
            head: Head::Fednar,
            init: Init::Pytorch,
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
    /// One of the registered algorithms (`fedrun check` lists them); its own keys are in its
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
    pub aggregation: Aggregation,
    /// The uplink's quantization levels s (FedPAQ: each client's update through the unbiased
    /// stochastic quantizer of QSGD, s levels); 0 = sent in full precision.
    pub uplink_levels: usize,
    /// What one quantizer norm covers: the whole update (`vector`, FedPAQ's), each parameter
    /// tensor (`tensor`), or each convolution weight, the rest sent exact (`conv`).
    pub uplink_scope: UplinkScope,
    /// ACG (FedACG's accelerated client gradient) around an algorithm whose server step is
    /// plain averaging: broadcast the lookahead `θ + λm`, server momentum `m ← λm + η_g·Δ̄`.
    pub acg: bool,
    /// λ of `fl.acg` (FedACG's own is `fedacg.lambda`).
    pub acg_lambda: f64,
    /// Clients in the federation at any time, drawn from the partition's clients (the pool)
    /// by seed; 0 = all of them. Each round samples `clients_per_round` among these.
    pub active_clients: usize,
    /// Every this many rounds, each active client leaves with probability `replace_prob` and
    /// a client not in the federation takes its place (its per-client state starts afresh);
    /// 0 = never.
    pub replace_every: usize,
    pub replace_prob: f64,
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
            aggregation: Aggregation::Size,
            uplink_levels: 0,
            uplink_scope: UplinkScope::Vector,
            acg: false,
            acg_lambda: 0.85,
            active_clients: 0,
            replace_every: 0,
            replace_prob: 0.5,
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
    pub lr_schedule: LrSchedule,
    /// `step` schedule: the rounds at which the rate is multiplied by `lr_step_factor`.
    pub lr_milestones: Vec<usize>,
    pub lr_step_factor: f64,
    pub weight_decay: f64,
    /// Clip threshold A on the global L2 norm; 0 disables clipping.
    pub max_norm: f64,
    /// FedNAR: clip g + wd·x jointly instead of clipping g then adding wd·x.
    pub nar: bool,
    /// Heavy-ball momentum β of the local SGD, after the clip and the decay: `b ← β·b + u`,
    /// `u ← b` (PyTorch's `SGD(momentum=β)`, no dampening, no Nesterov), b from 0 at each
    /// client's training (a new optimizer every round, as MOON's code makes one); 0, the
    /// default, adds no link.
    pub momentum: f64,
}

impl Default for LocalSpec {
    fn default() -> Self {
        LocalSpec {
            steps: 20,
            epochs: 0,
            batch_size: 50,
            lr: 0.01,
            lr_decay: 0.998,
            lr_schedule: LrSchedule::Round,
            lr_milestones: vec![30, 70],
            lr_step_factor: 0.1,
            weight_decay: 0.05,
            max_norm: 10.0,
            nar: false,
            momentum: 0.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    pub name: String,
    pub seed: u64,
    /// The seed of the initial model; −1 (the default) follows `seed`. A fixed value lets a
    /// study vary sampling and batches at one initialisation.
    pub init_seed: i64,
    pub backend: Backend,
    pub kernels: KernelChoice,
    pub graph: GraphChoice,
    /// On CUDA, whether f32 matrix products (and the implicit-GEMM convolutions burn's tuning
    /// may choose) run on the tensor cores as TF32 (a 10-bit mantissa: faster, and numbers
    /// that drift from flex by about 1e-3 in a few rounds) or in f32 (the default: flex's
    /// numbers, and PyTorch's default for matrix products). One setting for the process; the
    /// other backends compute in f32 and do not read it.
    pub tf32: bool,
    /// On CUDA, whether convolutions run on the tensor cores as TF32 (the default, as PyTorch's
    /// `cudnn.allow_tf32`: fedrun's implicit-GEMM convolutions need the tensor cores, and f32
    /// has none; a cohort's convolutions, batched products, follow it too) or in f32 (burn's
    /// direct kernels: flex's numbers, slower). The other backends do not read it.
    pub tf32_conv: bool,
    /// Write a checkpoint every this many rounds (and at the end); 0 = only at the end.
    pub checkpoint_every: usize,
    /// Also write a checkpoint after any round that ends this many minutes or more after the
    /// last one (0 = off): a bound in time on what a kill or a scheduler's time limit loses,
    /// whatever a round lasts. Checkpoints change no number.
    pub checkpoint_minutes: f64,
    /// Clients trained at once, each on one core; 0 = auto (one per core for models of up to
    /// 2M parameters, else 1). Results are identical whatever the value.
    pub client_workers: usize,
    /// The cohort step: up to this many of a round's clients train as one batched computation
    /// (every parameter with a leading client dimension). 1 trains them one at a time. A
    /// cohort rounds its batched products differently, so its numbers agree with 1's to float
    /// rounding, not bit for bit; at a fixed value a run is reproducible. Every model and
    /// algorithm trains in a cohort. `"auto"`: 1 on flex (a CPU trains fastest one client per
    /// core), on a GPU backend the largest K up to `fl.clients_per_round` whose model copies
    /// and training activations fit `run.cohort_mb` and 90 % of the device's free memory,
    /// measured when the run starts where the runtime states the device's capacity (`cuda`,
    /// `vulkan`) (`fedrun check` prints the estimate).
    #[serde(with = "count_or_auto")]
    pub cohort: usize,
    /// The MB (10⁶ bytes) that `run.cohort = "auto"` lets a cohort's model copies and a
    /// training step's activations take on the training device.
    pub cohort_mb: f64,
    /// Per-client state (SCAFFOLD's c_i, FedDyn's g_i, …) kept in memory, in MB (10⁶ bytes),
    /// at least the clients trained at once; the rest is spilled to `client_state_*.bin` in the
    /// run folder. 0 = no limit. Results are identical whatever the value.
    pub client_state_mb: f64,
    /// On a GPU backend, the MB (10⁶ bytes) of training and test data kept on the device for
    /// the whole run, each batch gathered (and augmented) there from its row indices instead of
    /// uploaded: the same values, bit for bit. A split that does not fit is gathered on the
    /// host. 0 gathers every batch on the host. flex does not read it.
    pub device_data_mb: f64,
    /// Run every compute thread with subnormal floats flushed to zero (x86-64: the FTZ and DAZ
    /// bits of MXCSR), as TensorFlow and XLA do: Intel cores slow down badly on subnormals.
    /// `false` keeps IEEE subnormals (docs/ALGORITHMS.md).
    pub flush_subnormals: bool,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            name: "fedrun".into(),
            seed: 0,
            init_seed: -1,
            backend: Backend::Flex,
            kernels: KernelChoice::Fedrun,
            graph: GraphChoice::Auto,
            tf32: false,
            tf32_conv: true,
            checkpoint_every: 10,
            checkpoint_minutes: 0.0,
            client_workers: 0,
            cohort: 1,
            cohort_mb: 8000.0,
            client_state_mb: 0.0,
            device_data_mb: 2048.0,
            flush_subnormals: true,
        }
    }
}

/// `run.cohort = "auto"` as the field holds it.
pub const COHORT_AUTO: usize = usize::MAX;

/// A count, or the string `"auto"` ([`COHORT_AUTO`]).
mod count_or_auto {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &usize, s: S) -> Result<S::Ok, S::Error> {
        match *v {
            super::COHORT_AUTO => s.serialize_str("auto"),
            n => s.serialize_u64(n as u64),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Value {
            Count(usize),
            Word(String),
        }
        match Value::deserialize(d)? {
            Value::Count(n) => Ok(n),
            Value::Word(w) if w == "auto" => Ok(super::COHORT_AUTO),
            Value::Word(w) => Err(serde::de::Error::custom(format!(
                "expected a count or \"auto\", got \"{w}\""
            ))),
        }
    }
}
