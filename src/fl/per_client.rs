//! Model-sized vectors kept per client (SCAFFOLD's c_i, FedDyn's g_i, FedDC's h_i and g_i,
//! MOON's previous models, Fed-LAMB's m_i): allocated when a client first stores one (so a run
//! holds only those of clients that have trained), and checkpointed as `<prefix>_<client>`.

use crate::error::{Error, Result};

pub struct PerClient {
    prefix: &'static str,
    dim: usize,
    v: Vec<Option<Vec<f32>>>,
}

impl PerClient {
    pub fn new(prefix: &'static str, clients: usize, dim: usize) -> Self {
        PerClient {
            prefix,
            dim,
            v: vec![None; clients],
        }
    }

    /// Client `i`'s vector, if it has one.
    pub fn get(&self, i: usize) -> Option<&[f32]> {
        self.v[i].as_deref()
    }

    /// Client `i`'s vector, zeros when it has none yet.
    pub fn get_mut(&mut self, i: usize) -> &mut Vec<f32> {
        let dim = self.dim;
        self.v[i].get_or_insert_with(|| vec![0.0; dim])
    }

    /// Replace client `i`'s vector.
    pub fn set(&mut self, i: usize, v: Vec<f32>) {
        self.v[i] = Some(v);
    }

    /// Forget client `i` (a client that left the federation): its vector is dropped and its
    /// memory freed; it starts from zeros if the client comes back.
    pub fn remove(&mut self, i: usize) {
        self.v[i] = None;
    }

    /// The stored vectors with their indices.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &[f32])> {
        self.v
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_deref().map(|v| (i, v)))
    }

    /// The checkpoint entries `<prefix>_<i>`, borrowed.
    pub fn state(&self) -> impl Iterator<Item = (String, &[f32])> {
        self.iter()
            .map(|(i, v)| (format!("{}_{i}", self.prefix), v))
    }

    /// Take this store's entries out of a checkpoint's vectors, in one pass.
    pub fn load(&mut self, state: &mut Vec<(String, Vec<f32>)>) -> Result<()> {
        let mut rest = Vec::with_capacity(state.len());
        for (name, v) in state.drain(..) {
            let i = name
                .strip_prefix(self.prefix)
                .and_then(|r| r.strip_prefix('_'))
                .and_then(|r| r.parse::<usize>().ok());
            match i {
                Some(i) if i < self.v.len() => {
                    if v.len() != self.dim {
                        return Err(Error::Run(format!(
                            "checkpoint state `{name}` has {} values, expected {}",
                            v.len(),
                            self.dim
                        )));
                    }
                    self.v[i] = Some(v);
                }
                _ => rest.push((name, v)),
            }
        }
        *state = rest;
        Ok(())
    }
}
