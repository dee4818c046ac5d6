//! K copies of a model as one computation, for the cohort step (`run.cohort`, after HFTA's
//! fused models, Wang et al., MLSys 2021): every parameter tensor of the K copies is one
//! tensor, client after client, and each layer of the K copies is one batched op (a linear
//! layer is a batched matrix product `[K, b, in]·[K, in, out]`). The loss is the sum of the K
//! clients' batch losses, so the gradient in each client's block is that client's own.
//!
//! The copies' parameters come from, and their gradients go to, the flat vectors of the
//! model's [`Layout`], one per client. Models with a stacked form: the linear model and the MLP
//! (here), the plain CNNs (`convnet.rs`: the FedExP CIFAR CNN, LEAF's FEMNIST and CelebA CNNs,
//! the MNIST CNN without dropout; convolutions grouped, one group per copy) and ResNet-18
//! (`resnet.rs`: grouped convolutions and GroupNorms), the character LSTMs (`lstm.rs`: the four
//! gates as batched products), the transformer without dropout (`transformer.rs`); [`why_not`]
//! names what the others lack.

mod convnet;
mod lstm;
mod parts;
mod resnet;
mod transformer;

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Gradients, Int, Tensor, TensorData};

use super::Model;
use super::lstm::CharLstm;
use super::params::Layout;
use super::resnet::ResNet18;
use super::transformer::CharTransformer;
use crate::config::{ModelKind, ModelSpec};
use crate::data::Input;
use convnet::ConvNet;
pub use parts::Outputs3;
use parts::{Cursor, linear_chain, to_channels};

/// Why a model of `spec` has no stacked form yet; None when it has one.
pub fn why_not(spec: &ModelSpec) -> Option<String> {
    let head = "model.projection > 0: the projection head has no stacked form yet";
    let dropout = "the clients' dropout masks have no stacked form yet";
    match spec.kind {
        ModelKind::Linear | ModelKind::Mlp | ModelKind::FemnistCnn | ModelKind::CelebaCnn => None,
        ModelKind::Lstm | ModelKind::LstmSmall => None,
        ModelKind::Transformer if spec.dropout > 0.0 => {
            Some(format!("model.dropout > 0: {dropout}"))
        }
        ModelKind::Transformer => None,
        ModelKind::Cnn | ModelKind::TinyCnn | ModelKind::Resnet18 if spec.projection > 0 => {
            Some(head.into())
        }
        ModelKind::Cnn | ModelKind::TinyCnn | ModelKind::Resnet18 => None,
        ModelKind::MnistCnn if spec.dropout > 0.0 => Some(format!("model.dropout > 0: {dropout}")),
        ModelKind::MnistCnn => None,
        ModelKind::EmnistCnn => Some(format!("the EMNIST CNN has dropout: {dropout}")),
    }
}

