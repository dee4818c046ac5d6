//! The models of the three papers, each written once as a computation over its parameters
//! with a leading copies axis (K ≥ 1; after HFTA's fused models, Wang et al., MLSys 2021, and
//! `torch.func.functional_call` over stacked state): one client's training is K = 1, a cohort's
//! (`run.cohort`) K clients at once, the evaluation K = 1 without autodiff. The parameters are
//! the model's flat vector ([`params::Layout`]), initialised by fedrun itself (PyTorch's
//! defaults, [`init`]) from the run seed, so the initial model is the same on every backend.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`Model`]: which network, its layout and kernels; the input checks |
//! | `network.rs` | what a model is: [`network::Network`], a layout and a forward over K copies |
//! | `copies.rs` | [`copies::Stacked`]: K copies' parameters as tensors, their outputs, losses and gradients |
//! | `outputs.rs` | what a forward gives: logits, features, ResNet's levels |
//! | `ops.rs` | [`ops::Ops`], the one owner of a forward's copies: their parameters, kernels and dropout, each layer of K copies at once |
//! | `convnet.rs` | the plain CNNs, the MLP and softmax regression |
//! | `resnet.rs` | ResNet-18 with GroupNorm |
//! | `transformer.rs`, `lstm.rs` | the character models |
//! | `params.rs` | the flat layout, and the leaves (linear, convolution, norm) a model's layers hold into it |
//! | `init.rs`, `size.rs`, `unread.rs` | initialisation by each tensor's role, size estimates (parameters counted from the tree), the keys a model reads |

mod convnet;
pub mod copies;
pub mod init;
pub mod lstm;
pub mod network;
pub mod ops;
mod outputs;
pub mod params;
mod resnet;
pub mod size;
mod transformer;
mod unread;

pub use ops::{Seeds, site_seed};
pub use outputs::{Outputs, Outputs3};
pub use unread::unread_keys;

use std::sync::Arc;

use crate::config::{Head, ModelKind, ModelSpec, Spec};
use crate::data::Sample;
use crate::error::{Error, Result};
use crate::kernels::Kernels;
use network::Network;
use params::Layout;

/// A model: its network (its sizes and computation), its parameters' layout and the kernels its
/// layers run on. Its parameters are not here: [`copies::Stacked`] holds K copies of them.
#[derive(Clone, Debug)]
pub struct Model {
    net: Arc<dyn Network>,
    layout: Layout,
    kernels: Kernels,
}

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

/// The images a model of kind `k` is declared for, `(channels, side)`, from its inputs' `flat`
/// floats: the side it takes that holds them, else its first (an estimate before the data's
/// shape is known); `flat` floats of side 1 for the models of any input.
fn image_of(k: ModelKind, flat: usize) -> (usize, usize) {
    match takes(k) {
        Some((c, sides)) if c > 0 => {
            let fits = sides.iter().copied().find(|s| c * s * s == flat);
            (c, fits.unwrap_or(sides[0]))
        }
        _ => (flat, 1),
    }
}

/// Why model `k` cannot take the inputs `sample` (a transformer on images, a CNN on text, the
/// CIFAR models on MNIST's 28×28, …); None if it can, or if the images' shape is known only once
/// loaded (checked then).
fn refusal(k: ModelKind, sample: Sample) -> Option<String> {
    match (takes(k), sample) {
        (None, Sample::Characters) | (Some(_), Sample::Unknown) => None,
        (Some((0, _)), Sample::Image { .. }) => None,
        (None, _) => Some("needs a character data set (shakespeare, leaf), not images".into()),
        (Some(_), Sample::Characters) => Some("needs images, not characters".into()),
        (Some((wc, sides)), Sample::Image { channels, side }) => {
            (wc != channels || !sides.contains(&side)).then(|| {
                format!(
                    "needs {wc}×{s}×{s} images, not {channels}×{side}×{side}",
                    s = sides[0]
                )
            })
        }
    }
}

/// The models' check of a whole spec (part of the schema), before anything loads: the model
/// takes the data set's input.
pub fn check_spec(s: &Spec) -> Result<()> {
    let k = s.model.kind;
    if let Some(why) = refusal(k, crate::data::info(&s.data).sample) {
        return Err(Error::Config(format!(
            "model.kind = \"{k}\" {why} (data.dataset = \"{}\")",
            s.data.dataset
        )));
    }
    if k == ModelKind::Resnet18
        && s.model.head == Head::Fednar
        && matches!(crate::data::info(&s.data).sample, Sample::Image { side, .. } if side != 32)
    {
        return Err(Error::Config(format!(
            "model.head = \"fednar\" pools the 4×4 map of 32×32 inputs; data.dataset = \"{}\" needs model.head = \"global\"",
            s.data.dataset
        )));
    }
    Ok(())
}

/// The network of `spec` for inputs of `flat` floats (images; the character models' are 0) and
/// `classes` classes, its parameters declared.
pub(crate) fn network(spec: &ModelSpec, flat: usize, classes: usize) -> Arc<dyn Network> {
    let image = image_of(spec.kind, flat);
    match spec.kind {
        ModelKind::Resnet18 => Arc::new(resnet::ResNet::new(
            classes,
            spec.head == Head::Fednar,
            spec.projection,
            image.1,
        )),
        ModelKind::Transformer => Arc::new(transformer::Transformer::new(spec, classes)),
        ModelKind::LstmSmall => Arc::new(lstm::Lstm::new(100, 2, classes)),
        ModelKind::Lstm => Arc::new(lstm::Lstm::new(spec.hidden, 2, classes)),
        ModelKind::Cnn
        | ModelKind::TinyCnn
        | ModelKind::MnistCnn
        | ModelKind::EmnistCnn
        | ModelKind::FemnistCnn
        | ModelKind::CelebaCnn
        | ModelKind::Mlp
        | ModelKind::Linear => Arc::new(convnet::ConvNet::of(spec, image, classes)),
    }
}

impl Model {
    /// The model of `spec` for data of `shape`, its hot ops run by `kernels`.
    pub fn build(spec: &ModelSpec, shape: Shape, kernels: Kernels) -> Result<Model> {
        let k = spec.kind;
        let flat = shape.channels * shape.side * shape.side;
        let sample = match shape.side {
            0 => Sample::Characters,
            side => Sample::Image {
                channels: shape.channels,
                side,
            },
        };
        // the loaded data's shape (the flat models take any input)
        if let Some(why) = refusal(k, sample).filter(|_| takes(k).is_none_or(|t| t.0 > 0)) {
            return Err(Error::Config(format!(
                "model.kind = \"{k}\" {why} (this data set)"
            )));
        }
        let net = network(spec, flat, shape.classes);
        let layout = net.layout().clone();
        Ok(Model {
            net,
            layout,
            kernels,
        })
    }

    /// Where each parameter tensor lives in the flat vector.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Whether each sample's outputs depend on its own input alone ([`Network::rows_independent`]).
    pub fn rows_independent(&self) -> bool {
        self.net.rows_independent()
    }
}
