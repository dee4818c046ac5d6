//! The experiment: everything built before the first round (data, model layout, global
//! model, algorithm, client trainers, evaluator), and one round of it.

use burn::tensor::Device;

use super::membership::Membership;
use super::options::{client_workers, devices_for, graph, shape_of};
use super::round::{QuantizedUplink, RoundConfig, RoundStats, Stop, run_round, sample_active};
use super::workers::BurnClients;
use crate::config::{Aggregation, Deal, KernelChoice, Spec, UplinkScope};
use crate::data::{FedData, partition};
use crate::error::{Error, Result};
use crate::fl::algorithms;
use crate::fl::client::{ClipDecay, Trainer};
use crate::fl::per_client::Budget;
use crate::fl::schedule::Schedule;
use crate::fl::state::Mark;
use crate::fl::strategy::{Setup, Strategy};
use crate::kernels::Kernels;
use crate::metrics::csv::Row;
use crate::metrics::eval::Evaluator;
use crate::model::params::Layout;
use crate::model::{Model, init};
use crate::rng::{Rng, Stream};

/// The experiment as it stood before a round ([`Experiment::mark`]).
pub struct RoundMark {
    global: Vec<f32>,
    members: Membership,
    state: Mark,
}

/// Everything built before the first round; also used by `bench`.
pub struct Experiment {
    pub spec: Spec,
    pub data: FedData,
    pub layout: Layout,
    pub global: Vec<f32>,
    pub alg: Box<dyn Strategy>,
    /// The clients in the federation (all, or a dynamic active set).
    pub members: Membership,
    /// One trainer per client worker (`run.client_workers`), or one for a cohort.
    pub trainers: Vec<Trainer>,
    /// One single-thread pool per worker when there are several.
    pub pools: Vec<rayon::ThreadPool>,
    /// How many clients the trainer trains as one computation (`run.cohort`).
    pub cohort: usize,
    pub evaluator: Evaluator,
    pub device: Device,
    /// Set from outside (SIGINT, SIGTERM): clients stop before their next local step, the
    /// evaluation is skipped, and the run discards the round in flight.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The loaded data's fingerprint ([`crate::data::fingerprint`]), kept in each checkpoint.
    pub data_crc: u32,
}

