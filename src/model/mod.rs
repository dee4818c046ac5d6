//! The models of the three papers, behind one [`Model`] enum so the engine handles one type.
//! Every model's parameters are read and written as one flat vector (see [`params`]), and are
//! initialised by fedrun itself (PyTorch's defaults, [`init`]) from the run seed, so the
//! initial model is the same on every backend.

pub mod cnn;
pub mod emnist_cnn;
pub mod init;
pub mod leaf_cnn;
pub mod lstm;
pub mod mnist_cnn;
pub mod params;
pub mod projection;
pub mod resnet;
pub mod size;
pub mod stacked;
pub mod transformer;
mod unread;

pub use unread::unread_keys;

use burn::module::Module;
use burn::tensor::{Device, Tensor};

use crate::config::{DataSpec, Head, ModelKind, ModelSpec, Spec};
use crate::data::{Input, Sample};
use crate::error::{Error, Result};
use crate::kernels::Kernels;

#[derive(Module, Debug)]
pub enum Model {
    Cnn(cnn::Cnn),
    MnistCnn(mnist_cnn::MnistCnn),
    EmnistCnn(emnist_cnn::EmnistCnn),
    FemnistCnn(leaf_cnn::FemnistCnn),
    CelebaCnn(leaf_cnn::CelebaCnn),
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

/// An image model as a representation of its input and a classifier on that representation.
pub trait Classifier {
    fn features(&self, x: Tensor<4>) -> Tensor<2>;
    fn classify(&self, features: Tensor<2>) -> Tensor<2>;
}

/// `Classifier` from the models' own `features` and `classify`.
macro_rules! classifier {
    ($($t:ty),*) => {$(
        impl Classifier for $t {
            fn features(&self, x: Tensor<4>) -> Tensor<2> {
                <$t>::features(self, x)
            }
            fn classify(&self, features: Tensor<2>) -> Tensor<2> {
                <$t>::classify(self, features)
            }
        }
    )*};
}

classifier!(
    cnn::Cnn,
    mnist_cnn::MnistCnn,
    emnist_cnn::EmnistCnn,
    leaf_cnn::FemnistCnn,
    leaf_cnn::CelebaCnn
);

/// What the data set tells the model: input kind and number of classes.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub channels: usize,
    pub side: usize,
    pub classes: usize,
}

/// The image sides a model takes: `(channels, sides)`; None for the character models, and
/// an empty list for the models of any input (MLP, linear).
fn takes(k: ModelKind) -> Option<(usize, &'static [usize])> {
    use ModelKind::*;
    match k {
        Cnn | TinyCnn => Some((3, &[32])),
        // 32×32 (CIFAR) and Tiny-ImageNet's 64×64 (with the global pool)
        Resnet18 => Some((3, &[32, 64])),
        MnistCnn | EmnistCnn | FemnistCnn => Some((1, &[28])),
        CelebaCnn => Some((3, &[84])),
        Mlp | Linear => Some((0, &[])),
        Transformer | Lstm | LstmSmall => None,
    }
}

