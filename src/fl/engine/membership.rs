//! The dynamic client set (FedACG, Table 3): the partition's clients are a pool, and
//! `fl.active_clients` of them form the federation, drawn by seed; every round samples among
//! them. Every `fl.replace_every` rounds (a stage), each active client leaves with probability
//! `fl.replace_prob`, and a client drawn from those outside the federation at the stage's start
//! takes its place (in its slot, so the set's order, and the sampling, stay stable); the
//! algorithm forgets a client that leaves (`Strategy::forget`). A client that left may be drawn
//! again at a later stage, as a new client. With the defaults (all clients, no replacement) the
//! federation is the whole partition and the rounds are those of a fixed client set, bit for bit.

use crate::config::Spec;
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};

#[derive(Clone)]
pub struct Membership {
    seed: u64,
    pool: usize,
    every: usize,
    prob: f64,
    /// The federation, when it is not the whole pool.
    active: Option<Vec<usize>>,
}

impl Membership {
    /// The federation of round 0 over a pool of `pool` clients.
    pub fn new(spec: &Spec, pool: usize) -> Self {
        let fl = &spec.fl;
        let size = if fl.active_clients == 0 {
            pool
        } else {
            fl.active_clients.min(pool)
        };
        let active = (size < pool).then(|| {
            let mut a =
                Rng::derive(spec.run.seed, Stream::Membership, &[]).choose_distinct(pool, size);
            a.sort_unstable();
            a
        });
        Membership {
            seed: spec.run.seed,
            pool,
            every: fl.replace_every,
            prob: fl.replace_prob,
            active,
        }
    }

    /// Clients in the federation at any time.
    pub fn size(&self) -> usize {
        self.active.as_ref().map_or(self.pool, Vec::len)
    }

    /// The federation, when it is not the whole pool.
    pub fn active(&self) -> Option<&[usize]> {
        self.active.as_deref()
    }

    /// Before round t: at a stage's start, replace clients; the clients who left, in slot order.
    pub fn begin_round(&mut self, t: usize) -> Vec<usize> {
        let Some(active) = self.active.as_mut() else {
            return Vec::new();
        };
        if self.every == 0 || t == 0 || !t.is_multiple_of(self.every) {
            return Vec::new();
        }
        let mut rng = Rng::derive(self.seed, Stream::Membership, &[t as u64]);
        let mut outside: Vec<usize> = (0..self.pool).filter(|c| !active.contains(c)).collect();
        let mut left = Vec::new();
        for slot in active.iter_mut() {
            if rng.uniform() < self.prob && !outside.is_empty() {
                let joins = outside.swap_remove(rng.below(outside.len()));
                left.push(std::mem::replace(slot, joins));
            }
        }
        left
    }

    /// The federation a checkpoint recorded (None: the whole pool).
    pub fn restore(&mut self, active: Option<Vec<usize>>) -> Result<()> {
        let ok = match (&self.active, &active) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                let mut seen = vec![false; self.pool];
                a.len() == b.len()
                    && b.iter()
                        .all(|&c| c < self.pool && !std::mem::replace(&mut seen[c], true))
            }
            _ => false,
        };
        if !ok {
            return Err(Error::Run(format!(
                "the checkpoint's client set does not fit the spec ({} active of {} clients)",
                self.size(),
                self.pool
            )));
        }
        self.active = active;
        Ok(())
    }
}
