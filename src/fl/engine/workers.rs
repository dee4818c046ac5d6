//! [`LocalTrainer`] over burn models: one trainer per client worker, each on its own one-thread
//! pool training one client at a time, or one trainer given `run.cohort` clients at a time.

use burn::tensor::Device;
use std::sync::atomic::AtomicBool;

use crate::config::Spec;
use crate::data::FedData;
use crate::error::{Error, Result};
use crate::fl::client::{DeviceFailed, LocalStats, Trainer, Work, local_steps};
use crate::fl::plan::ClientPlan;
use crate::fl::schedule::Schedule;
use crate::rng::{Rng, Stream};

use super::local_trainer::LocalTrainer;

/// The burn model trainers (one per worker) over a federated data set.
pub struct BurnClients<'a> {
    pub trainers: &'a mut [Trainer],
    pub pools: &'a [rayon::ThreadPool],
    pub data: &'a FedData,
    pub spec: &'a Spec,
    pub device: &'a Device,
    /// Set from outside (a signal): each client stops before its next local step, and the
    /// round in flight is discarded by the caller.
    pub stop: Option<&'a AtomicBool>,
    /// How many clients the first trainer trains as one computation (`run.cohort`; 1: one per
    /// worker).
    pub cohort: usize,
}

/// What every client of a round reads.
#[derive(Clone, Copy)]
struct Shared<'a> {
    data: &'a FedData,
    spec: &'a Spec,
    stop: Option<&'a AtomicBool>,
}

/// Client `c`'s work in round `t` and its stream: its local steps, batches and augmentation are
/// drawn from the (seed, round, client) stream, whoever trains it.
fn work_of<'a>(
    job: Shared<'a>,
    schedule: &'a Schedule,
    t: usize,
    c: usize,
    anchor: &'a [f32],
) -> (Work<'a>, Rng) {
    let (data, spec) = (job.data, job.spec);
    let k = local_steps(
        spec.local.steps,
        spec.local.epochs,
        spec.local.batch_size,
        data.clients[c].len(),
    );
    let rng = Rng::derive(spec.run.seed, Stream::Local, &[t as u64, c as u64]);
    let work = Work {
        client: c,
        round: t,
        anchor,
        steps: k,
        batch_size: spec.local.batch_size,
        schedule,
        dropout_seed: Rng::derive(spec.run.seed, Stream::Dropout, &[t as u64, c as u64]).next_u64(),
        stop: job.stop,
    };
    (work, rng)
}

/// The run's error for a device that failed while training round `t`'s `clients`: what burn
/// said, and what to change.
fn device_failed(
    spec: &Spec,
    t: usize,
    clients: &[usize],
    cohort: usize,
    e: DeviceFailed,
) -> Error {
    let how = match cohort {
        1 => "one client a worker".to_string(),
        k => format!("a cohort of {k} (run.cohort)"),
    };
    Error::Run(format!(
        "run.backend = \"{}\": the device failed while training round {}'s clients {clients:?} as {how}, at local.batch_size = {}: {}",
        spec.run.backend,
        t + 1,
        spec.local.batch_size,
        e.advice("run.cohort or local.batch_size")
    ))
}

/// Train client `c` of round `t` on `trainer`.
fn train_client(
    trainer: &mut Trainer,
    job: Shared,
    t: usize,
    c: usize,
    anchor: &[f32],
    plan: ClientPlan,
) -> std::result::Result<LocalStats, DeviceFailed> {
    let schedule = Schedule::new(&job.spec.local);
    let (work, mut rng) = work_of(job, &schedule, t, c, anchor);
    trainer.train_one(job.data, plan, &work, &mut rng)
}

/// Train `clients` as one computation on `trainer`.
fn train_cohort(
    trainer: &mut Trainer,
    job: Shared,
    t: usize,
    clients: &[usize],
    anchor: &[f32],
    plans: Vec<ClientPlan>,
) -> std::result::Result<Vec<LocalStats>, DeviceFailed> {
    let schedule = Schedule::new(&job.spec.local);
    let (works, mut rngs): (Vec<Work>, Vec<Rng>) = clients
        .iter()
        .map(|&c| work_of(job, &schedule, t, c, anchor))
        .unzip();
    trainer.train(job.data, plans, &works, &mut rngs)
}

impl LocalTrainer for BurnClients<'_> {
    fn width(&self) -> usize {
        match self.cohort {
            1 => self.trainers.len(),
            k => k,
        }
    }

    fn train_many(
        &mut self,
        t: usize,
        clients: &[usize],
        anchor: &[f32],
        plans: Vec<ClientPlan>,
    ) -> Result<Vec<LocalStats>> {
        let (data, spec) = (self.data, self.spec);
        let job = Shared {
            data,
            spec,
            stop: self.stop,
        };
        let failed = |e| device_failed(spec, t, clients, self.cohort, e);
        if self.cohort > 1 {
            return train_cohort(&mut self.trainers[0], job, t, clients, anchor, plans)
                .map_err(failed);
        }
        if clients.len() == 1 || self.pools.is_empty() {
            return clients
                .iter()
                .zip(self.trainers.iter_mut())
                .zip(plans)
                .map(|((&c, tr), plan)| train_client(tr, job, t, c, anchor, plan))
                .collect::<std::result::Result<_, _>>()
                .map_err(failed);
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = clients
                .iter()
                .zip(self.trainers.iter_mut().zip(self.pools))
                .zip(plans)
                .map(|((&c, (tr, pool)), plan)| {
                    s.spawn(move || pool.install(|| train_client(tr, job, t, c, anchor, plan)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("client worker panicked"))
                .collect::<std::result::Result<_, _>>()
        })
        .map_err(failed)
    }

    fn delta(&self, k: usize) -> &[f32] {
        match self.cohort {
            1 => self.trainers[k].delta(0),
            _ => self.trainers[0].delta(k),
        }
    }

    fn full_gradient(&mut self, client: usize, at: &[f32]) -> Vec<f32> {
        let idx = &self.data.clients[client];
        self.trainers[0].full_gradient(self.data, idx, at, self.spec.local.batch_size)
    }
}
