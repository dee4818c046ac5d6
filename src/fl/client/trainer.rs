//! Local training: the clients given to a [`Trainer`], one (`run.cohort = 1`) or up to K of a
//! round (`run.cohort = K`), trained as one computation on the training device
//! ([`super::resident`]). Each local step draws every client's batch from its own stream (as
//! when it trains alone), runs the clients' forwards and backwards as one on the model's K
//! copies, and then steps each client's row of the parameters with its own chain (its term,
//! clip and decay, rule and moments: [`DeviceChain`]). Clients whose batches differ in size at a
//! step (a short last batch) are stacked in groups of one size; a client past its last step
//! (`local.epochs` over unequal partitions) takes no part in the step.
//!
//! A client in a cohort computes what it computes alone, up to the rounding of the batched
//! products (on flex each copy's convolutions and LSTM run on the kernels one client uses, so
//! the CNNs' and the MLP's updates are the same bits): tests/cohort.rs.

use burn::tensor::Device;

use super::captured::Fed;
use super::chain::{ClipDecay, DeviceChain};
use super::deferred::DeviceFailed;
use super::draw::step_plan;
use super::feed::Feed;
use super::objectives::Objectives;
use super::resident::Resident;
use super::work::{LocalStats, Work};
use crate::data::{self, FedData};
use crate::fl::losses::cross_entropy;
use crate::fl::plan::ClientPlan;
use crate::model::Model;
use crate::model::copies::Stacked;
use crate::rng::Rng;

/// A trainer: the model, the device, the chain's clip and decay, and each client's Δ of its last
/// training.
pub struct Trainer {
    /// Shared with the objectives of a training while its steps write the trainer's buffers.
    model: std::sync::Arc<Model>,
    device: Device,
    base: ClipDecay,
    /// Replay the device step's full steps as one captured graph (`run.graph`).
    graph: bool,
    /// The captured graph of the last training, for the next where it fits.
    kept: Option<super::captured::Kept>,
    /// The steps whose numbers the chain's tables hold at once.
    window: usize,
    xs: Vec<Vec<f32>>,
}

impl Trainer {
    pub fn new(model: Model, device: Device, base: ClipDecay) -> Self {
        keep_freed_memory();
        Trainer {
            model: std::sync::Arc::new(model),
            device,
            base,
            graph: false,
            kept: None,
            window: super::draw::WINDOW,
            xs: Vec::new(),
        }
    }

    /// Run the device step's full steps as one captured graph (`run.graph`).
    pub fn with_graph(mut self, graph: bool) -> Self {
        self.graph = graph;
        self
    }

    /// Hold the numbers of at most `steps` steps at once in the chain's tables (default
    /// [`super::draw::WINDOW`]); a longer training rewrites them as it goes, and a captured
    /// training (`run.graph`) runs eagerly. The results do not depend on it.
    pub fn with_window(mut self, steps: usize) -> Self {
        self.window = steps.max(1);
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
    ) -> Result<LocalStats, DeviceFailed> {
        let mut stats = self.train(data, vec![p], &[*w], std::slice::from_mut(r))?;
        Ok(stats.pop().expect("one client's stats"))
    }

    /// Train `works`' clients, each from its plan and with its own stream `rngs[k]`, as one
    /// computation; Δ of the k-th in [`Trainer::delta`]. The clients start from one model.
    pub fn train(
        &mut self,
        data: &FedData,
        plans: Vec<ClientPlan>,
        works: &[Work],
        rngs: &mut [Rng],
    ) -> Result<Vec<LocalStats>, DeviceFailed> {
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
        let objectives = Objectives::new(&plans, &model, works[0].anchor, &self.device);
        let mut resident = Resident::new(&model, &self.device, &objectives);
        resident.window = self.window;
        // every step tabled (padded) where no loss or norm reads a batch's rows together
        let pad = objectives.pads() && model.rows_independent();
        // the streams as they were, should a refused capture make the training start again
        let drawn_from = rngs.to_vec();
        let chain = self.device_chain(data, &plans, works);
        let feed = (self.graph)
            .then(|| Feed::new(data, works, rngs, &self.device, pad, self.window))
            .flatten();
        let mut stats = match feed {
            Some(feed) => {
                match resident.train_fed(feed, chain, works, &mut self.kept, &mut self.xs[..n]) {
                    Ok(stats) => stats,
                    Err(Fed::Device(e)) => return Err(e),
                    Err(Fed::Refused) => {
                        rngs.clone_from_slice(&drawn_from);
                        let chain = self.device_chain(data, &plans, works);
                        resident.train(data, chain, works, rngs, &mut self.xs[..n])?
                    }
                }
            }
            None => resident.train(data, chain, works, rngs, &mut self.xs[..n])?,
        };
        for (s, f) in stats.iter_mut().zip(full) {
            s.uplink.full_gradient = f;
        }
        Ok(stats)
    }

    /// The chain of `works`' clients on the device, from their plans, with the tables of their
    /// first window of steps.
    fn device_chain(&self, data: &FedData, plans: &[ClientPlan], works: &[Work]) -> DeviceChain {
        let ranges = self.model.layout().ranges();
        let pr: Vec<_> = plans.iter().map(|p| (&p.term, &p.rule)).collect();
        let anchors: Vec<&[f32]> = works.iter().map(|w| w.anchor).collect();
        let plan = step_plan(data, works, 0, self.window);
        DeviceChain::new(&pr, &anchors, self.base, &ranges, &plan, &self.device)
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
