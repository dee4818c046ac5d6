//! The plain networks: stages of a convolution, an optional norm with the batch's statistics, a
//! max-pool and a ReLU, then linear layers, with dropout where the reference code has it.
//!
//! - The FedExP CIFAR CNN ("FedNet", §7.4; 744,330 parameters): conv5×5 3→32 → ReLU →
//!   maxpool2 → conv5×5 32→64 → ReLU → maxpool2 → 1600 → 384 → 192 → classes; a tiny variant
//!   (4 and 8 channels, 200 → 32) for tests; MOON's projection head when `model.projection > 0`
//!   (`ModelFedCon` in the official MOON code: h → Linear(d, d) → ReLU → Linear(d, p), the
//!   classifier reading the projection).
//! - The Fed-LAMB MNIST CNN (§7.4; the classic PyTorch MNIST example, 21,840 parameters):
//!   conv5×5 1→10 → maxpool2 → ReLU; conv5×5 10→20 → Dropout2d → maxpool2 → ReLU; 320 → 50 →
//!   ReLU → dropout → classes, p = `model.dropout` (0.5 in the Fed-LAMB configs).
//! - The FedExP code's EMNIST CNN (1,206,590 parameters for 62 classes): conv3×3 1→32 → ReLU;
//!   conv3×3 32→64 → ReLU → maxpool2; dropout 0.25; 9216 → 128 → ReLU; dropout 0.5; → classes
//!   (the code's rates, fixed).
//! - LEAF's reference CNNs (§7.3; LEAF `models/femnist/cnn.py`, `models/celeba/cnn.py`):
//!   FEMNIST (6,603,710 parameters): conv5×5 "same" 1→32 → ReLU → maxpool2; conv5×5 "same"
//!   32→64 → ReLU → maxpool2; 3136 → 2048 → ReLU → classes. CelebA (31,202): 4 × [conv3×3
//!   "same" →32 → batch norm → maxpool2 "same" (the last window of an odd side partial) →
//!   ReLU]; 6·6·32 → classes. LEAF's batch norm is `tf.layers.batch_normalization(training=
//!   True)` in training and evaluation alike: the batch's own mean and biased variance, ε =
//!   10⁻³, no running statistics; γ and β are parameters like any other.
//! - The Fed-LAMB MLP (input → `model.mlp_hidden` → ReLU → classes) and softmax regression (the
//!   closed-form tests), on the flattened input.
//!
//! The copies' stages run on their maps side by side in the channels (`[b, K·c, h, w]`: each
//! convolution one grouped convolution, each norm per channel, so per copy); on flex with
//! fedrun's kernels each copy's stages run on its own batch instead, on the kernels one model
//! alone uses (a grouped convolution takes burn's slower direct path there). The linear layers
//! are batched products `[K, b, in]·[K, in, out]`.

use burn::backend::ops::ConvOptions;
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use super::network::Network;
use super::ops::{Ops, from_channels, to_channels};
use super::outputs::Outputs3;
use super::params::{Builder, Conv, Layout, Linear, Norm, Role};
use crate::config::{ModelKind, ModelSpec};
use crate::data::Input;
use crate::kernels::{batch_stat_norm, conv2d_copies, max_pool2d_of};

/// TensorFlow's default ε of `tf.layers.batch_normalization` (LEAF's CelebA CNN).
pub const BN_EPS: f64 = 1e-3;

/// One stage: a convolution, a norm with the batch's statistics or none, dropout, max-pool and
/// ReLU.
#[derive(Clone, Debug)]
struct Stage {
    conv: Conv,
    norm: Option<Norm>,
    /// The convolution's padding ("same": k / 2; else none).
    pad: usize,
    /// Dropout2d before the pool: one draw per (image, channel).
    drop2d: f64,
    /// None: a ReLU without pooling; else the pool's ceil mode.
    pool: Option<bool>,
    /// Dropout after the stage, per element.
    drop: f64,
}

/// A plain network: its stages, its linear layers (the classifier last) and their dropout,
/// MOON's head, each declared in the layout as it is made.
#[derive(Clone, Debug)]
pub struct ConvNet {
    layout: Layout,
    stages: Vec<Stage>,
    fcs: Vec<Linear>,
    /// Dropout after each hidden linear layer.
    fc_drop: f64,
    /// MOON's projection head.
    proj: Option<[Linear; 2]>,
    /// Softmax regression: one layer, its features its logits.
    linear: bool,
}

