//! The cohort step (`run.cohort = K`): up to K clients of a round trained as one computation.
//! Each local step draws every client's batch from its own stream (as when it trains alone),
//! runs the K forwards and backwards as one on the model's stacked form
//! ([`crate::model::Stacked`]), and then steps each client's parameters with its own chain
//! (its term, clip and decay, rule and moments) on its flat vectors. Clients whose batches differ
//! in size at a step (a short last batch) are stacked in groups of one size; a client past its
//! last step (`local.epochs` over unequal partitions) takes no part in the step.
//!
//! What changes against one client at a time is only the rounding of the batched products: each
//! client's Δ_i agrees with its one-at-a-time training to float rounding (tests/cohort.rs).

use burn::tensor::{Device, Int, Tensor};

use super::chain::{ClipDecay, DeviceChain, HostChain};
use super::cohort_batches::{Drawn, batches_of, ctx_at, draw, groups, input_of, stopped};
use super::cohort_device::Resident;
use super::cohort_loss::{self, Objectives};
use super::trainer::{LocalStats, Work, step_masks};
use crate::data::FedData;
use crate::fl::plan::ClientPlan;
use crate::model::Model;
use crate::model::copies::Stacked;
use crate::model::params::Layout;
use crate::rng::Rng;

/// Why a client's plan cannot train in a cohort; None when it can. A plan stacks when its step
/// reads the logits' cross-entropy only: its term, clip, decay and rule run per client on flat
/// vectors whatever they are.
pub fn why_not(plan: &ClientPlan) -> Option<&'static str> {
    if let Some(why) = cohort_loss::why_not(plan) {
        Some(why)
    } else if plan.term.anchor_grad != 0.0 {
        Some("its step reads the starting model's gradient on each batch")
    } else if plan.full_gradient {
        Some("its clients send their full-data gradient")
    } else {
        None
    }
}

/// A cohort's trainer: the model (for its stacked form and layout) and each client's flat
/// parameters and gradient.
pub struct Cohort {
    model: Model,
    layout: Layout,
    device: Device,
    base: ClipDecay,
    /// Keep the cohort's parameters on the device for its steps (`run.local_step`) when its
    /// plans' chains run there.
    device_step: bool,
    xs: Vec<Vec<f32>>,
    gs: Vec<Vec<f32>>,
    /// Whether the run was told why a round's clients trained one at a time.
    noted: bool,
}

impl Cohort {
    pub fn new(model: Model, device: Device, base: ClipDecay, device_step: bool) -> Self {
        keep_freed_memory();
        let layout = model.layout().clone();
        Cohort {
            model,
            layout,
            device,
            base,
            device_step,
            xs: Vec::new(),
            gs: Vec::new(),
            noted: false,
        }
    }

    /// Say once per run why clients train one at a time: `why` their plan does not stack.
    pub fn note_once(&mut self, why: &str) {
        if !self.noted {
            eprintln!("note: run.cohort: the clients train one at a time: {why}");
            self.noted = true;
        }
    }

    /// Δ_k = x_k − anchor of the k-th client of the last cohort.
    pub fn delta(&self, k: usize) -> &[f32] {
        &self.xs[k]
    }

    /// The slot of the k-th client's Δ, for a client trained alone instead.
    pub fn delta_mut(&mut self, k: usize) -> &mut Vec<f32> {
        if self.xs.len() <= k {
            self.xs.resize(k + 1, Vec::new());
        }
        &mut self.xs[k]
    }

    /// Train `works`' clients, each from its plan and with its own stream `rngs[k]`, as one
    /// computation; Δ of the k-th in [`Cohort::delta`].
    pub fn train(
        &mut self,
        data: &FedData,
        plans: Vec<ClientPlan>,
        works: &[Work],
        rngs: &mut [Rng],
    ) -> Vec<LocalStats> {
        let n = works.len();
        self.xs.resize(n, Vec::new());
        // the objectives read the model while the steps write the buffers
        let model = self.model.clone();
        let objectives = Objectives::new(&plans, &model, works[0].anchor, &self.device);
        if let Some(chain) = self.device_chain(&plans, works) {
            let resident = Resident {
                model: &self.model,
                layout: &self.layout,
                device: &self.device,
                objectives: &objectives,
            };
            return resident.train(data, &chain, works, rngs, &mut self.xs[..n]);
        }
        self.gs.resize(n, vec![0.0; self.layout.total]);
        for (x, w) in self.xs.iter_mut().zip(works) {
            x.clear();
            x.extend_from_slice(w.anchor);
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
                let losses = self.forward_backward(&group, &objectives, &masks);
                for (d, loss) in group.iter().zip(losses) {
                    let ctx = ctx_at(data, &works[d.k], step);
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

    /// The cohort's chain on the device (`run.local_step`), when its plans' chains run there.
    fn device_chain(&self, plans: &[ClientPlan], works: &[Work]) -> Option<DeviceChain> {
        if !self.device_step {
            return None;
        }
        let ranges: Vec<_> = self.layout.tensors.iter().map(|t| t.range()).collect();
        let pr: Vec<_> = plans.iter().map(|p| (&p.term, &p.rule)).collect();
        let anchors: Vec<&[f32]> = works.iter().map(|w| w.anchor).collect();
        DeviceChain::new(&pr, &anchors, self.base, &ranges, &self.device)
    }

    /// One forward and backward of the clients `group` (batches of one size) on the stacked
    /// model: their gradients land in `gs`; returns each one's batch loss.
    fn forward_backward(
        &mut self,
        group: &[Drawn],
        objectives: &Objectives,
        masks: &[u64],
    ) -> Vec<f64> {
        let ks: Vec<usize> = group.iter().map(|d| d.k).collect();
        let xs: Vec<&[f32]> = ks.iter().map(|&k| self.xs[k].as_slice()).collect();
        let stacked = Stacked::new(&self.model, &xs, &self.device);
        let ys: Vec<Tensor<1, Int>> = group.iter().map(|d| d.y.clone()).collect();
        let out = stacked.outputs(input_of(group), Some(masks));
        let per = objectives.losses(out, group, Tensor::cat(ys, 0));
        let values = per.clone().into_data().convert::<f32>();
        let values: Vec<f64> = values
            .as_slice::<f32>()
            .expect("f32")
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        let mut grads = per.sum().backward();
        let mut out: Vec<&mut [f32]> = Vec::with_capacity(ks.len());
        let mut rest: &mut [Vec<f32>] = &mut self.gs;
        let mut at = 0;
        for &k in &ks {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(k - at);
            let (one, tail) = tail.split_first_mut().expect("a client's gradient");
            out.push(one.as_mut_slice());
            rest = tail;
            at = k + 1;
        }
        stacked.read_grads(&mut grads, &mut out);
        values
    }
}

/// Keep freed memory in the process for the next step instead of returning it to the system:
/// a cohort's stacked parameters and gradients are K model copies, tens to hundreds of MB, and
/// glibc serves blocks that large with fresh `mmap`s, so every step would fault in and zero its
/// pages again (half of a CPU step's time in a profile of 50 MLP clients). As PyTorch's
/// caching allocator does, the memory stays with the process (glibc: no `mmap` for large
/// blocks, no trimming of the heap's top); results do not depend on it.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters; it is called before the cohort
    // allocates and is safe to call at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}
