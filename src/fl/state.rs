//! What an algorithm keeps between rounds, declared once
//! ([`Strategy::state`](super::strategy::Strategy::state)): model-sized vectors by name, vectors
//! that exist only after some round (MOON's θ_0, FedExP's evaluated average), per-client stores,
//! and the vectors of its server links. Checkpoints, resume, `forget` of a client who leaves,
//! the spill store and the memory estimate all follow from the one list.

use super::per_client::PerClient;
use super::server::ServerChain;
use crate::error::{Error, Result};
use crate::optim::Transform;

/// An algorithm's state, borrowed.
#[derive(Default)]
pub struct State<'a> {
    vectors: Vec<(&'static str, &'a mut Vec<f32>)>,
    optional: Vec<(&'static str, &'a mut Option<Vec<f32>>, usize)>,
    stores: Vec<&'a mut PerClient>,
}

impl<'a> State<'a> {
    /// Nothing kept.
    pub fn none() -> Self {
        State::default()
    }

    /// A model-sized vector, checkpointed as `name`.
    pub fn vector(mut self, name: &'static str, v: &'a mut Vec<f32>) -> Self {
        self.vectors.push((name, v));
        self
    }

    /// A vector of `len` values that exists only from some round on, checkpointed as `name`
    /// when it does.
    pub fn optional(mut self, name: &'static str, v: &'a mut Option<Vec<f32>>, len: usize) -> Self {
        self.optional.push((name, v, len));
        self
    }

    /// A per-client store (one model-sized vector per client, at most).
    pub fn store(mut self, s: &'a mut PerClient) -> Self {
        self.stores.push(s);
        self
    }

    /// The vectors of one link (a momentum kept outside a chain).
    pub fn link(mut self, link: &'a mut dyn Transform) -> Self {
        self.vectors.extend(link.vectors());
        self
    }

    /// The vectors of a server chain's links.
    pub fn server(mut self, chain: &'a mut ServerChain) -> Self {
        self.vectors.extend(chain.vectors());
        self
    }

    /// Another state after this one (a wrapped algorithm's).
    pub fn and(mut self, other: State<'a>) -> Self {
        self.vectors.extend(other.vectors);
        self.optional.extend(other.optional);
        self.stores.extend(other.stores);
        self
    }

    /// Refuse two vectors of one name: the checkpoint keys them by name, so the second would be
    /// restored from the first's values without a word.
    pub fn check_names(&self) -> Result<()> {
        let names: Vec<&str> = (self.vectors.iter().map(|(n, _)| *n))
            .chain(self.optional.iter().map(|(n, _, _)| *n))
            .collect();
        match super::server::duplicate(&names) {
            Some(d) => Err(Error::Run(format!(
                "the algorithm keeps two state vectors named `{d}`: a checkpoint could not tell them apart"
            ))),
            None => Ok(()),
        }
    }

    /// How many model-sized vectors it keeps per client, at most.
    pub fn per_client_vectors(&self) -> usize {
        self.stores.len()
    }

    /// The per-client stores, for the engine to stage, spill and sync.
    pub fn stores(self) -> Vec<&'a mut PerClient> {
        self.stores
    }

    /// Drop what is kept for `client` (it left the federation).
    pub fn forget(self, client: usize) -> Result<()> {
        for s in self.stores {
            s.remove(client)?;
        }
        Ok(())
    }

    /// The state as it is now, to go back to if the round about to run is abandoned: a copy of
    /// each vector, and each store noting its clients' vectors before they change.
    pub fn mark(self) -> Mark {
        for s in self.stores {
            s.begin_journal();
        }
        Mark {
            vectors: self.vectors.iter().map(|(_, v)| v.to_vec()).collect(),
            optional: self
                .optional
                .iter()
                .map(|(_, v, _)| (**v).clone())
                .collect(),
        }
    }

    /// Go back to `mark` (taken of this same state): every vector and store as it was then.
    pub fn rollback(self, mark: Mark) -> Result<()> {
        for ((_, v), m) in self.vectors.into_iter().zip(mark.vectors) {
            *v = m;
        }
        for ((_, v, _), m) in self.optional.into_iter().zip(mark.optional) {
            *v = m;
        }
        for s in self.stores {
            s.rollback()?;
        }
        Ok(())
    }

    /// The round since the mark stands: the stores stop noting.
    pub fn keep(self) {
        for s in self.stores {
            s.end_journal();
        }
    }

    /// The checkpoint's entries, borrowed: the vectors, the optional ones present, then each
    /// store's entries.
    pub fn checkpoint(self) -> Vec<(String, &'a [f32])> {
        let vectors = self.vectors.into_iter().map(|(n, v)| {
            let v: &'a Vec<f32> = v;
            (n.to_string(), v.as_slice())
        });
        let optional = self.optional.into_iter().filter_map(|(n, v, _)| {
            let v: &'a Option<Vec<f32>> = v;
            v.as_deref().map(|v| (n.to_string(), v))
        });
        let stores = self.stores.into_iter().flat_map(|s| {
            let s: &'a PerClient = s;
            s.state()
        });
        vectors.chain(optional).chain(stores).collect()
    }

    /// Restore what [`checkpoint`](Self::checkpoint) gave: each vector must be there with
    /// its length; an optional one is restored when there.
    pub fn restore(self, mut saved: Vec<(String, Vec<f32>)>) -> Result<()> {
        self.check_names()?;
        for (name, v) in self.vectors {
            *v = take_state(&mut saved, name, v.len())?;
        }
        for (name, v, len) in self.optional {
            if saved.iter().any(|(n, _)| n == name) {
                *v = Some(take_state(&mut saved, name, len)?);
            }
        }
        for s in self.stores {
            s.load(&mut saved)?;
        }
        Ok(())
    }
}

/// An algorithm's state as it was before a round ([`State::mark`]).
pub struct Mark {
    vectors: Vec<Vec<f32>>,
    optional: Vec<Option<Vec<f32>>>,
}

/// Pick a named vector out of a checkpointed state.
pub fn take_state(state: &mut Vec<(String, Vec<f32>)>, name: &str, len: usize) -> Result<Vec<f32>> {
    let i = state
        .iter()
        .position(|(n, _)| n == name)
        .ok_or_else(|| Error::Run(format!("checkpoint has no algorithm state `{name}`")))?;
    let v = state.swap_remove(i).1;
    if v.len() != len {
        return Err(Error::Run(format!(
            "checkpoint state `{name}` has {} values, expected {len}",
            v.len()
        )));
    }
    Ok(v)
}
