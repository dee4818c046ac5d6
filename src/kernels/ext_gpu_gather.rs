//! The batch gather of a resident split on the GPU backends, the `Cube` side of
//! [`super::ext_gather::FrGather`]: one kernel, a thread per output value, that copies the
//! source value (or the channel's fill): the same values as the host's gather, bit for bit.

use burn::backend::{DType, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::ext_gather::FrGather;
use super::gpu_grid::output;

/// A thread per value of `out` (`[b, c, p]`).
#[cube(launch, create_dummy_kernel)]
fn gather_mapped<F: Float, I: Int>(
    src: &Tensor<F>,
    rows: &Tensor<I>,
    map: &Tensor<I>,
    fill: &Tensor<F>,
    out: &mut Tensor<F>,
    map_rows: usize,
) {
    let (b, c, p) = (out.shape(0), out.shape(1), out.shape(2));
    if ABSOLUTE_POS >= b * c * p {
        terminate!();
    }
    let q = ABSOLUTE_POS % p;
    let ch = (ABSOLUTE_POS / p) % c;
    let k = ABSOLUTE_POS / (p * c);
    let at = map[(k % map_rows) * p + q];
    let mut v = fill[ch];
    if at >= I::new(0) {
        let row = usize::cast_from(rows[k]);
        v = src[(row * c + ch) * p + usize::cast_from(at)];
    }
    out[ABSOLUTE_POS] = v;
}

impl FrGather for CubeBackend {
    fn fr_gather(
        src: CubeTensor,
        rows: CubeTensor,
        map: CubeTensor,
        fill: CubeTensor,
    ) -> CubeTensor {
        let [src, rows, map, fill] = [src, rows, map, fill].map(into_contiguous);
        assert!(
            src.dtype == DType::F32 && rows.dtype == map.dtype,
            "fedrun's gather takes f32 values and one integer type for rows and map, not {:?}, {:?}, {:?}",
            src.dtype,
            rows.dtype,
            map.dtype
        );
        let (b, s, m) = (rows.shape()[0], src.shape(), map.shape()[0]);
        let (out, count, dim) = output(&src, &[b, s[1], s[2]]);
        let args = (
            src.clone().into_tensor_arg(),
            rows.clone().into_tensor_arg(),
            map.clone().into_tensor_arg(),
            fill.into_tensor_arg(),
            out.clone().into_tensor_arg(),
        );
        match rows.dtype {
            DType::I32 => gather_mapped::launch::<f32, i32>(
                &src.client,
                count,
                dim,
                args.0,
                args.1,
                args.2,
                args.3,
                args.4,
                m,
            ),
            DType::I64 => gather_mapped::launch::<f32, i64>(
                &src.client,
                count,
                dim,
                args.0,
                args.1,
                args.2,
                args.3,
                args.4,
                m,
            ),
            d => panic!("fedrun's gather takes i32 or i64 indices, not {d:?}"),
        }
        out
    }
}

/// The kernel as a batch of 4 CIFAR images is gathered (with i32 and with i64 indices), for its
/// CUDA source ([`super::cuda_source`]).
#[cfg(feature = "cuda")]
pub(super) fn dummies(d: &super::cuda_dummy::Dummy) -> Vec<Box<dyn cubecl::CubeKernel>> {
    let n = 4 * 3 * 1024;
    let args = || {
        (
            d.tensor(&[100, 3, 1024]),
            d.tensor(&[4]),
            d.tensor(&[4, 1024]),
            d.tensor(&[3]),
            d.tensor(&[4, 3, 1024]),
        )
    };
    let (a, b) = (args(), args());
    vec![
        Box::new(gather_mapped::create_dummy_kernel::<f32, i32>(
            d.props(),
            d.target(),
            d.count(n),
            d.dim(),
            a.0,
            a.1,
            a.2,
            a.3,
            a.4,
            4,
        )),
        Box::new(gather_mapped::create_dummy_kernel::<f32, i64>(
            d.props(),
            d.target(),
            d.count(n),
            d.dim(),
            b.0,
            b.1,
            b.2,
            b.3,
            b.4,
            4,
        )),
    ]
}