/// A plain network being declared: the builder at its root (`Cnn`, `MnistCnn`, …), the stages
/// so far, and the map a sample has reached (channels and side: the input's before any stage; a
/// flat input is `c` floats of side 1), which the next layer reads. The floats a sample keeps
/// are declared with each layer ([`Builder::keeps`]).
struct Declare {
    b: Builder,
    root: &'static str,
    stages: Vec<Stage>,
    map: Map,
    /// Dropout after each hidden linear layer.
    fc_drop: f64,
}

/// The map a sample has reached: channels and side (a flat input is `c` floats of side 1).
struct Map {
    c: usize,
    side: usize,
    /// The last stage's convolution output, a sample's floats.
    conv: u128,
}

impl Declare {
    /// A network `root` on `c`×`side`×`side` inputs; a training step keeps the batch's copy.
    fn new(root: &'static str, c: usize, side: usize) -> Self {
        let mut b = Builder::new(root);
        b.keeps((c * side * side) as u128, 0);
        Declare {
            b,
            root,
            stages: Vec::new(),
            map: Map { c, side, conv: 0 },
            fc_drop: 0.0,
        }
    }

    /// The next stage, `name`: a `k`×`k` convolution to `out` channels ("same" padding if
    /// `same`), pooled as `pool` says.
    fn stage(&mut self, name: &str, out: usize, k: usize, same: bool, pool: Option<bool>) {
        let conv = self.b.conv(name, self.root, [out, self.map.c, k, k], true);
        self.push(conv, None, if same { k / 2 } else { 0 }, pool);
    }

    /// LEAF's CelebA block `i` (`blocks.i.conv`, `blocks.i.norm`): a "same" convolution to 32
    /// channels, the batch's norm, a ceil-mode pool.
    fn celeba_block(&mut self, i: usize) {
        let cin = self.map.c;
        let (conv, norm) = self.b.scope("blocks", self.root, |b| {
            b.scope(&i.to_string(), "Vec", |b| {
                let conv = b.conv("conv", "CelebaBlock", [32, cin, 3, 3], true);
                (conv, b.norm("norm", "CelebaBlock", "BatchStatNorm", 32))
            })
        });
        self.push(conv, Some(norm), 1, Some(true));
    }

    /// The next stage, of the convolution `conv` padded by `pad`, `norm`, and pooled as `pool`
    /// says; the map it passes on now the sample's. A training step keeps
    /// what flex's backward reads: the convolution's output (the pool's or the ReLU's input),
    /// the norm's normalised map and output, the pool's output and indices or the ReLU's
    /// output. An evaluation holds the convolution's input and output, the norm's input and
    /// output, then the pool's input and output.
    fn push(&mut self, conv: Conv, norm: Option<Norm>, pad: usize, pool: Option<bool>) {
        let &[out, cin, k, _] = self.b.shape(conv.weight) else {
            unreachable!("a convolution's weight is [out, in, k, k]")
        };
        let conv_side = self.map.side + 2 * pad + 1 - k;
        let map = self.map.side * self.map.side;
        self.b
            .keeps_columns([out, cin, k, k], map, conv_side * conv_side);
        let side = match pool {
            Some(true) => conv_side.div_ceil(2),
            Some(false) => conv_side / 2,
            None => conv_side,
        };
        let (input, a) = (
            self.map.flat() as u128,
            (out * conv_side * conv_side) as u128,
        );
        let p = (out * side * side) as u128;
        let normed = if norm.is_some() { 2 * a } else { 0 };
        let pass = if pool.is_some() { 2 * p } else { p };
        self.b
            .keeps(a + normed + pass, (input + a).max(a + p).max(normed));
        self.map = Map {
            c: out,
            side,
            conv: a,
        };
        self.stages.push(Stage {
            conv,
            norm,
            pad,
            drop2d: 0.0,
            pool,
            drop: 0.0,
        });
    }

    /// Dropout2d at rate `p` on the last stage's convolution output, before its pool: a
    /// training step keeps its output.
    fn drop2d(&mut self, p: f64) {
        let last = self.stages.last_mut().expect("a stage");
        last.drop2d = p;
        self.b.keeps(if p > 0.0 { self.map.conv } else { 0 }, 0);
    }

    /// Dropout at rate `p` after the last stage: a training step keeps its output and mask.
    fn drop(&mut self, p: f64) {
        self.stages.last_mut().expect("a stage").drop = p;
        let map = self.map.flat() as u128;
        self.b.keeps(if p > 0.0 { 2 * map } else { 0 }, 0);
    }

