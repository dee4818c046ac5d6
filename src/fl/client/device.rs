//! The device-resident local step (`run.local_step = "device"`, the default on a GPU backend).
//!
//! The host step writes the parameters to the device before each step, reads the gradient back,
//! and runs the chain over flat host vectors: the fastest way on the CPU, where "device" and
//! host share memory, and a round trip of every parameter per step on a GPU. Here the
//! parameters stay in the model on the training device for all of one client's steps: the
//! gradient, the chain ([`DeviceChain`]) and the update are burn tensor ops, and no step reads
//! anything back: its two numbers (the loss and the pre-clip norm, for the CSV and the
//! divergence check) stay on the device until the client's steps are done
//! ([`super::deferred`]). The client's anchor and the term's vectors go up once per client, the
//! trained parameters come down once.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Gradients, Tensor};

use super::chain::DeviceChain;
use super::deferred::read_f32;
use crate::model::Model;
use crate::optim::{Ctx, Log, RowFactor};

/// One step: the gradient of `loss`, the chain and `x ← x − l·u` (l = `ctx.lr`), all on the
/// device. Returns the updated model and the step's numbers, left on the device (`[loss]`, or
/// `[loss, pre-clip norm]` when the chain clips or decays): [`read`] turns them into the loss
/// and the log once the client's steps are done.
pub fn step(chain: &DeviceChain, model: Model, loss: Tensor<1>, ctx: &Ctx) -> (Model, Tensor<1>) {
    let loss_value = loss.clone().inner();
    let grads = loss.backward();
    let mut c = Collect {
        grads: &grads,
        x: Vec::new(),
        g: Vec::new(),
    };
    model.visit(&mut c);
    let Collect { x, g, .. } = c;
    drop(grads);
    // one client: a row of each `[1, n]`
    let row =
        |v: Vec<Tensor<1>>| -> Vec<Tensor<2>> { v.into_iter().map(|t| t.unsqueeze()).collect() };
    let (mut x, mut g) = (row(x), row(g));
    let norm = chain.step(&mut x, &mut g, &[*ctx], &RowFactor::One(ctx.lr as f32));
    drop(g);
    let x = x.into_iter().map(|t| t.flatten(0, 1));
    let model = model.map(&mut Put { x });
    let numbers = match norm {
        Some(n) => Tensor::cat(vec![loss_value, n.reshape([1])], 0),
        None => loss_value,
    };
    (model, numbers)
}

/// The loss and the log of a step from its numbers as [`step`] left them, once read.
pub fn read(chain: &DeviceChain, numbers: &[f32]) -> (f64, Log) {
    let log = numbers
        .get(1)
        .map(|&n| chain.read_norm(n as f64))
        .unwrap_or_default();
    (numbers.first().map_or(f64::NAN, |&l| l as f64), log)
}

/// Copy the model's parameters into `out` (the layout's order) with one read.
pub fn read_params(model: &Model, out: &mut [f32]) {
    let mut c = Flat(Vec::new());
    model.visit(&mut c);
    let v = read_f32(Tensor::cat(c.0, 0));
    assert_eq!(
        v.len(),
        out.len(),
        "flat vector length does not match the model"
    );
    out.copy_from_slice(&v);
}

/// Each parameter tensor, flat, without autodiff.
struct Flat(Vec<Tensor<1>>);

impl ModuleVisitor for Flat {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let v = param.val().inner();
        let n = v.shape().num_elements();
        self.0.push(v.reshape([n]));
    }
}

/// Each parameter tensor and its gradient, flat, on the device without autodiff (a parameter
/// without a gradient gets zeros, as in the host step).
struct Collect<'a> {
    grads: &'a Gradients,
    x: Vec<Tensor<1>>,
    g: Vec<Tensor<1>>,
}

impl ModuleVisitor for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let v = param.val();
        let n = v.shape().num_elements();
        let g = v.grad(self.grads);
        let x = v.inner().reshape([n]);
        let g = match g {
            Some(g) => g.reshape([n]),
            None => Tensor::zeros([n], &x.device()),
        };
        self.x.push(x);
        self.g.push(g);
    }
}

/// Put the updated flat tensors back as the model's parameters (autodiff leaves again).
struct Put<I> {
    x: I,
}

impl<I: Iterator<Item = Tensor<1>>> ModuleMapper for Put<I> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, t, mapper) = param.consume();
        let shape = t.shape();
        let req = t.is_require_grad();
        drop(t);
        let x = self.x.next().expect("one tensor per parameter");
        let mut nt = Tensor::from_inner(x.reshape(shape));
        if req {
            nt = nt.require_grad();
        }
        Param::from_mapped_value(id, nt, mapper)
    }
}
