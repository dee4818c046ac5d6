//! Local training: the clients given to a [`Trainer`], one (`run.cohort = 1`) or up to K of a
//! round (`run.cohort = K`), trained as one computation. Each local step draws every client's
//! batch from its own stream (as when it trains alone), runs the clients' forwards and
//! backwards as one on the model's K copies ([`Stacked`]), and then steps each client's
//! parameters with its own chain (its term, clip and decay, rule and moments) on its flat
//! vectors, or keeps them on the training device ([`super::resident`]). Clients whose batches
//! differ in size at a step (a short last batch) are stacked in groups of one size; a client
//! past its last step (`local.epochs` over unequal partitions) takes no part in the step.
//!
//! A client in a cohort computes what it computes alone, up to the rounding of the batched
//! products (on flex each copy's convolutions and LSTM run on the kernels one client uses, so
//! the CNNs' and the MLP's updates are the same bits): tests/cohort.rs.

use burn::tensor::Device;

use super::chain::{ClipDecay, DeviceChain, HostChain, StepPlan};
use super::draw::{Drawn, Group, batches_of, ctx_at, draw, groups, stopped};
use super::feed::Feed;
use super::objectives::Objectives;
use super::resident::Resident;
use super::work::{LocalStats, Work, step_masks};
use crate::data::{self, FedData};
use crate::fl::losses::cross_entropy;
use crate::fl::plan::ClientPlan;
use crate::model::Model;
use crate::model::copies::Stacked;
use crate::rng::Rng;

/// A trainer: the model, and each client's flat parameters, gradient and, for a term that
/// reads it, the starting model's gradient on its batch.
pub struct Trainer {
    /// Shared with the objectives of a training while its steps write the trainer's buffers.
    model: std::sync::Arc<Model>,
    device: Device,
    base: ClipDecay,
    /// Keep the parameters on the device for the steps (`run.local_step`) when the plans'
    /// chains run there.
    device_step: bool,
    /// Replay the device step's full steps as one captured graph (`run.graph`).
    graph: bool,
    /// The captured graph of the last training, for the next where it fits.
    kept: Option<super::captured::Kept>,
    xs: Vec<Vec<f32>>,
    gs: Vec<Vec<f32>>,
    anchor_gs: Vec<Vec<f32>>,
}

impl Trainer {
    pub fn new(model: Model, device: Device, base: ClipDecay, device_step: bool) -> Self {
        keep_freed_memory();
        Trainer {
            model: std::sync::Arc::new(model),
            device,
            base,
            device_step,
            graph: false,
            kept: None,
            xs: Vec::new(),
            gs: Vec::new(),
            anchor_gs: Vec::new(),
        }
    }

    /// Run the device step's full steps as one captured graph (`run.graph`).
    pub fn with_graph(mut self, graph: bool) -> Self {
        self.graph = graph;
        self
    }

    /// Δ_k = x_k − anchor of the k-th client of the last training.
    pub fn delta(&self, k: usize) -> &[f32] {
        &self.xs[k]
    }

    /// Train one client alone (K = 1); its Δ in [`Trainer::delta`]`(0)`.
    pub fn train_one(
        &mut self,
        data: &FedData,
        p: ClientPlan,
        w: &Work,
        r: &mut Rng,
    ) -> LocalStats {
        let mut stats = self.train(data, vec![p], &[*w], std::slice::from_mut(r));
        stats.pop().expect("one client's stats")
    }

