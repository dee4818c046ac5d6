//! The local steps, on the training device (every backend, flex included): the clients'
//! parameters stay on the training device for all their steps,
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

use std::cell::Cell;

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::chain::DeviceChain;
use super::deferred::{Deferred, DeviceFailed, read_rows};
use super::draw::{Group, WINDOW, batches_of, draw, groups, step_plan, stopped};
use super::objectives::Objectives;
use super::work::{LocalStats, Work, step_masks};
use crate::data::FedData;
use crate::model::copies::Stacked;
use crate::model::{Model, Outputs3, Seeds};
use crate::optim::{Moments, upload_rows};
use crate::rng::Rng;

/// What the device steps read: the model, the device and the clients' objectives.
pub struct Resident<'a> {
    pub model: &'a Model,
    pub device: &'a Device,
    pub objectives: &'a Objectives<'a>,
    /// The steps whose numbers the chain's tables hold at once ([`WINDOW`]).
    pub window: usize,
    /// The dropout sites the last forward met.
    pub(super) sites: Cell<u64>,
}

/// Each trained step's number: the step, its clients `(client, batch size)` in their order,
/// and its losses then every row's norm (when the chain has one).
pub(super) type Trained = Vec<(usize, Vec<(usize, usize)>, Vec<f32>)>;

impl<'a> Resident<'a> {
    pub fn new(model: &'a Model, device: &'a Device, objectives: &'a Objectives<'a>) -> Self {
        Resident {
            model,
            device,
            objectives,
            window: WINDOW,
            sites: Cell::new(0),
        }
    }

    /// Train `works`' clients with `chain` (built from their plans), each with its own stream
    /// `rngs[k]`, each step's batches drawn from it as it comes; Δ_k = x_k − anchor_k lands in
    /// `out[k]`. (With `run.graph` the trainer draws the steps ahead and captures them instead:
    /// [`super::captured`].)
    pub fn train(
        &self,
        data: &FedData,
        mut chain: DeviceChain,
        works: &[Work],
        rngs: &mut [Rng],
        out: &mut [Vec<f32>],
    ) -> Result<Vec<LocalStats>, DeviceFailed> {
        let (mut x, start) = self.rows(works, &chain);
        let (mut batches, steps) = batches_of(data, works);
        let (mut pending, mut who_at) = (Deferred::default(), Vec::new());
        for step in 0..steps {
            if stopped(works) {
                break;
            }
            if step > 0 && step % self.window == 0 {
                chain.window(&step_plan(data, works, step, self.window), self.device);
            }
            let drawn = draw(data, works, &mut batches, rngs, step, self.device);
            let groups: Vec<Group> = groups(drawn);
            let masks: Vec<u64> = works.iter().map(|w| step_masks(w, step)).collect();
            let numbers = self.step(
                &mut x,
                &start,
                &groups,
                &mut chain,
                Some(Seeds::Host(&masks)),
            );
            chain.advance();
            if let Some(t) = numbers {
                pending.push(t);
                who_at.push((step, who(&groups)));
            }
        }
        let trained: Trained = (who_at.into_iter().zip(pending.read()?))
            .map(|((s, w), n)| (s, w, n))
            .collect();
        self.end(&chain, &trained, x, works, out)
    }

    /// The clients' rows on the device, from their anchors, and the starting rows again for a
    /// term that reads their gradient (a copy: the rows move on in place), else none.
    pub(super) fn rows(
        &self,
        works: &[Work],
        chain: &DeviceChain,
    ) -> (Vec<Tensor<2>>, Vec<Tensor<2>>) {
        let ranges = self.model.layout().ranges();
        let anchors: Vec<Option<&[f32]>> = works.iter().map(|w| Some(w.anchor)).collect();
        let x = upload_rows(&anchors, &ranges, self.device);
        let start = match chain.reads_anchor_grad() {
            true => upload_rows(&anchors, &ranges, self.device),
            false => Vec::new(),
        };
        (x, start)
    }

    /// A training's end: each client's stats from its steps' numbers (`trained`), the rows `x`
    /// read back once (Δ_k into `out[k]`), the rule's moments in one more read.
    pub(super) fn end(
        &self,
        chain: &DeviceChain,
        trained: &Trained,
        x: Vec<Tensor<2>>,
        works: &[Work],
        out: &mut [Vec<f32>],
    ) -> Result<Vec<LocalStats>, DeviceFailed> {
        let mut stats = vec![LocalStats::default(); works.len()];
        record(chain, trained, &mut stats);
        self.read_deltas(x, works, out)?;
        if let Some((m, v)) = chain.moments() {
            // each row m then v, in one read
            let total = self.model.layout().total;
            let both = read_rows(m.into_iter().chain(v).collect(), self.max_floats())?;
            for (st, row) in stats.iter_mut().zip(both.chunks(2 * total)) {
                let (m, v) = row.split_at(total);
                st.uplink.moments = Some(Moments {
                    m: m.to_vec(),
                    v: v.to_vec(),
                });
            }
        }
        Ok(stats)
    }

