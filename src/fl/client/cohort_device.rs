//! The device-resident cohort step (`run.cohort` with `run.local_step = "device"`, the default
//! on a GPU backend): the cohort's parameters stay on the training device for all its steps,
//! each of the model's parameter tensors one `[K, n]` tensor with a row per client. A step
//! draws each client's batch on the host as when it trains alone, runs the forward of every
//! group of equal batch sizes on its rows (all rows, or the group's gathered), one backward of
//! the groups' summed losses (so each row's gradient is its client's), and the chain and the
//! update on the rows ([`DeviceChain`]: each row its own term, clip and learning rate; a client
//! past its last step has rate 0 and stays as it is). Each step reads one tensor back: the
//! clients' losses and pre-clip norms. The anchors and the terms' vectors go up once per
//! cohort; the trained parameters come down once.

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::chain::DeviceChain;
use super::cohort_batches::{Drawn, batches_of, ctx_at, draw, groups, input_of, stopped};
use super::cohort_loss::Objectives;
use super::trainer::{LocalStats, Work};
use crate::data::FedData;
use crate::model::Model;
use crate::model::params::Layout;
use crate::model::stacked::Stacked;
use crate::optim::{Ctx, RowFactor, upload_rows};
use crate::rng::Rng;

/// What the cohort's device steps read: the model (its stacked form), its layout and the device.
pub struct Resident<'a> {
    pub model: &'a Model,
    pub layout: &'a Layout,
    pub device: &'a Device,
    pub objectives: &'a Objectives<'a>,
}

impl Resident<'_> {
    /// Train `works`' clients with `chain` (built from their plans), each with its own stream
    /// `rngs[k]`; Δ_k = x_k − anchor_k lands in `out[k]`.
    pub fn train(
        &self,
        data: &FedData,
        chain: &DeviceChain,
        works: &[Work],
        rngs: &mut [Rng],
        out: &mut [Vec<f32>],
    ) -> Vec<LocalStats> {
        let ranges: Vec<_> = self.layout.tensors.iter().map(|t| t.range()).collect();
        let anchors: Vec<Option<&[f32]>> = works.iter().map(|w| Some(w.anchor)).collect();
        let mut x = upload_rows(&anchors, &ranges, self.device);
        let (mut batches, steps) = batches_of(data, works);
        let mut stats = vec![LocalStats::default(); works.len()];
        for step in 0..steps {
            if stopped(works) {
                break;
            }
            let drawn = draw(data, works, &mut batches, rngs, step, self.device);
            let ctx: Vec<Ctx> = works.iter().map(|w| ctx_at(data, w, step)).collect();
            x = self.step(x, groups(drawn), chain, &ctx, &mut stats, step);
        }
        self.read_deltas(x, works, out);
        stats
    }

    /// One step of every client in `groups`: forwards, one backward, the chain on the rows, and
    /// the step's one read (the losses and norms), recorded in `stats`.
    fn step(
        &self,
        mut x: Vec<Tensor<2>>,
        groups: Vec<Vec<Drawn>>,
        chain: &DeviceChain,
        ctx: &[Ctx],
        stats: &mut [LocalStats],
        step: usize,
    ) -> Vec<Tensor<2>> {
        let n = ctx.len();
        let leaves: Vec<Tensor<2>> = x
            .iter()
            .map(|t| Tensor::from_inner(t.clone()).require_grad())
            .collect();
        let mut losses = Vec::with_capacity(groups.len());
        let mut total: Option<Tensor<1>> = None;
        for g in &groups {
            let per = self.group_losses(&leaves, g, n);
            losses.push(per.clone().inner());
            let s = per.sum();
            total = Some(match total {
                Some(t) => t + s,
                None => s,
            });
        }
        let Some(total) = total else { return x };
        let grads = total.backward();
        let mut g: Vec<Tensor<2>> = leaves
            .iter()
            .zip(&x)
            .map(|(l, xt)| l.grad(&grads).unwrap_or_else(|| xt.zeros_like()))
            .collect();
        drop(grads);
        drop(leaves);
        let mut rates = vec![0f32; n];
        groups
            .iter()
            .flatten()
            .for_each(|d| rates[d.k] = ctx[d.k].lr as f32);
        let norm = chain.step(&mut x, &mut g, ctx, &RowFactor::new(&rates, self.device));
        let trained: usize = groups.iter().map(Vec::len).sum();
        let has_norm = norm.is_some();
        if let Some(nm) = norm {
            losses.push(nm.reshape([n]));
        }
        let read = Tensor::cat(losses, 0).into_data().convert::<f32>();
        let read = read.as_slice::<f32>().expect("f32");
        let norms = has_norm.then(|| &read[trained..]);
        for (d, &loss) in groups.iter().flatten().zip(read) {
            let log = norms
                .map(|v| chain.read_norm(f64::from(v[d.k])))
                .unwrap_or_default();
            stats[d.k].record(step, f64::from(loss), d.len, &log);
        }
        x
    }

    /// Each client's loss `[k]` on its batch, for the clients of `group` (batches of one size),
    /// their rows taken from `leaves` (all `n` rows when the group is every client).
    fn group_losses(&self, leaves: &[Tensor<2>], group: &[Drawn], n: usize) -> Tensor<1> {
        let k = group.len();
        // the group's rows: all of them, or gathered (one index upload)
        let idx = (k < n).then(|| {
            let idx: Vec<i64> = group.iter().map(|d| d.k as i64).collect();
            Tensor::<1, Int>::from_data(TensorData::new(idx, [k]), self.device)
        });
        let params: Vec<Tensor<1>> = leaves
            .iter()
            .map(|l| {
                let rows = match &idx {
                    None => l.clone(),
                    Some(idx) => l.clone().select(0, idx.clone()),
                };
                let len = rows.dims()[1];
                rows.reshape([k * len])
            })
            .collect();
        let stacked = Stacked::of(self.model, self.layout, params, k);
        let ys: Vec<Tensor<1, Int>> = group.iter().map(|d| d.y.clone()).collect();
        let out = stacked.outputs(input_of(group));
        self.objectives.losses(out, group, Tensor::cat(ys, 0))
    }

    /// Read the rows back once (`[K, n]`: row k is client k's flat vector, the tensors side by
    /// side) and leave Δ_k = x_k − anchor_k in `out[k]`.
    fn read_deltas(&self, x: Vec<Tensor<2>>, works: &[Work], out: &mut [Vec<f32>]) {
        let all = Tensor::cat(x, 1).into_data().convert::<f32>();
        let all = all.as_slice::<f32>().expect("f32");
        for ((o, w), row) in out.iter_mut().zip(works).zip(all.chunks(self.layout.total)) {
            o.clear();
            o.extend(row.iter().zip(w.anchor).map(|(x, a)| x - a));
        }
    }
}
