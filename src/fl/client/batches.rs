//! The batches of a client's local steps: a shuffled pass over its samples, reshuffled when it
//! runs out; the last batch of a pass may be short.

use crate::rng::Rng;

pub struct Batches<'a> {
    idx: &'a [usize],
    batch: usize,
    order: Vec<usize>,
    pos: usize,
}

impl<'a> Batches<'a> {
    /// Batches of `batch` of the samples `idx`.
    pub fn new(idx: &'a [usize], batch: usize) -> Self {
        Batches {
            idx,
            batch,
            order: Vec::with_capacity(idx.len()),
            pos: usize::MAX,
        }
    }

    /// The next batch, shuffling with `rng` at the start of each pass.
    pub fn next_batch(&mut self, rng: &mut Rng) -> &[usize] {
        if self.pos >= self.order.len() {
            self.order.clear();
            self.order.extend_from_slice(self.idx);
            rng.shuffle(&mut self.order);
            self.pos = 0;
        }
        let start = self.pos;
        let end = (start + self.batch).min(self.order.len());
        self.pos = end;
        &self.order[start..end]
    }
}
