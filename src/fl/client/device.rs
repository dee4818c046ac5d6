//! The device-resident local step (`run.local_step = "device"`, the default on a GPU backend).
//!
//! The host step uploads the parameters before each step, reads the gradient back, and runs
//! the chain over flat host vectors: the fastest way on the CPU, where "device" and host share
//! memory, and a round trip of every parameter per step on a GPU. Here the parameters stay on
//! the training device for all of one client's steps, each tensor a row `[1, n]`: the gradient,
//! the chain ([`DeviceChain`]) and the update are burn tensor ops, and no step reads anything
//! back: its two numbers (the loss and the pre-clip norm, for the CSV and the divergence check)
//! stay on the device until the client's steps are done ([`super::deferred`]). The client's
//! anchor and the term's vectors go up once per client, the trained parameters come down once.

use burn::tensor::{Device, Tensor};

use super::chain::DeviceChain;
use super::deferred::read_f32;
use crate::model::Model;
use crate::optim::{Ctx, Log, RowFactor, upload_rows};

/// `anchor`'s parameter tensors as rows `[1, n]` on `device`.
pub fn upload(model: &Model, anchor: &[f32], device: &Device) -> Vec<Tensor<2>> {
    let ranges: Vec<_> = model.layout().tensors.iter().map(|t| t.range()).collect();
    upload_rows(&[Some(anchor)], &ranges, device)
}

/// The rows as the step's parameters: flat leaves with gradient.
pub fn leaves(rows: &[Tensor<2>]) -> Vec<Tensor<1>> {
    rows.iter()
        .map(|t| Tensor::from_inner(t.clone().flatten(0, 1)).require_grad())
        .collect()
}

/// One step: the gradient of `loss` at `leaves` (made from `rows`), the chain and `x ← x − l·u`
/// (l = `ctx.lr`), all on the device. Returns the updated rows and the step's numbers, left on
/// the device (`[loss]`, or `[loss, pre-clip norm]` when the chain clips or decays): [`read`]
/// turns them into the loss and the log once the client's steps are done.
pub fn step(
    chain: &DeviceChain,
    mut rows: Vec<Tensor<2>>,
    leaves: &[Tensor<1>],
    loss: Tensor<1>,
    ctx: &Ctx,
) -> (Vec<Tensor<2>>, Tensor<1>) {
    let loss_value = loss.clone().inner();
    let grads = loss.backward();
    let mut g: Vec<Tensor<2>> = leaves
        .iter()
        .zip(&rows)
        .map(|(l, x)| match l.grad(&grads) {
            Some(g) => g.unsqueeze(),
            None => x.zeros_like(),
        })
        .collect();
    drop(grads);
    let norm = chain.step(&mut rows, &mut g, &[*ctx], &RowFactor::One(ctx.lr as f32));
    let numbers = match norm {
        Some(n) => Tensor::cat(vec![loss_value, n.reshape([1])], 0),
        None => loss_value,
    };
    (rows, numbers)
}

/// The loss and the log of a step from its numbers as [`step`] left them, once read.
pub fn read(chain: &DeviceChain, numbers: &[f32]) -> (f64, Log) {
    let log = numbers
        .get(1)
        .map(|&n| chain.read_norm(n as f64))
        .unwrap_or_default();
    (numbers.first().map_or(f64::NAN, |&l| l as f64), log)
}

/// Copy the rows into `out` (the layout's order) with one read.
pub fn read_params(rows: Vec<Tensor<2>>, out: &mut [f32]) {
    let v = read_f32(Tensor::cat(rows, 1));
    assert_eq!(
        v.len(),
        out.len(),
        "flat vector length does not match the model"
    );
    out.copy_from_slice(&v);
}
