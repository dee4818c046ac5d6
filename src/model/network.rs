//! What a model is to fedrun: a network written once as a computation over K copies of its
//! parameters (K ≥ 1), each layer reading its own leaves of the layout. A new model is one file that implements
//! [`Network`] and one line in [`super::Model::build`].

use burn::tensor::Tensor;

use super::ops::Ops;
use super::outputs::Outputs3;
use super::params::Layout;
use crate::data::Input;

pub trait Network: Send + Sync + std::fmt::Debug {
    /// Its parameters (with their paths and owners, which the initialisation reads), written
    /// when the network was made, the same walk that gave its layers the leaves they read.
    fn layout(&self) -> &Layout;

    /// The K copies' outputs on their batches one after another (`[K·b, …]`), the copies'
    /// parameters read through `ops` (its `copies` is K; its `dropout` draws each copy's
    /// masks).
    fn outputs(&self, input: Input, ops: &mut Ops) -> Outputs3;

    /// Whether each sample's outputs depend on its own input alone (false for a norm over the
    /// batch's statistics, LEAF's CelebA CNN): only then may a batch be padded with rows that
    /// weigh nothing (the default: true).
    fn rows_independent(&self) -> bool {
        true
    }

    /// The copies' logits from an activation at `level` (FedMLB's hybrid branches); None for a
    /// network without levels (the default).
    fn forward_from(&self, level: usize, x: Tensor<4>, ops: &mut Ops) -> Option<Tensor<3>> {
        let _ = (level, x, ops);
        None
    }
}
