//! The server's step as a chain of links, in the manner of optax: a strategy declares its links
//! ([`Strategy::server`](super::strategy::Strategy::server)), and the default `server_update`
//! runs them in order on the round's mean update Δ̄, applies `x ← x + u` and writes the log.
//! The links implement the same trait as the local steps' (`optim`): FedAvgM is
//! `[trace(β), scale(η_g)]`, ACG `[scale(η_g), trace(λ)]`, FedAdam
//! `[scale_by_adaptive, scale(η_g)]`, FedExP `[extrapolated_step]`, FedCM
//! `[keep_last, scale(η_g)]`; plain averaging is `[scale(η_g)]`.

use crate::optim::{Ctx, Log, Scale, Transform};

/// The aggregate of the round's client updates.
#[derive(Clone, Debug)]
pub struct Aggregate {
    /// Δ̄ = Σ p_i Δ_i / Σ p_i over the sampled clients.
    pub mean_delta: Vec<f32>,
    /// G = Σ p_i ‖Δ_i‖² / Σ p_i.
    pub mean_sq_norm: f64,
    pub clients: usize,
}

/// Server-side quantities logged in the CSV.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerLog {
    /// The global step η_g actually used.
    pub server_lr: f64,
    /// Norm of the server state (momentum), where the algorithm has one.
    pub state_norm: Option<f64>,
    /// The fraction of the second moment v̂'s coordinates at its ε floor, where the algorithm
    /// keeps one (the AMSGrad family): those coordinates step by about `m/√ε`.
    pub at_floor: Option<f64>,
}

/// Server links applied in order to Δ̄; their state is the strategy's (see `fl/state.rs`).
pub struct ServerChain {
    links: Vec<Box<dyn Transform + Sync>>,
}

impl ServerChain {
    /// A chain of `links`. The names of their vectors are the checkpoint's names, so two
    /// links that keep a vector of the same name cannot share a chain (optax's `named_chain`
    /// refuses them likewise): that is a bug in the strategy that builds it, and panics here.
    pub fn new(links: Vec<Box<dyn Transform + Sync>>) -> Self {
        let names: Vec<&str> = links
            .iter()
            .flat_map(|l| l.state())
            .map(|(n, _)| n)
            .collect();
        if let Some(d) = duplicate(&names) {
            panic!("two server links keep a vector named `{d}`: a chain's state names must differ");
        }
        ServerChain { links }
    }

    /// A link's vector, by name (ACG's momentum `m`, FedCM's `last`).
    pub fn get(&self, name: &str) -> Option<&[f32]> {
        self.links
            .iter()
            .flat_map(|l| l.state())
            .find_map(|(n, v)| (n == name).then_some(v))
    }

    /// Plain averaging: `[scale(η_g)]`.
    pub fn averaging(eta: f64) -> Self {
        ServerChain::new(vec![Box::new(Scale(eta))])
    }

    /// Run the links on the aggregate's Δ̄ (in place) in round `round`, then `x ← x + u`. The
    /// log's step size is the one a scaling link applied (1 where none did), its state norm
    /// that of the first link that keeps state.
    pub fn step(&mut self, round: usize, global: &mut [f32], agg: &mut Aggregate) -> ServerLog {
        let ctx = Ctx {
            round,
            mean_sq_norm: agg.mean_sq_norm,
            clients: agg.clients,
            ..Ctx::default()
        };
        let mut log = Log::default();
        for link in &mut self.links {
            link.update(&mut agg.mean_delta, global, &ctx, &mut log);
        }
        global
            .iter_mut()
            .zip(&agg.mean_delta)
            .for_each(|(x, u)| *x += u);
        ServerLog {
            server_lr: log.step_size.unwrap_or(1.0),
            state_norm: self.links.iter().find_map(|l| l.state_norm()),
            at_floor: None,
        }
    }

    /// The links' vectors, by name, in chain order (the names differ: `new`).
    pub fn vectors(&mut self) -> Vec<(&'static str, &mut Vec<f32>)> {
        self.links.iter_mut().flat_map(|l| l.vectors()).collect()
    }
}

/// The first name that occurs twice.
pub fn duplicate<'a>(names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(*n))
}