    /// Linear layers `(name, out)`, fields of the root, the hidden ones with dropout `drop`.
    fn fcs(&mut self, fcs: &[(&str, usize)], drop: f64) -> Vec<Linear> {
        let last = fcs.len() - 1;
        self.fc_drop = drop;
        (fcs.iter().enumerate())
            .map(|(i, &(name, dout))| {
                let p = if i < last { drop } else { 0.0 };
                self.map.linear(&mut self.b, (name, self.root), dout, p)
            })
            .collect()
    }

    /// The network with the linear layers `fcs` (and their dropout), the rest of its fields as
    /// `net` has them.
    fn finish(self, fcs: Vec<Linear>, net: ConvNet) -> ConvNet {
        ConvNet {
            layout: self.b.finish(),
            stages: self.stages,
            fcs,
            fc_drop: self.fc_drop,
            ..net
        }
    }
}

impl Map {
    /// The floats of the map.
    fn flat(&self) -> usize {
        self.c * self.side * self.side
    }

    /// A linear layer `name` of `parent` from the map reached to `dout`, now the sample's; with
    /// `drop`, the dropout after its ReLU. A sample keeps what a linear layer keeps
    /// ([`Builder::keeps_linear`]) and dropout's output and mask.
    fn linear(
        &mut self,
        b: &mut Builder,
        (name, parent): (&str, &str),
        dout: usize,
        drop: f64,
    ) -> Linear {
        let din = self.flat();
        let l = b.linear(name, parent, din, dout);
        b.keeps_linear(din, dout);
        b.keeps(if drop > 0.0 { 2 * dout as u128 } else { 0 }, 0);
        (self.c, self.side) = (dout, 1);
        l
    }
}

/// No layers, no dropout, no head: what each network changes.
fn plain() -> ConvNet {
    ConvNet {
        layout: Layout::default(),
        stages: Vec::new(),
        fcs: Vec::new(),
        fc_drop: 0.0,
        proj: None,
        linear: false,
    }
}
impl ConvNet {
    /// The FedExP CIFAR CNN or its tiny variant on `c`×`side`×`side` images (CIFAR's 3×32×32),
    /// with MOON's head if `model.projection > 0` (declared after the classifier, which reads
    /// its output).
    fn cifar(spec: &ModelSpec, (c, side): (usize, usize), classes: usize) -> ConvNet {
        let (c1, c2, hidden) = match spec.kind {
            ModelKind::Cnn => (32, 64, vec![384, 192]),
            _ => (4, 8, vec![32]),
        };
        let mut d = Declare::new("Cnn", c, side);
        d.stage("conv1", c1, 5, false, Some(false));
        d.stage("conv2", c2, 5, false, Some(false));
        let (map, p) = (&mut d.map, spec.projection);
        let fcs = d.b.scope("fcs", "Cnn", |b| {
            let mut fcs: Vec<Linear> = (hidden.iter().enumerate())
                .map(|(i, &w)| map.linear(b, (&i.to_string(), "Vec"), w, 0.0))
                .collect();
            // the classifier reads MOON's projection where there is one
            let features = map.c;
            map.c = if p > 0 { p } else { features };
            fcs.push(map.linear(b, (&fcs.len().to_string(), "Vec"), classes, 0.0));
            map.c = features;
            fcs
        });
        let proj = (p > 0).then(|| {
            d.b.scope("proj", "Cnn", |b| {
                let features = map.c;
                let l1 = map.linear(b, ("l1", "Projection"), features, 0.0);
                [l1, map.linear(b, ("l2", "Projection"), p, 0.0)]
            })
        });
        d.finish(fcs, ConvNet { proj, ..plain() })
    }