/// Refuse a model whose input the data set does not give (a transformer on images, a CNN on
/// text, the CIFAR models on MNIST's 28×28, …).
fn check_input(k: ModelKind, d: &DataSpec) -> Result<()> {
    let sample = crate::data::info(d).sample;
    let msg = match (takes(k), sample) {
        (None, Sample::Characters) | (Some((0, _)), Sample::Image { .. } | Sample::Unknown) => {
            return Ok(());
        }
        // images whose shape is known only once loaded (checked then)
        (Some(_), Sample::Unknown) => return Ok(()),
        (None, _) => "needs a character data set (shakespeare, leaf), not images".to_string(),
        (Some(_), Sample::Characters) => "needs images, not characters".to_string(),
        (Some((wc, sides)), Sample::Image { channels, side }) => {
            if wc == channels && sides.contains(&side) {
                return Ok(());
            }
            format!(
                "needs {wc}×{s}×{s} images, not {channels}×{side}×{side}",
                s = sides[0]
            )
        }
    };
    Err(Error::Config(format!(
        "model.kind = \"{k}\" {msg} (data.dataset = \"{}\")",
        d.dataset
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
    check_input(s.model.kind, &s.data)?;
    if s.model.kind == ModelKind::Resnet18
        && s.model.head == Head::Fednar
        && matches!(crate::data::info(&s.data).sample, Sample::Image { side, .. } if side != 32)
    {
        return Err(Error::Config(format!(
            "model.head = \"fednar\" pools the 4×4 map of 32×32 inputs; data.dataset = \"{}\" needs model.head = \"global\"",
            s.data.dataset
        )));
    }
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
        if let Some((c, sides)) = takes(k).filter(|t| t.0 > 0)
            && !sides.contains(&shape.side)
        {
            needs_images(k, shape, c, sides[0])?;
        }
        let classes = shape.classes;
        Ok(match k {
            ModelKind::Cnn | ModelKind::TinyCnn | ModelKind::Resnet18 => {
                needs_images(k, shape, 3, shape.side)?;
                Self::cifar(spec, classes, kernels, device)
            }
            ModelKind::EmnistCnn => {
                needs_images(k, shape, 1, 28)?;
                Model::EmnistCnn(emnist_cnn::EmnistCnn::new(classes, kernels, device))
            }
            ModelKind::FemnistCnn => {
                needs_images(k, shape, 1, 28)?;
                Model::FemnistCnn(leaf_cnn::FemnistCnn::new(classes, kernels, device))
            }
            ModelKind::CelebaCnn => {
                needs_images(k, shape, 3, 84)?;
                Model::CelebaCnn(leaf_cnn::CelebaCnn::new(classes, kernels, device))
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
                Self::sequence(spec, shape.classes, kernels, device)
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
    fn sequence(spec: &ModelSpec, classes: usize, kernels: Kernels, device: &Device) -> Model {
        match spec.kind {
            ModelKind::Transformer => Model::Transformer(transformer::CharTransformer::new(
                spec, classes, kernels, device,
            )),
            ModelKind::LstmSmall => {
                Model::Lstm(lstm::CharLstm::new(8, 100, 2, classes, kernels, device))
            }
            _ => Model::Lstm(lstm::CharLstm::new(
                8,
                spec.hidden,
                2,
                classes,
                kernels,
                device,
            )),
        }
    }

    /// Whether a model of this spec draws dropout masks in training (from the backend's
    /// global generator: such runs train one client at a time).
    pub fn has_dropout(spec: &ModelSpec) -> bool {
        spec.kind == ModelKind::EmnistCnn
            || spec.dropout > 0.0
                && matches!(spec.kind, ModelKind::Transformer | ModelKind::MnistCnn)
    }

    /// The image models read as a representation and a classifier on it.
    fn classifier(&self) -> Option<&dyn Classifier> {
        Some(match self {
            Model::Cnn(m) => m,
            Model::MnistCnn(m) => m,
            Model::EmnistCnn(m) => m,
            Model::FemnistCnn(m) => m,
            Model::CelebaCnn(m) => m,
            _ => return None,
        })
    }

    /// Logits and features of a batch (see [`Outputs`]).
    pub fn outputs(&self, input: Input) -> Outputs {
        let (features, logits) = match (self.classifier(), self, input) {
            (Some(c), _, Input::Images(x)) => {
                let f = c.features(x);
                (f.clone(), c.classify(f))
            }
            (_, Model::Mlp(m), Input::Images(x)) => {
                let f = m.features(x.flatten(1, 3));
                (f.clone(), m.classify(f))
            }
            (_, Model::ResNet(m), Input::Images(x)) => {
                let (levels, f) = m.levels(x);
                let logits = m.classify(f.clone());
                return Outputs {
                    logits,
                    features: f,
                    levels,
                };
            }
            (_, _, input) => {
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
            (
                Model::EmnistCnn(_) | Model::FemnistCnn(_) | Model::CelebaCnn(_),
                Input::Images(x),
            ) => {
                let c = self.classifier().expect("a classifier");
                c.classify(c.features(x))
            }
            (Model::Mlp(m), Input::Images(x)) => m.forward(x.flatten(1, 3)),
            (Model::Linear(m), Input::Images(x)) => m.forward(x.flatten(1, 3)),
            (Model::ResNet(m), Input::Images(x)) => m.forward(x),
            (Model::Transformer(m), Input::Tokens(x)) => m.forward(x),
            (Model::Lstm(m), Input::Tokens(x)) => m.forward(x),
            _ => panic!("model and input kind do not match"),
        }
    }
}