    /// One step of every client in `groups`: forwards, one backward, the chain on the rows `x`
    /// (in place), with `start`'s rows' gradients on the same batches when the chain reads
    /// them (one backward for both); `seeds`: the clients' dropout seeds (on the host, one a
    /// client; on the device, for one group of every client). The step's numbers stay on the
    /// device: the trained clients' losses (in `groups`' order), then every row's pre-clip
    /// norm when the chain clips or decays. The step index stays where it is.
    pub(super) fn step(
        &self,
        x: &mut [Tensor<2>],
        start: &[Tensor<2>],
        groups: &[Group],
        chain: &mut DeviceChain,
        seeds: Option<Seeds>,
    ) -> Option<Tensor<1>> {
        let n = x.first().map_or(0, |t| t.dims()[0]);
        let leaves = leaves_of(x);
        let starts = leaves_of(start);
        let (mut per, mut at_start) = (Vec::new(), Vec::new());
        for g in groups {
            let out = self.outputs(&leaves, g, n, seeds);
            per.push(self.objectives.losses(out, g));
            if !starts.is_empty() {
                let out = self.outputs(&starts, g, n, seeds);
                at_start.push(Stacked::losses(out.logits, g.y.clone(), g.mask.as_ref()));
            }
        }
        if per.is_empty() {
            return None;
        }
        // the trained clients' losses in `groups`' order; the backward of their sum
        let all = Tensor::cat(per, 0);
        let mut numbers = vec![all.clone().inner()];
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
        let mut g = grad_of(&leaves, x);
        let aux = grad_of(&starts, start);
        // nothing else holds the rows now: the chain writes them in place
        drop((grads, leaves, starts));
        if let Some(nm) = chain.step(x, &mut g, &aux) {
            numbers.push(nm.reshape([n]));
        }
        Some(Tensor::cat(numbers, 0))
    }

    /// The outputs of the clients of `group` (batches of one size) with their masks, their rows
    /// taken from `leaves` (all `n` rows when the group is every client).
    fn outputs(
        &self,
        leaves: &[Tensor<2>],
        group: &Group,
        n: usize,
        seeds: Option<Seeds>,
    ) -> Outputs3 {
        let k = group.ks.len();
        // the group's rows: all of them, or gathered (one index upload)
        let idx = (k < n).then(|| {
            let idx: Vec<i64> = group.ks.iter().map(|&k| k as i64).collect();
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
        let own: Vec<u64>;
        let seeds = match seeds {
            Some(Seeds::Host(all)) => {
                own = group.ks.iter().map(|&k| all[k]).collect();
                Some(Seeds::Host(&own))
            }
            other => other,
        };
        let (out, sites) = stacked.outputs_with(group.input.clone(), seeds);
        self.sites.set(sites);
        out
    }

    /// The most floats one of the training device's buffers holds (None: no limit known).
    fn max_floats(&self) -> Option<usize> {
        crate::kernels::max_buffer(self.device).map(|b| (b / 4) as usize)
    }

    /// Read the rows back once (`[K, n]`: row k is client k's flat vector, the tensors side by
    /// side) and leave Δ_k = x_k − anchor_k in `out[k]`.
    fn read_deltas(
        &self,
        x: Vec<Tensor<2>>,
        works: &[Work],
        out: &mut [Vec<f32>],
    ) -> Result<(), DeviceFailed> {
        let all = read_rows(x, self.max_floats())?;
        for ((o, w), row) in out
            .iter_mut()
            .zip(works)
            .zip(all.chunks(self.model.layout().total))
        {
            o.clear();
            o.extend(row.iter().zip(w.anchor).map(|(x, a)| x - a));
        }
        Ok(())
    }
}

/// The rows `x` as autodiff leaves.
fn leaves_of(x: &[Tensor<2>]) -> Vec<Tensor<2>> {
    x.iter()
        .map(|t| Tensor::from_inner(t.clone()).require_grad())
        .collect()
}

/// The clients of `groups` as `(client, batch size)`, in their order.
pub(super) fn who(groups: &[Group]) -> Vec<(usize, usize)> {
    groups
        .iter()
        .flat_map(|g| g.ks.iter().map(move |&k| (k, g.len)))
        .collect()
}

/// Record each trained step's numbers (read once for all steps): its clients' losses, then every
/// row's norm when the chain has one.
fn record(chain: &DeviceChain, trained: &Trained, stats: &mut [LocalStats]) {
    for (step, who, numbers) in trained {
        let (losses, norms) = numbers.split_at(who.len().min(numbers.len()));
        for (&(k, len), &loss) in who.iter().zip(losses) {
            let log = norms
                .get(k)
                .map(|&v| chain.read_norm(f64::from(v)))
                .unwrap_or_default();
            stats[k].record(*step, f64::from(loss), len, &log);
        }
    }
}
