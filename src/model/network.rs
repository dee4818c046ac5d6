//! What a model is to fedrun: a network written once as a computation over K copies of its
//! parameters (K ≥ 1), read in its layout's order. A new model is one file that implements
//! [`Network`] and one line in [`super::Model::build`].

use burn::tensor::Tensor;

use super::cursor::Cursor;
use super::outputs::Outputs3;
use super::params::Builder;
use crate::data::Input;

pub trait Network: Send + Sync + std::fmt::Debug {
    /// Its parameters, in the order its forward reads them (with their paths and owners,
    /// which the initialisation reads).
    fn layout(&self) -> Builder;

    /// The K copies' outputs on their batches one after another (`[K·b, …]`), the copies'
    /// parameters read by `c` (its `copies` is K; its `dropout` draws each copy's masks).
    fn outputs(&self, input: Input, c: &mut Cursor) -> Outputs3;

    /// Whether each sample's outputs depend on its own input alone (false for a norm over the
    /// batch's statistics, LEAF's CelebA CNN): only then may a batch be padded with rows that
    /// weigh nothing (the default: true).
    fn rows_independent(&self) -> bool {
        true
    }

    /// The copies' logits from an activation at `level` (FedMLB's hybrid branches); None for a
    /// network without levels (the default).
    fn forward_from(&self, level: usize, x: Tensor<4>, c: &mut Cursor) -> Option<Tensor<3>> {
        let _ = (level, x, c);
        None
    }
}
