//! The models of the three papers, behind one [`Model`] enum so the engine handles one type.
//! Every model's parameters are read and written as one flat vector (see [`params`]), and are
//! initialised by fedrun itself (PyTorch's defaults, [`init`]) from the run seed, so the
//! initial model is the same on every backend.

pub mod cnn;
pub mod init;
mod keys;
pub mod lstm;
pub mod mnist_cnn;
pub mod params;
pub mod projection;
pub mod resnet;
pub mod size;
pub mod transformer;

pub use keys::unread_keys;

use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::config::{Dataset, Head, ModelKind, ModelSpec, Spec};
use crate::data::Input;
use crate::error::{Error, Result};
use crate::kernels::Kernels;

#[derive(Module, Debug)]
pub enum Model {
    Cnn(cnn::Cnn),
    MnistCnn(mnist_cnn::MnistCnn),
    Mlp(cnn::Mlp),
    /// Softmax regression on the flattened input (closed-form tests).
    Linear(burn::nn::Linear),
    ResNet(resnet::ResNet18),
    Transformer(transformer::CharTransformer),
    Lstm(lstm::CharLstm),
}

/// What a model computes on a batch, for the local objectives that read more than the logits.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// `[batch, classes]`.
    pub logits: Tensor<2>,
    /// The representation the classifier reads `[batch, d]`: the CNN's last hidden layer
    /// (192), ResNet-18's pooled features (512), the MLP's hidden layer; the logits for the
    /// sequence models.
    pub features: Tensor<2>,
    /// ResNet-18's activations after the stem and after each stage (FedMLB); empty for the
    /// other models.
    pub levels: Vec<Tensor<4>>,
}

impl Outputs {
    /// The same outputs cut from the autodiff graph.
    pub fn detach(self) -> Outputs {
        Outputs {
            logits: self.logits.detach(),
            features: self.features.detach(),
            levels: self.levels.into_iter().map(|l| l.detach()).collect(),
        }
    }
}

/// What the data set tells the model: input kind and number of classes.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub channels: usize,
    pub side: usize,
    pub classes: usize,
}

/// Refuse a model whose input the data set does not give (a transformer on images, a CNN on
/// text, the CIFAR models on MNIST's 28×28, …).
fn check_input(k: ModelKind, d: Dataset) -> Result<()> {
    use ModelKind::*;
    if d == Dataset::Idx {
        // images whose shape is known only once loaded (checked then)
        return match k {
            Transformer | Lstm | LstmSmall => Err(Error::Config(format!(
                "model.kind = \"{k}\" needs a character data set (shakespeare, leaf), not images (data.dataset = \"{d}\")"
            ))),
            _ => Ok(()),
        };
    }
    let image = match d {
        Dataset::Cifar10 | Dataset::Cifar100 | Dataset::Synthetic => Some((3, 32)),
        Dataset::Mnist | Dataset::FashionMnist => Some((1, 28)),
        Dataset::Shakespeare | Dataset::Leaf | Dataset::Idx => None,
    };
    let want = match k {
        Cnn | TinyCnn | Resnet18 => Some((3, 32)),
        MnistCnn => Some((1, 28)),
        _ => None,
    };
    let msg = match (k, image) {
        (Transformer | Lstm | LstmSmall, None) | (Mlp | Linear, Some(_)) => return Ok(()),
        (_, Some(i)) if Some(i) == want => return Ok(()),
        (Transformer | Lstm | LstmSmall, Some(_)) => {
            "needs a character data set (shakespeare, leaf), not images".to_string()
        }
        (_, None) => "needs images, not characters".to_string(),
        (_, Some((c, s))) => {
            let (wc, ws) = want.unwrap_or((c, s));
            format!("needs {wc}×{ws}×{ws} images, not {c}×{s}×{s}")
        }
    };
    Err(Error::Config(format!(
        "model.kind = \"{k}\" {msg} (data.dataset = \"{d}\")"
    )))
}

/// Refuse a data set whose inputs are not `channels`×`side`×`side` images.
fn needs_images(kind: ModelKind, shape: Shape, channels: usize, side: usize) -> Result<()> {
    if shape.side == side && shape.channels == channels {
        return Ok(());
    }
    let what = match kind {
        ModelKind::MnistCnn => " (mnist, fashion-mnist)",
        _ => "",
    };
    Err(Error::Config(format!(
        "model.kind = \"{kind}\" needs {channels}×{side}×{side} images{what}; this data set has {}×{}×{}",
        shape.channels, shape.side, shape.side
    )))
}

/// The models' check of a whole spec (part of the schema), before anything loads: the model
/// takes the data set's input, and clients train in parallel only without dropout.
pub fn check_spec(s: &Spec) -> Result<()> {
    check_input(s.model.kind, s.data.dataset)?;
    if s.run.client_workers > 1 && Model::has_dropout(&s.model) {
        return Err(Error::Config(format!(
            "key `run.client_workers` = {}: parallel clients need `model.dropout` = 0 (dropout draws from the backend's global generator, so parallel clients would not be reproducible)",
            s.run.client_workers
        )));
    }
    Ok(())
}

