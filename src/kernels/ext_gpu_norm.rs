//! fedrun's GroupNorm on the GPU backends (cubecl's runtimes: wgpu, Vulkan, CUDA), the `Cube`
//! side of [`super::ext_norm::FrNorm`]: the forward is one kernel (a cube per (sample, group)
//! reduces its block's mean and variance in shared memory, then writes the normalised,
//! scaled and shifted output, with the ReLU where the model has one), the backward two (the
//! input's gradient, a cube per (sample, group); γ's and β's, a cube per channel). burn's
//! GroupNorm module is a dozen whole-tensor ops each way. The same formula as burn's and as
//! flex's (`norm.rs`): each group's mean and biased variance, `1/sqrt(var + eps)`, and the
//! statistics kept for the backward as `[mean, 1/σ]` per (sample, group).

use burn::backend::{DType, Shape, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use cubecl::CubeDim;
use cubecl::prelude::*;

use super::ext_norm::FrNorm;
use super::gpu_grid::{alloc, cubes};

/// The threads of a cube (the reductions in [`cube_sum`] start from half of it).
const THREADS: usize = 256;

/// The sum of `v` over the cube's [`THREADS`] units, through `shared` (each unit gets it).
#[cube]
fn cube_sum<F: Float>(v: F, shared: &mut Shared<[F]>) -> F {
    let u = UNIT_POS as usize;
    shared[u] = v;
    sync_cube();
    // a runtime counter (one derived from a comptime value would be folded at expansion)
    let mut half = 128usize;
    while half > 0 {
        if u < half {
            shared[u] = shared[u] + shared[u + half];
        }
        sync_cube();
        half /= 2;
    }
    let total = shared[0];
    sync_cube();
    total
}

/// `dy` where the output went through the ReLU (`x̂·γ + β > 0`), else 0; `dy` without one.
#[cube]
// `relu` is known when the kernel is compiled, the test is not: two `if`s, not one
#[allow(clippy::collapsible_if)]
fn masked<F: Float>(dy: F, xh: F, gamma: F, beta: F, #[comptime] relu: bool) -> F {
    let mut d = dy;
    if relu {
        if xh * gamma + beta <= F::new(0.0) {
            d = F::new(0.0);
        }
    }
    d
}

/// A cube per (sample, group) block of `cpg · plane` contiguous values (NCHW): its mean and
/// `1/σ` into `stats`, its output into `y`.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn gn_forward<F: Float>(
    x: &Tensor<F>,
    gamma: &Tensor<F>,
    beta: &Tensor<F>,
    y: &mut Tensor<F>,
    stats: &mut Tensor<F>,
    cpg: usize,
    plane: usize,
    groups: usize,
    eps: f32,
    blocks: usize,
    #[comptime] relu: bool,
) {
    let block = CUBE_POS;
    if block >= blocks {
        terminate!();
    }
    let (m, u) = (cpg * plane, UNIT_POS as usize);
    let start = block * m;
    let mut shared = Shared::new_slice(THREADS);
    let mut acc = F::new(0.0);
    let mut i = u;
    while i < m {
        acc += x[start + i];
        i += THREADS;
    }
    let mean = cube_sum::<F>(acc, &mut shared) / F::cast_from(m);
    let mut sq = F::new(0.0);
    let mut i = u;
    while i < m {
        let d = x[start + i] - mean;
        sq += d * d;
        i += THREADS;
    }
    let var = cube_sum::<F>(sq, &mut shared) / F::cast_from(m);
    let rstd = F::new(1.0) / F::sqrt(var + F::cast_from(eps));
    if u == 0 {
        stats[2 * block] = mean;
        stats[2 * block + 1] = rstd;
    }
    let c0 = (block % groups) * cpg;
    let mut i = u;
    while i < m {
        let c = c0 + i / plane;
        let mut v = (x[start + i] - mean) * rstd * gamma[c] + beta[c];
        if relu {
            v = F::max(v, F::new(0.0));
        }
        y[start + i] = v;
        i += THREADS;
    }
}