    /// The network of `spec` for `c`×`side`×`side` images (the MLP and softmax regression: any
    /// input, flattened) and `classes` classes.
    pub fn of(spec: &ModelSpec, (c, side): (usize, usize), classes: usize) -> ConvNet {
        let pool = Some(false);
        match spec.kind {
            ModelKind::Cnn | ModelKind::TinyCnn => Self::cifar(spec, (c, side), classes),
            ModelKind::MnistCnn => {
                let mut d = Declare::new("MnistCnn", c, side);
                d.stage("conv1", 10, 5, false, pool);
                d.stage("conv2", 20, 5, false, pool);
                d.drop2d(spec.dropout);
                let fcs = d.fcs(&[("fc1", 50), ("fc2", classes)], spec.dropout);
                d.finish(fcs, plain())
            }
            ModelKind::EmnistCnn => {
                let mut d = Declare::new("EmnistCnn", c, side);
                d.stage("conv1", 32, 3, false, None);
                d.stage("conv2", 64, 3, false, pool);
                d.drop(0.25);
                let fcs = d.fcs(&[("fc1", 128), ("fc2", classes)], 0.5);
                d.finish(fcs, plain())
            }
            ModelKind::FemnistCnn => {
                let mut d = Declare::new("FemnistCnn", c, side);
                d.stage("conv1", 32, 5, true, pool);
                d.stage("conv2", 64, 5, true, pool);
                let fcs = d.fcs(&[("fc1", 2048), ("fc2", classes)], 0.0);
                d.finish(fcs, plain())
            }
            ModelKind::CelebaCnn => {
                let mut d = Declare::new("CelebaCnn", c, side);
                (0..4).for_each(|i| d.celeba_block(i));
                let fcs = d.fcs(&[("fc", classes)], 0.0);
                d.finish(fcs, plain())
            }
            ModelKind::Mlp => {
                let mut d = Declare::new("Mlp", c * side * side, 1);
                let fcs = d.fcs(&[("fc1", spec.mlp_hidden), ("fc2", classes)], 0.0);
                d.finish(fcs, plain())
            }
            _ => {
                let input = c * side * side;
                let mut d = Declare::new("Linear", input, 1);
                let roles = [Role::Weight { fan_in: input }, Role::Bias { fan_in: input }];
                let fc = d.b.linear_here("Linear", input, classes, roles);
                d.b.keeps_linear(input, classes);
                let net = ConvNet {
                    linear: true,
                    ..plain()
                };
                d.finish(vec![fc], net)
            }
        }
    }
}

impl Network for ConvNet {
    fn rows_independent(&self) -> bool {
        !self.stages.iter().any(|s| s.norm.is_some())
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The K copies' outputs on their batches `[K·b, c, h, w]`.
    fn outputs(&self, input: Input, ops: &mut Ops) -> Outputs3 {
        let x = input.images("a CNN");
        let k = ops.copies;
        let h: Tensor<3> = if self.stages.is_empty() {
            let flat: Tensor<2> = x.flatten(1, 3);
            let [n, d] = flat.dims();
            flat.reshape([k, n / k, d])
        } else if ops.per_copy(&x) {
            let b = x.dims()[0] / k;
            let per = ops.each_copy(|i, one| {
                let y: Tensor<4> = self.stages(x.clone().narrow(0, i * b, b), one);
                y.flatten::<2>(1, 3)
            });
            Tensor::stack(per, 0)
        } else {
            from_channels(self.stages(to_channels(x, k), ops), k)
        };
        self.dense(h, ops)
    }
}

impl ConvNet {
    /// The stages on `x`, `ops.copies` copies side by side in the channels.
    fn stages(&self, mut x: Tensor<4>, ops: &mut Ops) -> Tensor<4> {
        let k = ops.copies;
        for st in &self.stages {
            let (w, bias) = ops.conv(&st.conv);
            let o = ConvOptions::new([1, 1], [st.pad, st.pad], [1, 1], k);
            let mut y = conv2d_copies(x, w, bias, o, ops.kernels);
            if let Some(n) = &st.norm {
                let (gamma, beta) = ops.norm(n);
                y = batch_stat_norm(y, gamma, beta, BN_EPS);
            }
            if st.drop2d > 0.0 {
                let [b, kc, _, _] = y.dims();
                let ones = Tensor::<4>::ones([b, kc, 1, 1], &y.device());
                y = y * ops.dropout(ones, st.drop2d, 1);
            }
            x = match st.pool {
                Some(ceil) => max_pool2d_of(y, 2, ceil, true, ops.kernels),
                None => relu(y),
            };
            x = ops.dropout(x, st.drop, 1);
        }
        x
    }

    /// The linear layers on `h` (`[K, b, d]`): the hidden layers (ReLU, dropout), MOON's
    /// projection head, the classifier; the features are what the classifier reads (the
    /// logits for softmax regression).
    fn dense(&self, mut h: Tensor<3>, ops: &mut Ops) -> Outputs3 {
        let (classifier, hidden) = self.fcs.split_last().expect("a classifier");
        for l in hidden {
            h = relu(l.apply(h, ops));
            h = ops.dropout(h, self.fc_drop, 0);
        }
        if let Some([l1, l2]) = &self.proj {
            let z = relu(l1.apply(h, ops));
            h = l2.apply(z, ops);
        }
        let logits = classifier.apply(h.clone(), ops);
        let features = if self.linear { logits.clone() } else { h };
        Outputs3 {
            logits,
            features,
            levels: Vec::new(),
        }
    }
}
