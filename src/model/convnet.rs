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
    name: String,
    /// `[out, in, k, k]`.
    shape: [usize; 4],
    /// "same" padding (k / 2), else none.
    same: bool,
    norm: bool,
    /// Dropout2d before the pool: one draw per (image, channel).
    drop2d: f64,
    /// None: a ReLU without pooling; else the pool's ceil mode.
    pool: Option<bool>,
    /// Dropout after the stage, per element.
    drop: f64,
}

/// A plain network: its name in the layout, its stages, its linear layers and their dropout.
#[derive(Clone, Debug)]
pub struct ConvNet {
    root: &'static str,
    stages: Vec<Stage>,
    /// The linear layers' names and sizes, the classifier last: `(name, in, out)`.
    fcs: Vec<(String, usize, usize)>,
    /// Whether the linear layers are the `Vec` `fcs` (the CIFAR CNN) or fields.
    fc_vec: bool,
    /// Dropout after each hidden linear layer.
    fc_drop: f64,
    /// MOON's projection head's width (0: none).
    projection: usize,
    /// Softmax regression: one layer, its features its logits.
    linear: bool,
    /// The parameters, written by [`ConvNet::with_params`].
    p: Params,
}

/// A plain network's parameters: the layout, and the leaves each layer reads.
#[derive(Clone, Debug, Default)]
struct Params {
    layout: Layout,
    /// Each stage's convolution and norm.
    stages: Vec<(Conv, Option<Norm>)>,
    /// The linear layers, the classifier last.
    fcs: Vec<Linear>,
    /// MOON's projection head.
    proj: Option<[Linear; 2]>,
}

fn stage(name: &str, shape: [usize; 4], same: bool, pool: Option<bool>) -> Stage {
    Stage {
        name: name.into(),
        shape,
        same,
        norm: false,
        drop2d: 0.0,
        pool,
        drop: 0.0,
    }
}

fn fc(name: &str, din: usize, dout: usize) -> (String, usize, usize) {
    (name.into(), din, dout)
}

impl ConvNet {
    /// A network named `root` without layers yet.
    fn named(root: &'static str) -> ConvNet {
        ConvNet {
            root,
            stages: Vec::new(),
            fcs: Vec::new(),
            fc_vec: false,
            fc_drop: 0.0,
            projection: 0,
            linear: false,
            p: Params::default(),
        }
    }

    /// The FedExP CIFAR CNN or its tiny variant, with MOON's head if `model.projection > 0`.
    fn cifar(spec: &ModelSpec, classes: usize) -> ConvNet {
        let (c1, c2, hidden) = match spec.kind {
            ModelKind::Cnn => (32, 64, vec![384, 192]),
            _ => (4, 8, vec![32]),
        };
        let mut net = Self::named("Cnn");
        let pool = Some(false);
        net.stages = vec![
            stage("conv1", [c1, 3, 5, 5], false, pool),
            stage("conv2", [c2, c1, 5, 5], false, pool),
        ];
        let mut dims = vec![c2 * 25];
        dims.extend(hidden);
        dims.push(classes);
        net.fcs = dims
            .windows(2)
            .enumerate()
            .map(|(i, w)| (i.to_string(), w[0], w[1]))
            .collect();
        if spec.projection > 0 {
            // the classifier reads the projection
            net.fcs.last_mut().expect("a classifier").1 = spec.projection;
        }
        net.fc_vec = true;
        net.projection = spec.projection;
        net.with_params()
    }

