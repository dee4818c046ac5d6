//! What fedrun's cube kernels share on the GPU backends: a launch's cube count past the 65,535
//! cubes a dimension may hold, a new f32 output beside an input, and an elementwise launch's
//! output and grid.

use burn::backend::{DType, Shape};
use burn_cubecl::cubecl::prelude::CubeCount;
use burn_cubecl::cubecl::{CubeDim, calculate_cube_count_elemwise};
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;

/// `n` cubes (at least), in two dimensions past the 65,535 a dimension may hold; a kernel
/// launched with it ends the cubes past `n` (its `CUBE_POS` runs over both dimensions).
pub(super) fn cubes(n: usize) -> CubeCount {
    const MAX: usize = 65_535;
    let (x, y) = (n.min(MAX), n.div_ceil(MAX).max(1));
    CubeCount::Static(x as u32, y as u32, 1)
}

/// A new contiguous f32 tensor of `shape` on `like`'s device.
pub(super) fn alloc(like: &CubeTensor, shape: Shape) -> CubeTensor {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, DType::F32)
}

/// A new contiguous f32 tensor of `dims` on `like`'s device, and the launch's cube count and
/// dimension for a thread per value.
pub(super) fn output(like: &CubeTensor, dims: &[usize]) -> (CubeTensor, CubeCount, CubeDim) {
    let out = alloc(like, Shape::from(dims.to_vec()));
    let n: usize = dims.iter().product();
    let dim = CubeDim::new(&like.client, n);
    let count = calculate_cube_count_elemwise(&like.client, n, dim);
    (out, count, dim)
}