/// The input's gradient, a cube per (sample, group): `1/σ·(d − mean(d) − x̂·mean(d·x̂))` with
/// `d = dy'·γ` (`dy'` masked by the ReLU).
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn gn_backward_x<F: Float>(
    x: &Tensor<F>,
    stats: &Tensor<F>,
    gamma: &Tensor<F>,
    beta: &Tensor<F>,
    dy: &Tensor<F>,
    dx: &mut Tensor<F>,
    cpg: usize,
    plane: usize,
    groups: usize,
    blocks: usize,
    #[comptime] relu: bool,
) {
    let block = CUBE_POS;
    if block >= blocks {
        terminate!();
    }
    let (m, u) = (cpg * plane, UNIT_POS as usize);
    let start = block * m;
    let (mean, rstd) = (stats[2 * block], stats[2 * block + 1]);
    let c0 = (block % groups) * cpg;
    let mut shared = Shared::new_slice(THREADS);
    let (mut a, mut b) = (F::new(0.0), F::new(0.0));
    let mut i = u;
    while i < m {
        let c = c0 + i / plane;
        let xh = (x[start + i] - mean) * rstd;
        let d = masked::<F>(dy[start + i], xh, gamma[c], beta[c], relu) * gamma[c];
        a += d;
        b += d * xh;
        i += THREADS;
    }
    let a = cube_sum::<F>(a, &mut shared) / F::cast_from(m);
    let b = cube_sum::<F>(b, &mut shared) / F::cast_from(m);
    let mut i = u;
    while i < m {
        let c = c0 + i / plane;
        let xh = (x[start + i] - mean) * rstd;
        let d = masked::<F>(dy[start + i], xh, gamma[c], beta[c], relu) * gamma[c];
        dx[start + i] = rstd * (d - a - xh * b);
        i += THREADS;
    }
}

/// γ's and β's gradients, a cube per channel: `Σ dy'·x̂` and `Σ dy'` over the batch and the map.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn gn_backward_affine<F: Float>(
    x: &Tensor<F>,
    stats: &Tensor<F>,
    gamma: &Tensor<F>,
    beta: &Tensor<F>,
    dy: &Tensor<F>,
    dgamma: &mut Tensor<F>,
    dbeta: &mut Tensor<F>,
    batch: usize,
    channels: usize,
    cpg: usize,
    plane: usize,
    #[comptime] relu: bool,
) {
    let c = CUBE_POS;
    if c >= channels {
        terminate!();
    }
    let u = UNIT_POS as usize;
    let groups = channels / cpg;
    let mut shared = Shared::new_slice(THREADS);
    let (mut sg, mut sb) = (F::new(0.0), F::new(0.0));
    let mut i = u;
    while i < batch * plane {
        let (n, p) = (i / plane, i % plane);
        let at = (n * channels + c) * plane + p;
        let block = n * groups + c / cpg;
        let xh = (x[at] - stats[2 * block]) * stats[2 * block + 1];
        let d = masked::<F>(dy[at], xh, gamma[c], beta[c], relu);
        sg += d * xh;
        sb += d;
        i += THREADS;
    }
    let sg = cube_sum::<F>(sg, &mut shared);
    let sb = cube_sum::<F>(sb, &mut shared);
    if u == 0 {
        dgamma[c] = sg;
        dbeta[c] = sb;
    }
}

/// `x`'s sizes: samples, channels, the map's positions.
fn sizes(x: &CubeTensor) -> (usize, usize, usize) {
    let s = x.shape();
    assert!(
        s.num_dims() == 4 && x.dtype == DType::F32,
        "fedrun's GroupNorm takes an f32 NCHW tensor, not {:?} {:?}",
        x.dtype,
        s
    );
    (s[0], s[1], s[2] * s[3])
}

