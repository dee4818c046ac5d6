//! Local training as the round sees it ([`LocalTrainer`]): the round gives it clients and an
//! anchor and reads back each Δ_i; `workers.rs` implements it over burn models.

use crate::error::Result;
use crate::fl::client::LocalStats;
use crate::fl::plan::ClientPlan;

/// Local training as the round sees it: train clients from an anchor, leave each Δ_i.
pub trait LocalTrainer {
    /// How many clients `train_many` trains at once.
    fn width(&self) -> usize {
        1
    }
    /// Train `clients` (at most `width`) from `anchor`, each as its plan says; stats in the
    /// same order, and Δ of the k-th client in `delta(k)`.
    ///
    /// # Errors
    /// The device failed on the training (out of memory, say), naming what to change.
    fn train_many(
        &mut self,
        round: usize,
        clients: &[usize],
        anchor: &[f32],
        plans: Vec<ClientPlan>,
    ) -> Result<Vec<LocalStats>>;
    fn delta(&self, k: usize) -> &[f32];
    /// The loss gradient of client `client`'s whole data at `at` (for
    /// `RoundNeeds::mean_full_gradient`).
    fn full_gradient(&mut self, client: usize, at: &[f32]) -> Vec<f32>;
}
