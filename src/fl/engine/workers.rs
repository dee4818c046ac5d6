//! [`LocalTrainer`] over burn models: one trainer per client worker, each on its own one-thread
//! pool, or the cohort trainer (`run.cohort`).

use burn::tensor::Device;
use std::sync::atomic::AtomicBool;

use crate::config::Spec;
use crate::data::FedData;
use crate::fl::client::{Cohort, LocalStats, Trainer, Work, cohort_why_not, local_steps};
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
    /// The cohort step's trainer and its width (`run.cohort`): clients are then given `width`
    /// at a time, and every Δ is left in the cohort's slots.
    pub cohort: Option<(&'a mut Cohort, usize)>,
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

/// Train client `c` of round `t` on `trainer`.
fn train_client(
    trainer: &mut Trainer,
    job: Shared,
    t: usize,
    c: usize,
    anchor: &[f32],
    plan: ClientPlan,
) -> LocalStats {
    let schedule = Schedule::new(&job.spec.local);
    let (work, mut rng) = work_of(job, &schedule, t, c, anchor);
    trainer.train(job.data, plan, &work, &mut rng)
}

/// Train `clients` as one cohort when every plan stacks; else one at a time on `trainer`
/// (saying why, once), each Δ copied into the cohort's slots.
fn train_cohort(
    cohort: &mut Cohort,
    trainer: &mut Trainer,
    job: Shared,
    t: usize,
    clients: &[usize],
    anchor: &[f32],
    plans: Vec<ClientPlan>,
) -> Vec<LocalStats> {
    let why = plans.iter().find_map(cohort_why_not);
    if clients.len() > 1 && why.is_none() {
        let schedule = Schedule::new(&job.spec.local);
        let (works, mut rngs): (Vec<Work>, Vec<Rng>) = clients
            .iter()
            .map(|&c| work_of(job, &schedule, t, c, anchor))
            .unzip();
        return cohort.train(job.data, plans, &works, &mut rngs);
    }
    if let Some(why) = why {
        cohort.note_once(why);
    }
    let mut out = Vec::with_capacity(clients.len());
    for (k, (&c, plan)) in clients.iter().zip(plans).enumerate() {
        // dropout draws from the backend's global generator: seed it per client
        out.push(train_client(trainer, job, t, c, anchor, plan));
        let slot = cohort.delta_mut(k);
        slot.clear();
        slot.extend_from_slice(trainer.delta());
    }
    out
}

impl LocalTrainer for BurnClients<'_> {
    fn width(&self) -> usize {
        match &self.cohort {
            Some((_, k)) => *k,
            None => self.trainers.len(),
        }
    }

    fn train_many(
        &mut self,
        t: usize,
        clients: &[usize],
        anchor: &[f32],
        plans: Vec<ClientPlan>,
    ) -> Vec<LocalStats> {
        let (data, spec) = (self.data, self.spec);
        let job = Shared {
            data,
            spec,
            stop: self.stop,
        };
        if let Some((cohort, _)) = &mut self.cohort {
            let trainer = &mut self.trainers[0];
            return train_cohort(cohort, trainer, job, t, clients, anchor, plans);
        }
        if clients.len() == 1 || self.pools.is_empty() {
            return clients
                .iter()
                .zip(self.trainers.iter_mut())
                .zip(plans)
                .map(|((&c, tr), plan)| {
                    // dropout draws from the backend's global generator: seed it per client
                    self.device.seed(
                        Rng::derive(spec.run.seed, Stream::Dropout, &[t as u64, c as u64])
                            .next_u64(),
                    );
                    train_client(tr, job, t, c, anchor, plan)
                })
                .collect();
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
                .collect()
        })
    }

    fn delta(&self, k: usize) -> &[f32] {
        match &self.cohort {
            Some((cohort, _)) => cohort.delta(k),
            None => self.trainers[k].delta(),
        }
    }

    fn full_gradient(&mut self, client: usize, at: &[f32]) -> Vec<f32> {
        let idx = &self.data.clients[client];
        self.trainers[0].full_gradient(self.data, idx, at, self.spec.local.batch_size)
    }
}