/// How the copies compute: a chain of linear layers on the flattened input, a plain CNN's
/// stages before its linear layers, or ResNet-18.
enum Form<'m> {
    /// The linear model (its features are its logits) or the MLP (its hidden layer).
    Linear {
        mlp: bool,
    },
    Lstm(&'m CharLstm),
    Transformer(&'m CharTransformer),
    ConvNet(ConvNet<'m>),
    ResNet(&'m ResNet18),
}

impl<'m> Form<'m> {
    fn of(model: &'m Model) -> Form<'m> {
        match model {
            Model::Linear(_) => Form::Linear { mlp: false },
            Model::Mlp(_) => Form::Linear { mlp: true },
            Model::ResNet(m) => Form::ResNet(m),
            Model::Lstm(m) => Form::Lstm(m),
            Model::Transformer(m) => Form::Transformer(m),
            m => Form::ConvNet(ConvNet::of(m).expect("a model with a stacked form")),
        }
    }
}

/// The parameters of K copies of a model, each tensor flat and client-major, with gradient.
pub struct Stacked<'m> {
    form: Form<'m>,
    params: Vec<Tensor<1>>,
    shapes: Vec<Vec<usize>>,
    copies: usize,
}

impl<'m> Stacked<'m> {
    /// The copies whose parameters are `xs` (one flat vector of `layout` per copy), on
    /// `device`. `model` must have a stacked form ([`why_not`]).
    pub fn new(model: &'m Model, layout: &Layout, xs: &[&[f32]], device: &Device) -> Stacked<'m> {
        let copies = xs.len();
        let params = layout
            .tensors
            .iter()
            .map(|t| {
                let mut v = Vec::with_capacity(copies * t.len);
                xs.iter().for_each(|x| v.extend_from_slice(&x[t.range()]));
                Tensor::<1>::from_data(TensorData::new(v, [copies * t.len]), device).require_grad()
            })
            .collect();
        Self::of(model, layout, params, copies)
    }

    /// The copies whose parameters are `params`: each tensor of `layout`, flat and
    /// client-major (`copies` × its size), on the training device. Their gradients are the
    /// caller's to read (the parameters may be taken from larger leaves).
    pub fn of(
        model: &'m Model,
        layout: &Layout,
        params: Vec<Tensor<1>>,
        copies: usize,
    ) -> Stacked<'m> {
        let shapes = layout.tensors.iter().map(|t| t.shape.clone()).collect();
        Stacked {
            form: Form::of(model),
            params,
            shapes,
            copies,
        }
    }

    /// The logits `[K, b, classes]` of the K copies on `input`, the K clients' batches of b
    /// samples one after another (`[K·b, …]`).
    pub fn logits(&self, input: Input) -> Tensor<3> {
        self.outputs(input).logits
    }

    /// The K copies' logits and features on `input` (as [`Model::outputs`] for each).
    pub fn outputs(&self, input: Input) -> Outputs3 {
        let k = self.copies;
        let mut cursor = Cursor::new(&self.params, &self.shapes, k);
        let x = match (input, &self.form) {
            (Input::Tokens(x), Form::Lstm(m)) => {
                return Outputs3::logits_only(lstm::logits(m, x, &mut cursor));
            }
            (Input::Tokens(x), Form::Transformer(m)) => {
                return Outputs3::logits_only(transformer::logits(m, x, &mut cursor));
            }
            (Input::Images(x), _) => x,
            _ => panic!("a stacked model's input"),
        };
        match &self.form {
            Form::Linear { mlp } => {
                let flat: Tensor<2> = x.flatten(1, 3);
                let [n, d] = flat.dims();
                let out = linear_chain(flat.reshape([k, n / k, d]), &mut cursor);
                match mlp {
                    true => out,
                    false => Outputs3::logits_only(out.logits),
                }
            }
            Form::ConvNet(net) => net.outputs(x, &mut cursor),
            Form::ResNet(m) => resnet::outputs(m, to_channels(x, k), &mut cursor),
            Form::Lstm(_) | Form::Transformer(_) => panic!("the character models read characters"),
        }
    }

    /// Each client's mean cross-entropy on its batch `[K]`, from the logits `[K, b, classes]`
    /// and the targets `[K·b]`. On flex each client's is computed as one client's is (burn's
    /// cross-entropy: its logits' log-softmax, the targets picked, their `mean`), so that a
    /// cohort's losses, and the `train_loss` column, are one at a time's to the bit: `mean_dim`
    /// over the cohort sums the b values in another order than `mean` does.
    pub fn losses(logits: Tensor<3>, targets: Tensor<1, Int>) -> Tensor<1> {
        let [k, b, c] = logits.dims();
        if crate::kernels::is_flex(&logits.device()) {
            let each = (0..k).map(|i| {
                let own: Tensor<2> = logits.clone().narrow(0, i, 1).reshape([b, c]);
                let y = targets.clone().narrow(0, i * b, b).reshape([b, 1]);
                log_softmax(own, 1).gather(1, y).reshape([b]).mean().neg()
            });
            return Tensor::cat(each.collect(), 0);
        }
        let picked = log_softmax(logits, 2).gather(2, targets.reshape([k, b, 1]));
        picked.mean_dim(1).reshape([k]).neg()
    }

    /// Move each copy's gradient out of `grads` into its flat vector `out[k]` (zero where a
    /// parameter has none).
    pub fn read_grads(&self, grads: &mut Gradients, out: &mut [&mut [f32]], layout: &Layout) {
        for (p, t) in self.params.iter().zip(&layout.tensors) {
            let Some(g) = p.grad_remove(grads) else {
                out.iter_mut().for_each(|o| o[t.range()].fill(0.0));
                continue;
            };
            let data = g.into_data().convert::<f32>();
            let all = data.as_slice::<f32>().expect("f32");
            for (o, chunk) in out.iter_mut().zip(all.chunks(t.len)) {
                o[t.range()].copy_from_slice(chunk);
            }
        }
    }
}
