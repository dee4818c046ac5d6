//! The dropout mask drawn on the device from seeds held in a device tensor, as a burn backend
//! extension: one op for the K copies of a layer (each copy's mask from its own seed, the same
//! values [`super::dropout`] draws for that copy alone), computed where the tensor lives (a
//! kernel on the GPU backends, `ext_gpu_mask.rs`; fedrun's CPU kernel on flex). The seeds are a
//! tensor, not a number given with the launch, so the same launch serves every step when the
//! seeds are written in place (a captured graph), and no step uploads a mask. Data, not
//! parameters: the autodiff side passes it through untracked.

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, AutodiffBackend, Backend, Flex, TensorMetadata, backend_extension};

use super::dropout::{self, Mask};
use super::ext::{tensor, with_slice};

#[backend_extension(
    Flex,
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrMask: Backend {
    /// The dropout mask of `like`'s shape (`1/(1 − prob)` where kept, else 0) for `copies`
    /// copies side by side along `axis`: copy c's part (`like` narrowed to its c-th of `axis`)
    /// is copy c's mask alone, drawn from its seed, row c of `seeds` (`[copies, 4]`: the 64-bit
    /// seed's 16-bit quarters, low first, as f32).
    #[fusion(dtype = like, shape = like)]
    fn fr_dropout_mask(
        like: FloatTensor<Self>,
        seeds: FloatTensor<Self>,
        axis: usize,
        copies: usize,
        prob: f64,
    ) -> FloatTensor<Self>;
}

/// `(outer, per)` of `shape` split into `copies` along `axis`: the elements before the axis, and
/// one copy's elements from the axis on (element (o, c, j) of the `[outer, copies, per]` view is
/// element `o·per + j` of copy c's part).
pub fn split(shape: &[usize], axis: usize, copies: usize) -> (usize, usize) {
    let outer = shape[..axis].iter().product();
    let per = shape[axis] / copies.max(1) * shape[axis + 1..].iter().product::<usize>();
    (outer, per)
}

/// A seed from its four 16-bit quarters, low first.
pub fn seed_of(q: &[f32]) -> u64 {
    q.iter()
        .rev()
        .fold(0u64, |s, &v| (s << 16) | (v as u64 & 0xffff))
}

/// A seed's four 16-bit quarters, low first, as f32 (exact).
pub fn quarters(seed: u64) -> [f32; 4] {
    std::array::from_fn(|i| ((seed >> (16 * i)) & 0xffff) as f32)
}

impl FrMask for Flex {
    fn fr_dropout_mask(
        like: FlexTensor,
        seeds: FlexTensor,
        axis: usize,
        copies: usize,
        prob: f64,
    ) -> FlexTensor {
        let shape = like.shape().to_vec();
        let (outer, per) = split(&shape, axis, copies);
        let masks: Vec<Vec<f32>> = with_slice(&seeds, |s| {
            (s.chunks(4).take(copies))
                .map(|q| dropout::values(outer * per, Mask::new(seed_of(q), prob)))
                .collect()
        });
        let mut out = Vec::with_capacity(outer * copies * per);
        for o in 0..outer {
            for m in &masks {
                out.extend_from_slice(&m[o * per..(o + 1) * per]);
            }
        }
        tensor(out, &shape)
    }
}

impl<B: Backend + FrMask, C: CheckpointStrategy> FrMask for Autodiff<B, C> {
    fn fr_dropout_mask(
        like: FloatTensor<Self>,
        seeds: FloatTensor<Self>,
        axis: usize,
        copies: usize,
        prob: f64,
    ) -> FloatTensor<Self> {
        let out = B::fr_dropout_mask(
            like.into_primitive(),
            seeds.into_primitive(),
            axis,
            copies,
            prob,
        );
        <Self as AutodiffBackend>::from_inner(out)
    }
}