    /// Train `works`' clients, each from its plan and with its own stream `rngs[k]`, as one
    /// computation; Δ of the k-th in [`Trainer::delta`]. The clients start from one model.
    pub fn train(
        &mut self,
        data: &FedData,
        plans: Vec<ClientPlan>,
        works: &[Work],
        rngs: &mut [Rng],
    ) -> Vec<LocalStats> {
        let n = works.len();
        self.xs.resize(n, Vec::new());
        let full: Vec<Option<Vec<f32>>> = plans
            .iter()
            .zip(works)
            .map(|(p, w)| {
                let idx = &data.clients[w.client];
                p.full_gradient
                    .then(|| self.full_gradient(data, idx, w.anchor, w.batch_size))
            })
            .collect();
        // the objectives read the model while the steps write the buffers
        let model = std::sync::Arc::clone(&self.model);
        let chain = self.device_chain(data, &plans, works);
        let host = chain.is_none();
        let objectives = Objectives::new(&plans, &model, works[0].anchor, &self.device, host);
        let mut stats = match chain {
            Some(chain) => {
                let mut resident = Resident::new(&model, &self.device, &objectives);
                resident.graph = self.graph;
                let out = &mut self.xs[..n];
                // every step tabled (padded) where no loss or norm reads a batch's rows together
                let pad = objectives.pads() && model.rows_independent();
                match (self.graph)
                    .then(|| Feed::new(data, works, rngs, &self.device, pad))
                    .flatten()
                {
                    Some(feed) => resident.train_fed(feed, chain, works, &mut self.kept, out),
                    None => resident.train(data, chain, works, rngs, out),
                }
            }
            None => self.train_host(data, plans, works, rngs, &objectives),
        };
        for (s, f) in stats.iter_mut().zip(full) {
            s.uplink.full_gradient = f;
        }
        stats
    }

    /// The steps with the chains on the host's flat vectors.
    fn train_host(
        &mut self,
        data: &FedData,
        plans: Vec<ClientPlan>,
        works: &[Work],
        rngs: &mut [Rng],
        objectives: &Objectives,
    ) -> Vec<LocalStats> {
        let (n, dim) = (works.len(), self.model.layout().total);
        self.gs.resize(n, vec![0.0; dim]);
        self.anchor_gs.resize(n, Vec::new());
        for (k, (x, w)) in self.xs.iter_mut().zip(works).enumerate() {
            x.clear();
            x.extend_from_slice(w.anchor);
            let reads = objectives.reads_anchor_grad(k);
            self.anchor_gs[k].resize(if reads { dim } else { 0 }, 0.0);
        }
        let mut chains: Vec<HostChain> = plans
            .into_iter()
            .zip(works)
            .map(|(p, w)| HostChain::new(p.term, w.anchor, self.base, p.rule))
            .collect();
        let (mut batches, steps) = batches_of(data, works);
        let mut stats = vec![LocalStats::default(); n];
        for step in 0..steps {
            if stopped(works) {
                break;
            }
            let drawn = draw(data, works, &mut batches, rngs, step, &self.device);
            for group in groups(drawn) {
                let masks: Vec<u64> = group
                    .iter()
                    .map(|d| step_masks(&works[d.k], step))
                    .collect();
                for (d, &m) in group.iter().zip(&masks) {
                    objectives.anchor_grad(d, m, &mut self.anchor_gs[d.k]);
                }
                let losses = self.forward_backward(&group, objectives, &masks);
                for (d, loss) in group.iter().zip(losses) {
                    let mut ctx = ctx_at(data, &works[d.k], step);
                    ctx.aux_grad = &self.anchor_gs[d.k];
                    let log = chains[d.k].step(&mut self.xs[d.k], &mut self.gs[d.k], &ctx);
                    stats[d.k].record(step, loss, d.len, &log);
                }
            }
        }
        for ((st, chain), (x, w)) in stats
            .iter_mut()
            .zip(chains)
            .zip(self.xs.iter_mut().zip(works))
        {
            st.uplink.moments = chain.into_moments();
            x.iter_mut().zip(w.anchor).for_each(|(x, a)| *x -= a);
        }
        stats
    }

