//! The batch gather of a split kept on the device (`data/resident.rs`) as a burn backend
//! extension: rows of the split, each with its pixels taken through an index map (a crop, a
//! flip, FedACG's rotation; the identity without augmentation) in one kernel on the GPU backends
//! (`ext_gpu_gather.rs`). Data, not parameters: the autodiff side passes it through untracked.

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Autodiff, AutodiffBackend, Backend, backend_extension};

#[backend_extension(
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrGather: Backend {
    /// `[b, c, p]`: for each `k` of `rows` (`[b]`), row `rows[k]` of `src` (`[n, c, p]`, p
    /// pixels a channel) with its pixel `q` taken from pixel `map[k mod m, q]` of that row
    /// (`map` `[m, p]`, m = 1 or b), or `fill[channel]` where the map holds −1.
    #[fusion(meta = |src, rows, _map, _fill| gather_spec(src, rows))]
    fn fr_gather(
        src: FloatTensor<Self>,
        rows: IntTensor<Self>,
        map: IntTensor<Self>,
        fill: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

/// The output's spec `[b, c, p]` (the fused backend's metadata).
#[cfg(feature = "fusion")]
fn gather_spec(
    src: &burn::backend::fusion::custom::TensorSpec,
    rows: &burn::backend::fusion::custom::TensorSpec,
) -> burn::backend::fusion::custom::TensorSpec {
    let shape = burn::backend::Shape::from(vec![rows.shape[0], src.shape[1], src.shape[2]]);
    burn::backend::fusion::custom::TensorSpec::new(shape, src.dtype)
}

impl<B: Backend + FrGather, C: CheckpointStrategy> FrGather for Autodiff<B, C> {
    fn fr_gather(
        src: FloatTensor<Self>,
        rows: IntTensor<Self>,
        map: IntTensor<Self>,
        fill: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let out = B::fr_gather(src.into_primitive(), rows, map, fill.into_primitive());
        <Self as AutodiffBackend>::from_inner(out)
    }
}
