//! The device-resident steps (`run.local_step = "device"`, the default on a GPU backend): the
//! clients' parameters stay on the training device for all their steps,
//! each of the model's parameter tensors one `[K, n]` tensor with a row per client. A step
//! draws each client's batch on the host as when it trains alone, runs the forward of every
//! group of equal batch sizes on its rows (all rows, or the group's gathered), one backward of
//! the groups' summed losses (so each row's gradient is its client's), and the chain and the
//! update on the rows ([`DeviceChain`]: each row its own term, clip, rule state and learning
//! rate; a client past its last step stays as it is). A term that reads the starting model's
//! gradient on the batch (Mime's) gets it from the same backward: the starting rows run the
//! same batches with the same dropout masks beside the trained ones. No step reads anything back: the clients'
//! losses and pre-clip norms stay on the device until the cohort's steps are done
//! ([`super::deferred`]). The anchors, the terms' vectors and the rules' moments go up once per
//! cohort; the trained parameters (and the moments a rule ends with) come down once.

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::chain::DeviceChain;
use super::deferred::{Deferred, read_f32};
use super::draw::{Drawn, batches_of, draw, groups, input_of, stopped};
use super::objectives::Objectives;
use super::work::{LocalStats, Work, step_masks};
use crate::data::FedData;
use crate::model::copies::Stacked;
use crate::model::{Model, Outputs3};
use crate::optim::{Moments, upload_rows};
use crate::rng::Rng;

/// What the device steps read: the model, the device and the clients' objectives.
pub struct Resident<'a> {
    pub model: &'a Model,
    pub device: &'a Device,
    pub objectives: &'a Objectives<'a>,
}