impl Model {
    /// The model of `spec` for data of `shape`, its hot ops run by `kernels`.
    pub fn build(
        spec: &ModelSpec,
        shape: Shape,
        kernels: Kernels,
        device: &Device,
    ) -> Result<Model> {
        let k = spec.kind;
        let flat = shape.channels * shape.side * shape.side;
        Ok(match k {
            ModelKind::Cnn | ModelKind::TinyCnn | ModelKind::Resnet18 => {
                needs_images(k, shape, 3, 32)?;
                Self::cifar(spec, shape.classes, kernels, device)
            }
            ModelKind::MnistCnn => {
                needs_images(k, shape, 1, 28)?;
                Model::MnistCnn(mnist_cnn::MnistCnn::new(
                    shape.classes,
                    spec.dropout,
                    kernels,
                    device,
                ))
            }
            ModelKind::Linear => {
                Model::Linear(burn::nn::LinearConfig::new(flat, shape.classes).init(device))
            }
            ModelKind::Mlp => {
                Model::Mlp(cnn::Mlp::new(flat, spec.mlp_hidden, shape.classes, device))
            }
            ModelKind::Transformer | ModelKind::Lstm | ModelKind::LstmSmall => {
                if shape.side != 0 {
                    return Err(Error::Config(format!(
                        "model.kind = \"{k}\" needs a character data set (shakespeare, leaf), not images"
                    )));
                }
                Self::sequence(spec, shape.classes, device)
            }
        })
    }

    /// The CIFAR models: the FedExP CNN, its tiny test twin, ResNet-18.
    fn cifar(spec: &ModelSpec, classes: usize, kernels: Kernels, device: &Device) -> Model {
        let p = spec.projection;
        match spec.kind {
            ModelKind::TinyCnn => Model::Cnn(cnn::Cnn::tiny(classes, p, kernels, device)),
            ModelKind::Resnet18 => Model::ResNet(resnet::ResNet18::new(
                classes,
                spec.head == Head::Fednar,
                p,
                kernels,
                device,
            )),
            _ => Model::Cnn(cnn::Cnn::fedexp(classes, p, kernels, device)),
        }
    }

    /// The character models: the transformer and the LSTMs.
    fn sequence(spec: &ModelSpec, classes: usize, device: &Device) -> Model {
        match spec.kind {
            ModelKind::Transformer => {
                Model::Transformer(transformer::CharTransformer::new(spec, classes, device))
            }
            ModelKind::LstmSmall => Model::Lstm(lstm::CharLstm::new(8, 100, 2, classes, device)),
            _ => Model::Lstm(lstm::CharLstm::new(8, spec.hidden, 2, classes, device)),
        }
    }

    /// Whether a model of this spec draws dropout masks in training (from the backend's
    /// global generator: such runs train one client at a time).
    pub fn has_dropout(spec: &ModelSpec) -> bool {
        spec.dropout > 0.0 && matches!(spec.kind, ModelKind::Transformer | ModelKind::MnistCnn)
    }

    /// Logits and features of a batch (see [`Outputs`]).
    pub fn outputs(&self, input: Input) -> Outputs {
        let (features, logits) = match (self, input) {
            (Model::Cnn(m), Input::Images(x)) => {
                let f = m.features(x);
                (f.clone(), m.classify(f))
            }
            (Model::Mlp(m), Input::Images(x)) => {
                let f = m.features(x.flatten(1, 3));
                (f.clone(), m.classify(f))
            }
            (Model::MnistCnn(m), Input::Images(x)) => {
                let f = m.features(x);
                (f.clone(), m.classify(f))
            }
            (Model::ResNet(m), Input::Images(x)) => {
                let (levels, f) = m.levels(x);
                let logits = m.classify(f.clone());
                return Outputs {
                    logits,
                    features: f,
                    levels,
                };
            }
            (_, input) => {
                let l = self.forward(input);
                (l.clone(), l)
            }
        };
        Outputs {
            logits,
            features,
            levels: Vec::new(),
        }
    }

    /// Logits from an intermediate activation (see [`resnet::ResNet18::forward_from`]); None
    /// for models without levels.
    pub fn forward_from(&self, level: usize, x: Tensor<4>) -> Option<Tensor<2>> {
        match self {
            Model::ResNet(m) => Some(m.forward_from(level, x)),
            _ => None,
        }
    }

    /// Logits `[batch, classes]`.
    pub fn forward(&self, input: Input) -> Tensor<2> {
        match (self, input) {
            (Model::Cnn(m), Input::Images(x)) => m.forward(x),
            (Model::MnistCnn(m), Input::Images(x)) => m.forward(x),
            (Model::Mlp(m), Input::Images(x)) => m.forward(x.flatten(1, 3)),
            (Model::Linear(m), Input::Images(x)) => m.forward(x.flatten(1, 3)),
            (Model::ResNet(m), Input::Images(x)) => m.forward(x),
            (Model::Transformer(m), Input::Tokens(x)) => m.forward(x),
            (Model::Lstm(m), Input::Tokens(x)) => m.forward(x),
            _ => panic!("model and input kind do not match"),
        }
    }
}