    /// The chain on the device (`run.local_step`), when the plans' chains run there, with the
    /// steps of `works`' clients on `data`.
    fn device_chain(
        &self,
        data: &FedData,
        plans: &[ClientPlan],
        works: &[Work],
    ) -> Option<DeviceChain> {
        if !self.device_step {
            return None;
        }
        let ranges = self.model.layout().ranges();
        let pr: Vec<_> = plans.iter().map(|p| (&p.term, &p.rule)).collect();
        let anchors: Vec<&[f32]> = works.iter().map(|w| w.anchor).collect();
        let plan = step_plan(data, works);
        DeviceChain::new(&pr, &anchors, self.base, &ranges, &plan, &self.device)
    }

    /// One forward and backward of the clients `group` (batches of one size) with their
    /// dropout seeds `masks`: their gradients land in `gs`; returns each one's batch loss.
    fn forward_backward(
        &mut self,
        group: &[Drawn],
        objectives: &Objectives,
        masks: &[u64],
    ) -> Vec<f64> {
        let ks: Vec<usize> = group.iter().map(|d| d.k).collect();
        let xs: Vec<&[f32]> = ks.iter().map(|&k| self.xs[k].as_slice()).collect();
        let stacked = Stacked::new(&self.model, &xs, &self.device);
        let g = Group::of(group);
        let out = stacked.outputs(g.input.clone(), Some(masks));
        let per = objectives.losses(out, &g);
        let values = per.clone().into_data().convert::<f32>().try_to_vec::<f32>();
        let values = values.expect("f32").into_iter().map(f64::from).collect();
        let mut grads = per.sum().backward();
        // the group's gradients, in client order as the group is
        let mut out: Vec<&mut [f32]> = (self.gs.iter_mut().enumerate())
            .filter(|(k, _)| ks.contains(k))
            .map(|(_, g)| g.as_mut_slice())
            .collect();
        stacked.read_grads(&mut grads, &mut out);
        values
    }

    /// The mean loss gradient over a client's data `idx` at `at`, without dropout (the
    /// gradient of the point, not of random masks), in batches of `batch_size` in data order
    /// without augmentation, each batch weighted by its size (so the short last batch counts
    /// for what it holds): the gradient of the whole data set in one batch, up to rounding.
    pub fn full_gradient(
        &self,
        data: &FedData,
        idx: &[usize],
        at: &[f32],
        batch_size: usize,
    ) -> Vec<f32> {
        let model = Stacked::new(&self.model, &[at], &self.device);
        let mut g = vec![0f32; at.len()];
        let mut acc = vec![0f64; at.len()];
        for chunk in idx.chunks(batch_size.max(1)) {
            let (input, y) =
                data::batch(&data.train, chunk, data::Augment::None, None, &self.device);
            let logits = model.outputs(input, None).copy(0).logits;
            let mut grads = cross_entropy(logits, y, None).backward();
            model.read_grads(&mut grads, &mut [&mut g]);
            let wgt = chunk.len() as f64 / idx.len() as f64;
            acc.iter_mut()
                .zip(&g)
                .for_each(|(a, g)| *a += wgt * *g as f64);
        }
        acc.into_iter().map(|a| a as f32).collect()
    }
}

/// Each client's context at each of the cohort's steps, and whether it takes part (a client
/// past its last step does not).
fn step_plan<'a>(data: &FedData, works: &[Work]) -> StepPlan<'a> {
    let steps = works.iter().map(|w| w.steps).max().unwrap_or(0);
    StepPlan {
        ctx: (0..steps)
            .map(|s| works.iter().map(|w| ctx_at(data, w, s)).collect())
            .collect(),
        active: (0..steps)
            .map(|s| works.iter().map(|w| s < w.steps).collect())
            .collect(),
    }
}

/// Keep freed memory in the process for the next step, as PyTorch's caching allocator does
/// (glibc: no `mmap` for large blocks, no trimming of the heap's top): a cohort's parameters and
/// gradients are K model copies, and fresh `mmap`s would fault in and zero their pages every
/// step (half of a CPU step's time with 50 MLP clients). Results do not depend on it.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters and is safe to call at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}
