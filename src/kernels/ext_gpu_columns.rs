//! The copies' columns on the GPU backends, the `Cube` side of
//! [`super::ext_columns::FrColumns`]: the columns one kernel, a thread per column value (a copy,
//! or the padding's zero); the adjoint one kernel, a thread per input value summing the at most
//! `kh·kw` columns that read it, by kernel position (flex's order, so the same values).
//! Neighbouring threads take neighbouring output columns or input positions, so their reads
//! and writes are contiguous in the maps and in the columns alike.

use burn::backend::ops::ConvOptions;
use burn::backend::{DType, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;

use super::ext_columns::{Cols, FrColumns, dims4};
use super::gpu_grid::output;

/// A thread per value of `cols` `[K, c·kh·kw, n·oh·ow]`, from `x` `[n, K·c, h, w]`.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn columns_kernel<F: Float>(
    x: &Tensor<F>,
    cols: &mut Tensor<F>,
    c: usize,
    h: usize,
    w: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    ph: usize,
    pw: usize,
    ow: usize,
    l: usize,
) {
    if ABSOLUTE_POS >= cols.len() {
        terminate!();
    }
    let nl = cols.shape(2);
    let taps = kh * kw;
    let col = ABSOLUTE_POS % nl;
    let row = (ABSOLUTE_POS / nl) % (c * taps);
    let k = ABSOLUTE_POS / (nl * c * taps);
    let s = col / l;
    let p = col % l;
    let ci = row / taps;
    let tap = row % taps;
    // the position read, shifted by the padding before (below it is the padding)
    let y = (p / ow) * sh + tap / kw;
    let xx = (p % ow) * sw + tap % kw;
    let mut v = F::new(0.0);
    if y >= ph && y < h + ph && xx >= pw && xx < w + pw {
        let ch = (s * cols.shape(0) + k) * c + ci;
        v = x[(ch * h + y - ph) * w + xx - pw];
    }
    cols[ABSOLUTE_POS] = v;
}

/// A thread per value of `dx` `[n, K·c, h, w]`: the sum of the values of `d` (the columns'
/// shape) that read it, by kernel position.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn columns_adjoint_kernel<F: Float>(
    d: &Tensor<F>,
    dx: &mut Tensor<F>,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    ph: usize,
    pw: usize,
    oh: usize,
    ow: usize,
) {
    if ABSOLUTE_POS >= dx.len() {
        terminate!();
    }
    let h = dx.shape(2);
    let w = dx.shape(3);
    let kc = dx.shape(1);
    let nl = d.shape(2);
    // the position, shifted by the padding before
    let x = ABSOLUTE_POS % w + pw;
    let y = (ABSOLUTE_POS / w) % h + ph;
    let ch = (ABSOLUTE_POS / (w * h)) % kc;
    let s = ABSOLUTE_POS / (w * h * kc);
    // copy ch / c's channel ch % c: its rows start at ch·kh·kw, sample s's columns at s·oh·ow
    let first = ch * kh * kw * nl + s * oh * ow;
    let mut acc = F::new(0.0);
    // an output row oy reads y at kernel row ky where oy·sh + ky = y
    for ky in 0..kh {
        if y >= ky {
            let ty = y - ky;
            let oy = ty / sh;
            if oy * sh == ty && oy < oh {
                for kx in 0..kw {
                    if x >= kx {
                        let tx = x - kx;
                        let ox = tx / sw;
                        if ox * sw == tx && ox < ow {
                            acc += d[first + (ky * kw + kx) * nl + oy * ow + ox];
                        }
                    }
                }
            }
        }
    }
    dx[ABSOLUTE_POS] = acc;
}

/// `t` contiguous, checked to be f32.
fn f32_input(t: CubeTensor, what: &str) -> CubeTensor {
    assert!(
        t.dtype == DType::F32,
        "fedrun's copies' columns take f32 {what}, not {:?}",
        t.dtype
    );
    into_contiguous(t)
}

impl FrColumns for CubeBackend {
    fn fr_columns(x: CubeTensor, kernel: [usize; 2], o: ConvOptions<2>) -> CubeTensor {
        let x = f32_input(x, "maps");
        let g = Cols::new(dims4(&x.shape()), kernel, &o);
        let (out, count, dim) = output(&x, &g.columns());
        columns_kernel::launch::<f32>(
            &x.client,
            count,
            dim,
            x.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
            g.c,
            g.map[0],
            g.map[1],
            g.kernel[0],
            g.kernel[1],
            g.stride[0],
            g.stride[1],
            g.pad[0],
            g.pad[1],
            g.out[1],
            g.out[0] * g.out[1],
        );
        out
    }
    fn fr_columns_adjoint(
        d: CubeTensor,
        dims: [usize; 4],
        kernel: [usize; 2],
        o: ConvOptions<2>,
    ) -> CubeTensor {
        let d = f32_input(d, "column gradients");
        let g = Cols::new(dims, kernel, &o);
        let (dx, count, dim) = output(&d, &g.maps());
        columns_adjoint_kernel::launch::<f32>(
            &d.client,
            count,
            dim,
            d.clone().into_tensor_arg(),
            dx.clone().into_tensor_arg(),
            g.kernel[0],
            g.kernel[1],
            g.stride[0],
            g.stride[1],
            g.pad[0],
            g.pad[1],
            g.out[0],
            g.out[1],
        );
        dx
    }
}

/// The two kernels as a cohort of two copies of a 3 × 3 "same" layer of 3 channels launches
/// them (2 samples of 8 × 8), for their CUDA source ([`super::cuda_source`]).
#[cfg(feature = "cuda")]
pub(super) fn dummies(d: &super::cuda_dummy::Dummy) -> Vec<Box<dyn cubecl::CubeKernel>> {
    let cols = || d.tensor(&[2, 27, 128]);
    let (n, m) = (2 * 27 * 128, 2 * 6 * 8 * 8);
    vec![
        Box::new(columns_kernel::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            d.count(n),
            d.dim(),
            d.tensor(&[2, 6, 8, 8]),
            cols(),
            3,
            8,
            8,
            3,
            3,
            1,
            1,
            1,
            1,
            8,
            64,
        )),
        Box::new(columns_adjoint_kernel::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            d.count(m),
            d.dim(),
            cols(),
            d.tensor(&[2, 6, 8, 8]),
            3,
            3,
            1,
            1,
            1,
            1,
            8,
            8,
        )),
    ]
}