    /// The network of `spec` for images of `input` floats and `classes` classes.
    pub fn of(spec: &ModelSpec, input: usize, classes: usize) -> ConvNet {
        let mut net = Self::named("");
        let pool = Some(false);
        match spec.kind {
            ModelKind::Cnn | ModelKind::TinyCnn => return Self::cifar(spec, classes),
            ModelKind::MnistCnn => {
                net.root = "MnistCnn";
                let mut conv2 = stage("conv2", [20, 10, 5, 5], false, pool);
                conv2.drop2d = spec.dropout;
                net.stages = vec![stage("conv1", [10, 1, 5, 5], false, pool), conv2];
                net.fcs = vec![fc("fc1", 320, 50), fc("fc2", 50, classes)];
                net.fc_drop = spec.dropout;
            }
            ModelKind::EmnistCnn => {
                net.root = "EmnistCnn";
                let mut conv2 = stage("conv2", [64, 32, 3, 3], false, pool);
                conv2.drop = 0.25;
                net.stages = vec![stage("conv1", [32, 1, 3, 3], false, None), conv2];
                net.fcs = vec![fc("fc1", 9216, 128), fc("fc2", 128, classes)];
                net.fc_drop = 0.5;
            }
            ModelKind::FemnistCnn => {
                net.root = "FemnistCnn";
                net.stages = vec![
                    stage("conv1", [32, 1, 5, 5], true, pool),
                    stage("conv2", [64, 32, 5, 5], true, pool),
                ];
                net.fcs = vec![fc("fc1", 3136, 2048), fc("fc2", 2048, classes)];
            }
            ModelKind::CelebaCnn => {
                net.root = "CelebaCnn";
                net.stages = (0..4)
                    .map(|i| {
                        let cin = if i == 0 { 3 } else { 32 };
                        let mut s = stage(&i.to_string(), [32, cin, 3, 3], true, Some(true));
                        s.norm = true;
                        s
                    })
                    .collect();
                net.fcs = vec![fc("fc", 6 * 6 * 32, classes)];
            }
            ModelKind::Mlp => {
                net.root = "Mlp";
                net.fcs = vec![
                    fc("fc1", input, spec.mlp_hidden),
                    fc("fc2", spec.mlp_hidden, classes),
                ];
            }
            _ => {
                net.root = "Linear";
                net.fcs = vec![fc("", input, classes)];
                net.linear = true;
            }
        }
        net.with_params()
    }

    /// The network with its parameters written: the layout in the order of the burn modules it
    /// was first written as (stages, linear layers, MOON's head), each layer's leaves kept.
    fn with_params(mut self) -> ConvNet {
        let (mut b, ty) = (Builder::new(self.root), self.root);
        let mut p = Params::default();
        for s in &self.stages {
            p.stages.push(match s.norm {
                // LEAF's CelebA blocks: `blocks.i.conv`, `blocks.i.norm`
                true => b.scope("blocks", ty, |b| {
                    b.scope(&s.name, "Vec", |b| {
                        let conv = b.conv("conv", "CelebaBlock", s.shape, true);
                        let n = b.norm("norm", "CelebaBlock", "BatchStatNorm", s.shape[0]);
                        (conv, Some(n))
                    })
                }),
                false => (b.conv(&s.name, ty, s.shape, true), None),
            });
        }
        for (name, din, dout) in &self.fcs {
            p.fcs.push(match (self.linear, self.fc_vec) {
                (true, _) => {
                    let fan_in = *din;
                    let roles = [Role::Weight { fan_in }, Role::Bias { fan_in }];
                    b.linear_here("Linear", *din, *dout, roles)
                }
                (_, true) => b.scope("fcs", ty, |b| b.linear(name, "Vec", *din, *dout)),
                _ => b.linear(name, ty, *din, *dout),
            });
        }
        if self.projection > 0 {
            let d = self.fcs[self.fcs.len() - 2].2;
            p.proj = Some(b.scope("proj", ty, |b| {
                [
                    b.linear("l1", "Projection", d, d),
                    b.linear("l2", "Projection", d, self.projection),
                ]
            }));
        }
        p.layout = b.finish();
        self.p = p;
        self
    }
}

impl Network for ConvNet {
    fn rows_independent(&self) -> bool {
        !self.stages.iter().any(|s| s.norm)
    }

    fn layout(&self) -> &Layout {
        &self.p.layout
    }

    /// The K copies' outputs on their batches `[K·b, c, h, w]`.
    fn outputs(&self, input: Input, ops: &mut Ops) -> Outputs3 {
        let Input::Images(x) = input else {
            panic!("a CNN reads images")
        };
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
        for (st, (conv, norm)) in self.stages.iter().zip(&self.p.stages) {
            let (w, bias) = ops.conv(conv);
            let pad = if st.same { st.shape[2] / 2 } else { 0 };
            let o = ConvOptions::new([1, 1], [pad, pad], [1, 1], k);
            let mut y = conv2d_copies(x, w, bias, o, ops.kernels);
            if let Some(n) = norm {
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
        let (classifier, hidden) = self.p.fcs.split_last().expect("a classifier");
        for l in hidden {
            h = relu(l.apply(h, ops));
            h = ops.dropout(h, self.fc_drop, 0);
        }
        if let Some([l1, l2]) = &self.p.proj {
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
