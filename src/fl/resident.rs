//! The device-resident local step (`run.local_step = "device"`, the default on a GPU backend).
//!
//! The host step (`fl/client.rs`) writes the parameters to the device before each step, reads
//! the gradient back, and runs the algorithm's term, the optimizer chain and SGD over flat host
//! vectors: the fastest way on the CPU, where "device" and host share memory, and a round trip
//! of every parameter per step on a GPU. Here the parameters stay in the model on the
//! training device for all of one client's steps: the gradient, the algorithm's
//! [`LocalTerm`], the chain ([`LocalOptimizer::step_tensors`]) and the update are burn tensor
//! ops, and each step reads two numbers back (the loss and the pre-clip norm, for the CSV and
//! the divergence check). The client's anchor and the term's vectors go up once per client,
//! the trained parameters come down once.
//!
//! Algorithms with their own stateful update rule (`Algorithm::local_rule`, the Fed-LAMB
//! family) keep the host step.

use std::ops::Range;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Device, Gradients, Tensor, TensorData};

use super::algorithm::LocalTerm;
use super::step::{LocalOptimizer, StepStats};
use crate::model::Model;

/// What one client's device steps read besides the model: its anchor and the algorithm
/// term's vectors, one flat tensor per parameter tensor.
pub struct Resident {
    anchor: Vec<Tensor<1>>,
    /// Shift k of the term, per parameter tensor.
    shifts: Vec<Vec<Tensor<1>>>,
    /// Where the shift vectors were on the host (each step's term must name the same ones).
    sources: Vec<(usize, usize)>,
}

/// `v` on the device, split into the parameter tensors' flat pieces (one upload).
fn upload(v: &[f32], ranges: &[Range<usize>], device: &Device) -> Vec<Tensor<1>> {
    let t = Tensor::<1>::from_data(TensorData::new(v.to_vec(), [v.len()]), device).inner();
    ranges
        .iter()
        .map(|r| t.clone().slice([r.clone()]))
        .collect()
}

fn source(v: &[f32]) -> (usize, usize) {
    (v.as_ptr() as usize, v.len())
}

impl Resident {
    /// Upload what a client's steps read: `anchor` and the vectors of `term`.
    pub fn begin(
        ranges: &[Range<usize>],
        anchor: &[f32],
        term: &LocalTerm,
        device: &Device,
    ) -> Self {
        Resident {
            anchor: if term.prox != 0.0 {
                upload(anchor, ranges, device)
            } else {
                Vec::new()
            },
            shifts: term
                .shifts
                .iter()
                .map(|(_, v)| upload(v, ranges, device))
                .collect(),
            sources: term.shifts.iter().map(|(_, v)| source(v)).collect(),
        }
    }

    /// One step: the gradient of `loss`, `term`, the chain of `opt` and `x ← x − lr·u`, all on
    /// the device. Returns the updated model, the loss and the step's statistics.
    pub fn step(
        &self,
        model: Model,
        loss: Tensor<1>,
        term: &LocalTerm,
        opt: &LocalOptimizer,
        lr: f32,
    ) -> (Model, f64, StepStats) {
        assert!(
            term.shifts.len() == self.sources.len()
                && term
                    .shifts
                    .iter()
                    .zip(&self.sources)
                    .all(|((_, v), s)| source(v) == *s),
            "an algorithm's local term must name the same vectors at every step of a client"
        );
        let loss_value = loss.clone().inner();
        let grads = loss.backward();
        let mut c = Collect {
            grads: &grads,
            x: Vec::new(),
            g: Vec::new(),
        };
        model.visit(&mut c);
        let Collect { mut x, mut g, .. } = c;
        drop(grads);
        if !term.is_none() {
            for (k, (g, xk)) in g.iter_mut().zip(&x).enumerate() {
                let mut t: Option<Tensor<1>> =
                    (term.prox != 0.0).then(|| (xk.clone() - self.anchor[k].clone()) * term.prox);
                for ((a, _), v) in term.shifts.iter().zip(&self.shifts) {
                    let av = v[k].clone() * *a;
                    t = Some(match t {
                        Some(t) => t + av,
                        None => av,
                    });
                }
                let scaled = if term.scale == 1.0 {
                    g.clone()
                } else {
                    g.clone() * term.scale
                };
                *g = match t {
                    Some(t) => scaled + t,
                    None => scaled,
                };
            }
        }
        let norm = opt.step_tensors(lr, &mut x, &mut g);
        drop(g);
        let model = model.map(&mut Put { x: x.into_iter() });
        // the step's one read: the loss and the norm together
        let read = match norm {
            Some(n) => Tensor::cat(vec![loss_value, n], 0),
            None => loss_value,
        };
        let v = read
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .expect("f32");
        let stats = v
            .get(1)
            .map(|&n| opt.read_norm(n as f64))
            .unwrap_or_default();
        (model, v[0] as f64, stats)
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
struct Put {
    x: std::vec::IntoIter<Tensor<1>>,
}

impl ModuleMapper for Put {
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
