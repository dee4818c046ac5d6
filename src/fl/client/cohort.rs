//! The cohort step (`run.cohort = K`): up to K clients of a round trained as one computation.
//! Each local step draws every client's batch from its own stream (as when it trains alone),
//! runs the K forwards and backwards as one on the model's stacked form
//! ([`crate::model::stacked`]), and then steps each client's parameters with its own chain
//! (its term, clip and decay, rule and moments) on its flat vectors. Clients whose batches differ
//! in size at a step (a short last batch) are stacked in groups of one size; a client past its
//! last step (`local.epochs` over unequal partitions) takes no part in the step.
//!
//! What changes against one client at a time is only the rounding of the batched products: each
//! client's Δ_i agrees with its one-at-a-time training to float rounding (tests/cohort.rs).

use burn::tensor::{Device, Int, Tensor};

use super::batches::Batches;
use super::chain::{ClipDecay, HostChain};
use super::trainer::{LocalStats, Work};
use crate::data::{self, FedData, Input};
use crate::fl::plan::ClientPlan;
use crate::model::Model;
use crate::model::params::Layout;
use crate::model::stacked::Stacked;
use crate::optim::Ctx;
use crate::rng::Rng;

/// Why a client's plan cannot train in a cohort; None when it can. A plan stacks when its step
/// reads the logits' cross-entropy only: its term, clip, decay and rule run per client on flat
/// vectors whatever they are.
pub fn why_not(plan: &ClientPlan) -> Option<&'static str> {
    if plan.loss.is_some() {
        Some("its local loss reads more than the cross-entropy of the logits")
    } else if !plan.frozen.is_empty() {
        Some("its loss reads frozen models")
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
    xs: Vec<Vec<f32>>,
    gs: Vec<Vec<f32>>,
    /// Whether the run was told why a round's clients trained one at a time.
    noted: bool,
}

/// One client's batch at a step.
struct Drawn {
    k: usize,
    len: usize,
    input: Input,
    y: Tensor<1, Int>,
}

impl Cohort {
    pub fn new(model: Model, device: Device, base: ClipDecay) -> Self {
        keep_freed_memory();
        let layout = Layout::of(&model);
        Cohort {
            model,
            layout,
            device,
            base,
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
        let dim = self.layout.total;
        self.xs.resize(n, Vec::new());
        self.gs.resize(n, vec![0.0; dim]);
        for (x, w) in self.xs.iter_mut().zip(works) {
            x.clear();
            x.extend_from_slice(w.anchor);
        }
        let mut chains: Vec<HostChain> = plans
            .into_iter()
            .zip(works)
            .map(|(p, w)| HostChain::new(p.term, w.anchor, self.base, p.rule))
            .collect();
        let mut batches: Vec<Batches> = works
            .iter()
            .map(|w| Batches::new(&data.clients[w.client], w.batch_size))
            .collect();
        let mut stats = vec![LocalStats::default(); n];
        let steps = works.iter().map(|w| w.steps).max().unwrap_or(0);
        for step in 0..steps {
            if works[0]
                .stop
                .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
            {
                break;
            }
            let drawn = self.draw(data, works, &mut batches, rngs, step);
            for group in groups(drawn) {
                let losses = self.forward_backward(group.iter());
                for (d, loss) in group.iter().zip(losses) {
                    let w = &works[d.k];
                    let per_epoch = data.clients[w.client].len().div_ceil(w.batch_size).max(1);
                    let ctx = Ctx {
                        round: w.round,
                        lr: w.schedule.lr(w.round, step / per_epoch),
                        steps: w.steps,
                        ..Ctx::default()
                    };
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

    /// The batch of every client that takes part in `step`, drawn as it would be alone.
    fn draw(
        &self,
        data: &FedData,
        works: &[Work],
        batches: &mut [Batches],
        rngs: &mut [Rng],
        step: usize,
    ) -> Vec<Drawn> {
        let mut out = Vec::new();
        for (k, (w, (b, rng))) in works
            .iter()
            .zip(batches.iter_mut().zip(rngs.iter_mut()))
            .enumerate()
        {
            if step >= w.steps {
                continue;
            }
            let idx = b.next_batch(rng);
            let len = idx.len();
            let (input, y) = data::batch(&data.train, idx, data.augment, Some(rng), &self.device);
            out.push(Drawn { k, len, input, y });
        }
        out
    }

    /// One forward and backward of the clients `group` (batches of one size) on the stacked
    /// model: their gradients land in `gs`; returns each one's batch loss.
    fn forward_backward<'d>(&mut self, group: impl Iterator<Item = &'d Drawn> + Clone) -> Vec<f64> {
        let ks: Vec<usize> = group.clone().map(|d| d.k).collect();
        let xs: Vec<&[f32]> = ks.iter().map(|&k| self.xs[k].as_slice()).collect();
        let stacked = Stacked::new(&self.model, &self.layout, &xs, &self.device);
        let images: Vec<Tensor<4>> = group
            .clone()
            .map(|d| match &d.input {
                Input::Images(x) => x.clone(),
                Input::Tokens(_) => unreachable!("the stacked models read images"),
            })
            .collect();
        let ys: Vec<Tensor<1, Int>> = group.map(|d| d.y.clone()).collect();
        let logits = stacked.logits(Input::Images(Tensor::cat(images, 0)));
        let per = Stacked::losses(logits, Tensor::cat(ys, 0));
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
        stacked.read_grads(&mut grads, &mut out, &self.layout);
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

/// The drawn batches in groups of one size, in client order within each group.
fn groups(drawn: Vec<Drawn>) -> Vec<Vec<Drawn>> {
    let mut out: Vec<Vec<Drawn>> = Vec::new();
    for d in drawn {
        match out.iter_mut().find(|g| g[0].len == d.len) {
            Some(g) => g.push(d),
            None => out.push(vec![d]),
        }
    }
    out
}
