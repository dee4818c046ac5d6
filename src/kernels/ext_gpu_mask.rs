//! The dropout mask of K copies on the GPU backends, the `Cube` side of
//! [`super::ext_mask::FrMask`]: one kernel, a thread per value, that computes the hash of
//! [`super::dropout`] (Wellons' lowbias32, twice) in u32 arithmetic from the copy's seed read
//! from the seeds tensor: the same values as the CPU kernel, bit for bit.

use burn::backend::{DType, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::dropout::Mask;
use super::ext_mask::{FrMask, split};
use super::gpu_grid::output;

/// Wellons' lowbias32 (as `dropout::mix`).
#[cube]
fn mix(x: u32) -> u32 {
    let a = x ^ (x >> 16u32);
    let b = a * 0x7feb_352du32;
    let c = b ^ (b >> 15u32);
    let d = c * 0x846c_a68bu32;
    d ^ (d >> 16u32)
}

/// A thread per value of `out`, seen as `[outer, copies, per]`.
#[cube(launch, create_dummy_kernel)]
fn dropout_mask(
    seeds: &Tensor<f32>,
    out: &mut Tensor<f32>,
    copies: u32,
    per: u32,
    threshold: u32,
    scale: f32,
) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let pos = u32::cast_from(ABSOLUTE_POS);
    let r = pos % (copies * per);
    let c = r / per;
    let i = (pos / (copies * per)) * per + r % per;
    let at = (c * 4u32) as usize;
    let lo = u32::cast_from(seeds[at]) | (u32::cast_from(seeds[at + 1]) << 16u32);
    let hi = u32::cast_from(seeds[at + 2]) | (u32::cast_from(seeds[at + 3]) << 16u32);
    let h = mix(mix(i ^ lo) + hi);
    let mut v = 0.0f32;
    if h < threshold {
        v = scale;
    }
    out[ABSOLUTE_POS] = v;
}

impl FrMask for CubeBackend {
    fn fr_dropout_mask(
        like: CubeTensor,
        seeds: CubeTensor,
        axis: usize,
        copies: usize,
        prob: f64,
    ) -> CubeTensor {
        let seeds = into_contiguous(seeds);
        assert!(
            seeds.dtype == DType::F32,
            "fedrun's dropout mask takes f32 seed quarters, not {:?}",
            seeds.dtype
        );
        let dims = like.shape().to_vec();
        let (_, per) = split(&dims, axis, copies);
        let (out, count, dim) = output(&like, &dims);
        let m = Mask::new(0, prob);
        dropout_mask::launch(
            &like.client,
            count,
            dim,
            seeds.into_tensor_arg(),
            out.clone().into_tensor_arg(),
            copies as u32,
            per as u32,
            m.threshold(),
            m.scale(),
        );
        out
    }
}

/// The kernel as 2 copies' masks of 64 values are drawn, for its CUDA source
/// ([`super::cuda_source`]).
#[cfg(feature = "cuda")]
pub(super) fn dummies(d: &super::cuda_dummy::Dummy) -> Vec<Box<dyn cubecl::CubeKernel>> {
    let m = Mask::new(0, 0.1);
    vec![Box::new(dropout_mask::create_dummy_kernel(
        d.props(),
        d.target(),
        d.count(128),
        d.dim(),
        d.tensor(&[8]),
        d.tensor(&[2, 64]),
        2,
        64,
        m.threshold(),
        m.scale(),
    ))]
}
