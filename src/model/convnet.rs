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

/// A plain network being declared: the builder at its root (`Cnn`, `MnistCnn`, …).
struct Declare {
    b: Builder,
    root: &'static str,
}

impl Declare {
    fn new(root: &'static str) -> Self {
        Declare {
            b: Builder::new(root),
            root,
        }
    }

    /// A stage `name` whose convolution is `shape` (`[out, in, k, k]`; "same" padding if
    /// `same`), pooled as `pool` says.
    fn stage(&mut self, name: &str, shape: [usize; 4], same: bool, pool: Option<bool>) -> Stage {
        Stage {
            conv: self.b.conv(name, self.root, shape, true),
            norm: None,
            pad: if same { shape[2] / 2 } else { 0 },
            drop2d: 0.0,
            pool,
            drop: 0.0,
        }
    }

    /// LEAF's CelebA block `i` (`blocks.i.conv`, `blocks.i.norm`): a "same" convolution
    /// `[32, cin, 3, 3]`, the batch's norm, a ceil-mode pool.
    fn celeba_block(&mut self, i: usize, cin: usize) -> Stage {
        let (conv, norm) = self.b.scope("blocks", self.root, |b| {
            b.scope(&i.to_string(), "Vec", |b| {
                let conv = b.conv("conv", "CelebaBlock", [32, cin, 3, 3], true);
                (conv, b.norm("norm", "CelebaBlock", "BatchStatNorm", 32))
            })
        });
        Stage {
            conv,
            norm: Some(norm),
            pad: 1,
            drop2d: 0.0,
            pool: Some(true),
            drop: 0.0,
        }
    }

    /// Linear layers named `(name, in, out)`, fields of the root.
    fn fcs(&mut self, fcs: &[(&str, usize, usize)]) -> Vec<Linear> {
        (fcs.iter())
            .map(|&(name, din, dout)| self.b.linear(name, self.root, din, dout))
            .collect()
    }

    /// The network of `stages` and `fcs`, the rest of its fields as `net` has them.
    fn finish(self, stages: Vec<Stage>, fcs: Vec<Linear>, net: ConvNet) -> ConvNet {
        ConvNet {
            layout: self.b.finish(),
            stages,
            fcs,
            ..net
        }
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
    /// The FedExP CIFAR CNN or its tiny variant, with MOON's head if `model.projection > 0`
    /// (declared after the classifier, which reads its output).
    fn cifar(spec: &ModelSpec, classes: usize) -> ConvNet {
        let (c1, c2, hidden) = match spec.kind {
            ModelKind::Cnn => (32, 64, vec![384, 192]),
            _ => (4, 8, vec![32]),
        };
        let mut d = Declare::new("Cnn");
        let pool = Some(false);
        let stages = vec![
            d.stage("conv1", [c1, 3, 5, 5], false, pool),
            d.stage("conv2", [c2, c1, 5, 5], false, pool),
        ];
        let mut dims = vec![c2 * 25];
        dims.extend(hidden);
        let features = *dims.last().expect("a width");
        // the classifier reads MOON's projection where there is one
        let reads = if spec.projection > 0 {
            spec.projection
        } else {
            features
        };
        let fcs = d.b.scope("fcs", "Cnn", |b| {
            let mut fcs: Vec<Linear> = (dims.windows(2).enumerate())
                .map(|(i, w)| b.linear(&i.to_string(), "Vec", w[0], w[1]))
                .collect();
            fcs.push(b.linear(&fcs.len().to_string(), "Vec", reads, classes));
            fcs
        });
        let proj = (spec.projection > 0).then(|| {
            d.b.scope("proj", "Cnn", |b| {
                [
                    b.linear("l1", "Projection", features, features),
                    b.linear("l2", "Projection", features, spec.projection),
                ]
            })
        });
        d.finish(stages, fcs, ConvNet { proj, ..plain() })
    }

    /// The network of `spec` for images of `input` floats and `classes` classes.
    pub fn of(spec: &ModelSpec, input: usize, classes: usize) -> ConvNet {
        let pool = Some(false);
        match spec.kind {
            ModelKind::Cnn | ModelKind::TinyCnn => Self::cifar(spec, classes),
            ModelKind::MnistCnn => {
                let mut d = Declare::new("MnistCnn");
                let conv1 = d.stage("conv1", [10, 1, 5, 5], false, pool);
                let mut conv2 = d.stage("conv2", [20, 10, 5, 5], false, pool);
                conv2.drop2d = spec.dropout;
                let fcs = d.fcs(&[("fc1", 320, 50), ("fc2", 50, classes)]);
                let net = ConvNet {
                    fc_drop: spec.dropout,
                    ..plain()
                };
                d.finish(vec![conv1, conv2], fcs, net)
            }
            ModelKind::EmnistCnn => {
                let mut d = Declare::new("EmnistCnn");
                let conv1 = d.stage("conv1", [32, 1, 3, 3], false, None);
                let mut conv2 = d.stage("conv2", [64, 32, 3, 3], false, pool);
                conv2.drop = 0.25;
                let fcs = d.fcs(&[("fc1", 9216, 128), ("fc2", 128, classes)]);
                let net = ConvNet {
                    fc_drop: 0.5,
                    ..plain()
                };
                d.finish(vec![conv1, conv2], fcs, net)
            }
            ModelKind::FemnistCnn => {
                let mut d = Declare::new("FemnistCnn");
                let stages = vec![
                    d.stage("conv1", [32, 1, 5, 5], true, pool),
                    d.stage("conv2", [64, 32, 5, 5], true, pool),
                ];
                let fcs = d.fcs(&[("fc1", 3136, 2048), ("fc2", 2048, classes)]);
                d.finish(stages, fcs, plain())
            }
            ModelKind::CelebaCnn => {
                let mut d = Declare::new("CelebaCnn");
                let stages = (0..4)
                    .map(|i| d.celeba_block(i, if i == 0 { 3 } else { 32 }))
                    .collect();
                let fcs = d.fcs(&[("fc", 6 * 6 * 32, classes)]);
                d.finish(stages, fcs, plain())
            }
            ModelKind::Mlp => {
                let mut d = Declare::new("Mlp");
                let h = spec.mlp_hidden;
                let fcs = d.fcs(&[("fc1", input, h), ("fc2", h, classes)]);
                d.finish(Vec::new(), fcs, plain())
            }
            _ => {
                let mut d = Declare::new("Linear");
                let roles = [Role::Weight { fan_in: input }, Role::Bias { fan_in: input }];
                let fc = d.b.linear_here("Linear", input, classes, roles);
                let net = ConvNet {
                    linear: true,
                    ..plain()
                };
                d.finish(Vec::new(), vec![fc], net)
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