impl FrNorm for CubeBackend {
    fn fr_group_norm(
        x: CubeTensor,
        gamma: CubeTensor,
        beta: CubeTensor,
        groups: usize,
        eps: f64,
        relu: bool,
    ) -> (CubeTensor, CubeTensor) {
        let (x, gamma, beta) = (
            into_contiguous(x),
            into_contiguous(gamma),
            into_contiguous(beta),
        );
        let (n, c, plane) = sizes(&x);
        let (y, stats) = (
            alloc(&x, x.shape()),
            alloc(&x, Shape::from(vec![2 * n * groups])),
        );
        gn_forward::launch::<f32>(
            &x.client,
            cubes(n * groups),
            CubeDim::new_1d(THREADS as u32),
            x.clone().into_tensor_arg(),
            gamma.into_tensor_arg(),
            beta.into_tensor_arg(),
            y.clone().into_tensor_arg(),
            stats.clone().into_tensor_arg(),
            c / groups,
            plane,
            groups,
            eps as f32,
            n * groups,
            relu,
        );
        (y, stats)
    }

    fn fr_group_norm_backward(
        x: CubeTensor,
        stats: CubeTensor,
        gamma: CubeTensor,
        beta: CubeTensor,
        dy: CubeTensor,
        groups: usize,
        relu: bool,
    ) -> (CubeTensor, CubeTensor, CubeTensor) {
        let (x, gamma, beta, dy) = (
            into_contiguous(x),
            into_contiguous(gamma),
            into_contiguous(beta),
            into_contiguous(dy),
        );
        let (n, c, plane) = sizes(&x);
        let dx = alloc(&x, x.shape());
        let (dgamma, dbeta) = (alloc(&x, gamma.shape()), alloc(&x, beta.shape()));
        let arg = |t: &CubeTensor| t.clone().into_tensor_arg();
        gn_backward_x::launch::<f32>(
            &x.client,
            cubes(n * groups),
            CubeDim::new_1d(THREADS as u32),
            arg(&x),
            arg(&stats),
            arg(&gamma),
            arg(&beta),
            arg(&dy),
            arg(&dx),
            c / groups,
            plane,
            groups,
            n * groups,
            relu,
        );
        gn_backward_affine::launch::<f32>(
            &x.client,
            cubes(c),
            CubeDim::new_1d(THREADS as u32),
            arg(&x),
            arg(&stats),
            arg(&gamma),
            arg(&beta),
            arg(&dy),
            arg(&dgamma),
            arg(&dbeta),
            n,
            c,
            c / groups,
            plane,
            relu,
        );
        (dx, dgamma, dbeta)
    }
}

/// The three kernels as ResNet-18's first GroupNorm launches them at batch 2 (64 channels in 2
/// groups, 32 × 32 maps), with and without the ReLU, for their CUDA source
/// ([`super::cuda_source`]).
#[cfg(feature = "cuda")]
pub(super) fn dummies(d: &super::cuda_dummy::Dummy) -> Vec<Box<dyn cubecl::CubeKernel>> {
    let (n, c, groups, plane) = (2, 64, 2, 1024);
    let x = || d.tensor(&[n, c, 32, 32]);
    let (ch, stats) = (|| d.tensor(&[c]), || d.tensor(&[2 * n * groups]));
    let dim = CubeDim::new_1d(THREADS as u32);
    let mut kernels: Vec<Box<dyn cubecl::CubeKernel>> = Vec::new();
    for relu in [false, true] {
        kernels.push(Box::new(gn_forward::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            cubes(n * groups),
            dim,
            x(),
            ch(),
            ch(),
            x(),
            stats(),
            c / groups,
            plane,
            groups,
            1e-5,
            n * groups,
            relu,
        )));
        kernels.push(Box::new(gn_backward_x::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            cubes(n * groups),
            dim,
            x(),
            stats(),
            ch(),
            ch(),
            x(),
            x(),
            c / groups,
            plane,
            groups,
            n * groups,
            relu,
        )));
        kernels.push(Box::new(gn_backward_affine::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            cubes(c),
            dim,
            x(),
            stats(),
            ch(),
            ch(),
            x(),
            ch(),
            ch(),
            n,
            c,
            c / groups,
            plane,
            relu,
        )));
    }
    kernels
}
