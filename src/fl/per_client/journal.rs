//! A store's undo log for the round in flight: each client's vector as it was before the
//! round's first change to it, kept so that a round stopped by a signal can be undone
//! ([`PerClient::rollback`](super::PerClient::rollback)) and the run checkpointed as it stood
//! after its last finished round. It holds the round's changed clients once each: about one
//! round's share of the store.

/// The vectors as they were before the round's first change to each.
pub struct Journal {
    /// Whether client `i` is already noted.
    noted: Vec<bool>,
    /// Each changed client's vector before (None: it had none).
    before: Vec<(usize, Option<Vec<f32>>)>,
}

impl Journal {
    /// An empty journal over `clients` clients.
    pub fn new(clients: usize) -> Self {
        Journal {
            noted: vec![false; clients],
            before: Vec::new(),
        }
    }

    /// Whether client `i`'s vector is still to be noted (it has not changed yet).
    pub fn wants(&self, i: usize) -> bool {
        !self.noted[i]
    }

    /// Note client `i`'s vector before its first change (None: it had none).
    pub fn note(&mut self, i: usize, before: Option<Vec<f32>>) {
        self.noted[i] = true;
        self.before.push((i, before));
    }

    /// Each changed client with its vector before the change.
    pub fn into_changes(self) -> Vec<(usize, Option<Vec<f32>>)> {
        self.before
    }
}