impl Resident<'_> {
    /// Train `works`' clients with `chain` (built from their plans), each with its own stream
    /// `rngs[k]`; Δ_k = x_k − anchor_k lands in `out[k]`.
    pub fn train(
        &self,
        data: &FedData,
        chain: &mut DeviceChain,
        works: &[Work],
        rngs: &mut [Rng],
        out: &mut [Vec<f32>],
    ) -> Vec<LocalStats> {
        let ranges = self.model.layout().ranges();
        let anchors: Vec<Option<&[f32]>> = works.iter().map(|w| Some(w.anchor)).collect();
        let mut x = upload_rows(&anchors, &ranges, self.device);
        // the starting rows, for a term that reads their gradient (the same buffers: x moves on)
        let start: Vec<Tensor<2>> = match chain.reads_anchor_grad() {
            true => x.clone(),
            false => Vec::new(),
        };
        let (mut batches, steps) = batches_of(data, works);
        let mut stats = vec![LocalStats::default(); works.len()];
        let (mut pending, mut trained) = (Deferred::default(), Vec::new());
        for step in 0..steps {
            if stopped(works) {
                break;
            }
            let drawn = draw(data, works, &mut batches, rngs, step, self.device);
            let groups = groups(drawn);
            let who: Vec<(usize, usize)> = groups.iter().flatten().map(|d| (d.k, d.len)).collect();
            let numbers;
            let masks: Vec<u64> = works.iter().map(|w| step_masks(w, step)).collect();
            (x, numbers) = self.step(x, &start, groups, chain, &masks);
            if let Some(t) = numbers {
                pending.push(t);
                trained.push((step, who));
            }
        }
        record(chain, pending, &trained, &mut stats);
        self.read_deltas(x, works, out);
        if let Some((m, v)) = chain.take_moments() {
            // each row m then v, in one read
            let total = self.model.layout().total;
            let both = read_f32(Tensor::cat(m.into_iter().chain(v).collect(), 1));
            for (st, row) in stats.iter_mut().zip(both.chunks(2 * total)) {
                let (m, v) = row.split_at(total);
                st.uplink.moments = Some(Moments {
                    m: m.to_vec(),
                    v: v.to_vec(),
                });
            }
        }
        stats
    }

    /// One step of every client in `groups`: forwards, one backward, the chain on the rows
    /// (with `start`'s rows' gradients on the same batches, when the chain reads them: one
    /// backward for both). The step's numbers stay on the device: the trained clients' losses
    /// (in `groups`' order), then every row's pre-clip norm when the chain clips or decays.
    fn step(
        &self,
        mut x: Vec<Tensor<2>>,
        start: &[Tensor<2>],
        groups: Vec<Vec<Drawn>>,
        chain: &mut DeviceChain,
        masks: &[u64],
    ) -> (Vec<Tensor<2>>, Option<Tensor<1>>) {
        let n = masks.len();
        let leaves = leaves_of(&x);
        let starts = leaves_of(start);
        let (mut per, mut at_start) = (Vec::new(), Vec::new());
        for g in &groups {
            per.push(
                self.objectives
                    .losses(self.outputs(&leaves, g, n, masks), g, ys_of(g)),
            );
            if !starts.is_empty() {
                let out = self.outputs(&starts, g, n, masks);
                at_start.push(Stacked::losses(out.logits, ys_of(g)));
            }
        }
        if per.is_empty() {
            return (x, None);
        }
        // the trained clients' losses in `groups`' order; the backward of their sum
        let all = Tensor::cat(per, 0);
        let mut losses = vec![all.clone().inner()];
        let total = match at_start.is_empty() {
            true => all.sum(),
            false => all.sum() + Tensor::cat(at_start, 0).sum(),
        };
        let grads = total.backward();
        let grad_of = |ls: &[Tensor<2>], like: &[Tensor<2>]| -> Vec<Tensor<2>> {
            (ls.iter().zip(like))
                .map(|(l, xt)| l.grad(&grads).unwrap_or_else(|| xt.zeros_like()))
                .collect()
        };
        let mut g = grad_of(&leaves, &x);
        let aux = grad_of(&starts, start);
        drop(grads);
        let norm = chain.step(&mut x, &mut g, &aux);
        if let Some(nm) = norm {
            losses.push(nm.reshape([n]));
        }
        (x, Some(Tensor::cat(losses, 0)))
    }

    /// The outputs of the clients of `group` (batches of one size) with their masks, their rows
    /// taken from `leaves` (all `n` rows when the group is every client).
    fn outputs(&self, leaves: &[Tensor<2>], group: &[Drawn], n: usize, masks: &[u64]) -> Outputs3 {
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
        let stacked = Stacked::of(self.model, params, k);
        let own: Vec<u64> = group.iter().map(|d| masks[d.k]).collect();
        stacked.outputs(input_of(group), Some(&own))
    }

    /// Read the rows back once (`[K, n]`: row k is client k's flat vector, the tensors side by
    /// side) and leave Δ_k = x_k − anchor_k in `out[k]`.
    fn read_deltas(&self, x: Vec<Tensor<2>>, works: &[Work], out: &mut [Vec<f32>]) {
        let all = read_f32(Tensor::cat(x, 1));
        for ((o, w), row) in out
            .iter_mut()
            .zip(works)
            .zip(all.chunks(self.model.layout().total))
        {
            o.clear();
            o.extend(row.iter().zip(w.anchor).map(|(x, a)| x - a));
        }
    }
}

/// The rows `x` as autodiff leaves.
fn leaves_of(x: &[Tensor<2>]) -> Vec<Tensor<2>> {
    x.iter()
        .map(|t| Tensor::from_inner(t.clone()).require_grad())
        .collect()
}

/// The targets of a group's batches, one client's after another.
fn ys_of(group: &[Drawn]) -> Tensor<1, Int> {
    Tensor::cat(group.iter().map(|d| d.y.clone()).collect(), 0)
}

/// Record each step's numbers, read once for all steps: for each `(step, who)` of `trained` (its
/// clients as `(client, batch size)`, in the step's order), their losses, then every row's
/// norm when the chain has one.
fn record(
    chain: &DeviceChain,
    pending: Deferred,
    trained: &[(usize, Vec<(usize, usize)>)],
    stats: &mut [LocalStats],
) {
    for (numbers, (step, who)) in pending.read().iter().zip(trained) {
        let step = *step;
        let (losses, norms) = numbers.split_at(who.len().min(numbers.len()));
        for (&(k, len), &loss) in who.iter().zip(losses) {
            let log = norms
                .get(k)
                .map(|&v| chain.read_norm(f64::from(v)))
                .unwrap_or_default();
            stats[k].record(step, f64::from(loss), len, &log);
        }
    }
}