impl Experiment {
    pub fn new(spec: &Spec, data: FedData) -> Result<Experiment> {
        crate::kernels::fpu::set_flush_subnormals(spec.run.flush_subnormals);
        let (device, eval_device) = devices_for(&spec.run)?;
        let shape = shape_of(&data);
        let kernels = match spec.run.kernels {
            KernelChoice::Fedrun => Kernels::Fedrun,
            KernelChoice::Burn => Kernels::Burn,
        };
        let model = Model::build(&spec.model, shape, kernels)?;
        let layout = model.layout().clone();
        check_uplink_scope(spec, &layout)?;
        let initial_model = initial_models(spec, &layout);
        let global = initial_model(&[]);
        let sizes = data.client_sizes();
        let counts = data.class_counts();
        let tensors: Vec<std::ops::Range<usize>> = layout.ranges();
        let members = Membership::new(spec, sizes.len());
        let mut alg = algorithms::build(&Setup {
            spec,
            dim: layout.total,
            tensors: &tensors,
            client_sizes: &sizes,
            federation: members.size(),
            class_counts: &counts,
            initial_model,
        })?;
        alg.state().check_names()?;
        let workers = client_workers(spec, layout.total);
        let base = ClipDecay::of(&spec.local);
        let trainers = (0..workers)
            .map(|_| Trainer::new(model.clone(), device.clone(), base).with_graph(graph(spec)))
            .collect();
        let pools = if workers > 1 {
            (0..workers)
                .map(|_| {
                    crate::kernels::fpu::pool(1)
                        .build()
                        .map_err(|e| Error::Run(format!("cannot start a client worker: {e}")))
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        Ok(Experiment {
            spec: spec.clone(),
            trainers,
            pools,
            cohort: super::resources::cohort_on(spec, &device),
            evaluator: Evaluator::new(model, eval_device, spec.fl.eval_batch_size)
                .with_graph(graph(spec)),
            data_crc: crate::data::fingerprint(&data),
            data,
            layout,
            global,
            alg,
            members,
            device,
            stop: None,
        })
    }

    /// The uplink's quantizer (`fl.uplink_levels` > 0): one norm for the whole update, one per
    /// parameter tensor, or one per convolution weight.
    fn uplink(&self) -> Option<QuantizedUplink> {
        let fl = &self.spec.fl;
        (fl.uplink_levels > 0).then(|| QuantizedUplink {
            levels: fl.uplink_levels,
            parts: match fl.uplink_scope {
                UplinkScope::Vector => std::iter::once(0..self.layout.total).collect(),
                UplinkScope::Tensor => self.layout.ranges(),
                UplinkScope::Conv => self.layout.conv_weights(),
            },
        })
    }

    /// Local learning rate of round t (of its first local epoch, `local.lr_schedule`).
    pub fn lr(&self, t: usize) -> f64 {
        Schedule::new(&self.spec.local).lr(t, 0)
    }

    /// Run round t (counted from 0); returns the CSV row (without evaluation fields), whose
    /// `round` is the number of rounds completed, t + 1, or why it stopped.
    pub fn round(&mut self, t: usize) -> std::result::Result<Row, Stop> {
        let st = self.round_stats(t)?;
        Ok(Row {
            round: t + 1,
            test_acc: f64::NAN,
            test_loss: f64::NAN,
            train_loss: st.loss_sum / st.steps.max(1) as f64,
            lr: self.lr(t),
            clipped_steps: st.clipped,
            mean_clip_norm: st.clip_norm_sum / st.steps.max(1) as f64,
            update_norm: st.update_norm,
            server_lr: st.server.server_lr,
            server_state_norm: st.server.state_norm,
            vhat_at_floor: st.server.at_floor,
            down_bytes: st.down_bytes,
            up_bytes: st.up_bytes,
            elapsed_s: 0.0,
        })
    }

    /// Keep at most `run.client_state_mb` of per-client state in memory (0: all of it) and
    /// spill the rest to the run folder `dir`; `fresh`: a new run (not resumed).
    pub fn spill_client_state(&mut self, dir: &std::path::Path, fresh: bool) -> Result<()> {
        let mb = self.spec.run.client_state_mb;
        let limit = match mb > 0.0 {
            true => (mb * 1e6) as u64,
            false => u64::MAX,
        };
        let budget = Budget::new(limit);
        for store in self.alg.state().stores() {
            store.spill_to(dir, budget.clone(), fresh)?;
        }
        Ok(())
    }

    /// Run round t; returns the round's raw statistics, or why it stopped.
    pub fn round_stats(&mut self, t: usize) -> std::result::Result<RoundStats, Stop> {
        let lr = self.lr(t);
        let uplink = self.uplink();
        for c in self.members.begin_round(t) {
            self.alg.leaving(c).map_err(Stop::Failed)?;
            self.alg.state().forget(c).map_err(Stop::Failed)?;
        }
        let cfg = RoundConfig {
            seed: self.spec.run.seed,
            clients_per_round: self.spec.fl.clients_per_round,
            lr,
            server_lr: self.spec.fl.global_lr,
            uniform: self.spec.fl.aggregation == Aggregation::Uniform,
            uplink,
            active: self.members.active().map(<[usize]>::to_vec),
        };
        if self.spec.data.deal == Deal::Round {
            self.deal(t, &cfg).map_err(Stop::Failed)?;
        }
        let sizes = self.data.client_sizes();
        let mut client = BurnClients {
            trainers: &mut self.trainers,
            pools: &self.pools,
            cohort: self.cohort,
            data: &self.data,
            spec: &self.spec,
            device: &self.device,
            stop: self.stop.as_deref(),
        };
        run_round(
            t,
            &cfg,
            &sizes,
            &mut self.global,
            self.alg.as_mut(),
            &mut client,
        )
    }

    /// `data.deal = "round"`: the training split dealt anew among round t's sampled clients (the
    /// clients `run_round` samples, drawn here the same way), each told its new class counts;
    /// the other clients hold nothing this round (so the size weights are the round's own). A
    /// round undone and run again, or resumed from a checkpoint, deals the same lists.
    fn deal(&mut self, t: usize, cfg: &RoundConfig) -> Result<()> {
        let sampled = sample_active(cfg, t, self.data.clients.len());
        let d = &mut self.data;
        let seed = (self.spec.run.seed, t);
        let parts = partition::deal(
            &self.spec.data,
            seed,
            &d.train.y,
            d.num_classes,
            sampled.len(),
        )?;
        d.clients.iter_mut().for_each(Vec::clear);
        for (&c, p) in sampled.iter().zip(parts) {
            d.clients[c] = p;
        }
        let counts = d.class_counts();
        sampled
            .iter()
            .try_for_each(|&c| self.alg.dealt(c, &counts[c]))
    }

    /// Mark where the experiment stands before a round: a round stopped by a signal is undone
    /// with [`rollback`](Self::rollback), so that the run can be checkpointed after its last
    /// finished round. Costs a copy of the model-sized vectors and, as the round changes them,
    /// of its clients' per-client vectors; [`keep`](Self::keep) drops them.
    pub fn mark(&mut self) -> RoundMark {
        RoundMark {
            global: self.global.clone(),
            members: self.members.clone(),
            state: self.alg.state().mark(),
        }
    }

    /// Undo everything since `mark`: the global model, the federation and the algorithm's
    /// state are as they were.
    pub fn rollback(&mut self, mark: RoundMark) -> Result<()> {
        self.global = mark.global;
        self.members = mark.members;
        self.alg.state().rollback(mark.state)
    }

    /// The round since the mark stands.
    pub fn keep(&mut self, mark: RoundMark) {
        drop(mark);
        self.alg.state().keep();
    }

    /// Evaluate the algorithm's evaluation model on the test split.
    ///
    /// # Errors
    /// The device failed on the evaluation, naming what to change.
    pub fn evaluate(&mut self) -> Result<(f64, f64)> {
        let params = self.alg.eval_params().unwrap_or(&self.global);
        let got = self.evaluator.evaluate(params, &self.data.test);
        got.map_err(|e| eval_failed(&self.spec, &e))
    }

    /// As [`Experiment::evaluate`], or None when a signal stops it (within one batch).
    ///
    /// # Errors
    /// The device failed on the evaluation, naming what to change.
    pub fn evaluate_or_stop(&mut self) -> Result<Option<(f64, f64)>> {
        let params = self.alg.eval_params().unwrap_or(&self.global);
        let stop = self.stop.as_deref();
        let got = self.evaluator.evaluate_until(params, &self.data.test, stop);
        got.map_err(|e| eval_failed(&self.spec, &e))
    }
}

/// The run's error for a device that failed while evaluating: what burn said, and what to change.
fn eval_failed(spec: &Spec, e: &crate::error::DeviceFailed) -> Error {
    Error::Run(format!(
        "run.backend = \"{}\": the device failed while evaluating the test split in batches of fl.eval_batch_size = {}: {}",
        spec.run.backend,
        spec.fl.eval_batch_size,
        e.advice("fl.eval_batch_size")
    ))
}

/// The run's initial models: `keys` picks a sub-stream of the init stream, `&[]` θ_0's
/// (`model.init` from `run.init_seed`, or `run.seed` where it is −1).
fn initial_models(spec: &Spec, layout: &Layout) -> crate::fl::strategy::InitialModel {
    let seed = u64::try_from(spec.run.init_seed).unwrap_or(spec.run.seed);
    let (layout, identical, kind) = (layout.clone(), spec.model.identical_layers, spec.model.init);
    std::sync::Arc::new(move |keys: &[u64]| {
        let mut rng = Rng::derive(seed, Stream::Init, keys);
        init::init_flat(&layout, &mut rng, identical, kind)
    })
}

/// `fl.uplink_scope = "conv"` quantizes the convolutions' weights only: a model without any
/// would send every update exact, FedAvg's run under FedPAQ's name.
fn check_uplink_scope(spec: &Spec, layout: &Layout) -> Result<()> {
    let conv = spec.fl.uplink_scope == UplinkScope::Conv;
    if conv && spec.fl.uplink_levels > 0 && layout.conv_weights().is_empty() {
        return Err(Error::Config(format!(
            "fl.uplink_scope = \"conv\" quantizes each convolution's weight, and model.kind = \"{}\" has no convolution: use \"tensor\" or \"vector\"",
            spec.model.kind
        )));
    }
    Ok(())
}
