//! A convolution's weight gradient on the GPU backends where cubek's implicit GEMM does not
//! apply (f32 without the tensor-core product, or a shape it refuses), as products: the input's
//! columns (im2col, the samples side by side, the padding read as zero: one kernel,
//! [`super::ext_columns`]), then one product of the output gradient `[cout, n·L]` with the columns
//! `[n·L, cin·kh·kw]`. burn's fallback computes the same gradient as a direct convolution of
//! the input by the output gradient, in which each weight value is one thread looping over every
//! sample and output position: LEAF's CelebA CNN's first layer at batch 50 is 864 threads of
//! 352,800 steps each (likely the 84 ms launches of its profile on an H100 with `vulkan`,
//! 2026-11). Here the work is spread over the samples and the products' tiles.

use std::sync::atomic::{AtomicUsize, Ordering};

use burn::backend::ops::{ConvOptions, FloatTensorOps};
use burn::backend::{Shape, Slice, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::tensor::CubeTensor;

use super::ext_columns::{Cols, FrColumns, dims4};

type B = CubeBackend;

/// How many weight gradients this process computed as products.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// How many weight gradients this process computed as products (the tests' proof that the
/// rule took them).
pub fn weight_grads_as_products() -> usize {
    COUNT.load(Ordering::Relaxed)
}

/// The most floats one chunk's columns may take (64 MiB: within wgpu's default 128 MiB binding).
const CHUNK_FLOATS: usize = 1 << 24;

/// The weight gradient `[cout, cin, kh, kw]` (of `shape`) of the convolution of `x`
/// `[n, cin, h, w]` with options `o` whose output's gradient is `dy` `[n, cout, oh, ow]`; None
/// for a grouped or dilated convolution. The samples go in chunks whose columns take at most
/// [`CHUNK_FLOATS`].
pub(super) fn weight_grad(
    x: CubeTensor,
    dy: CubeTensor,
    shape: Shape,
    o: &ConvOptions<2>,
) -> Option<CubeTensor> {
    if o.groups != 1 || o.dilation != [1, 1] {
        return None;
    }
    let (xs, ds) = (x.shape(), dy.shape());
    let ([n, cin, h, w], [_, _, oh, ow]) = (dims4(&xs), dims4(&ds));
    let (kh, kw) = (shape[2], shape[3]);
    let g = Cols::new([n, cin, h, w], [kh, kw], o);
    debug_assert_eq!(g.out, [oh, ow], "the output gradient's map");
    let per = (CHUNK_FLOATS / (cin * kh * kw * oh * ow)).clamp(1, n);
    let rows = |t: &CubeTensor, a: usize, b: usize| {
        B::float_slice(
            t.clone(),
            &[
                Slice::from(a..b),
                Slice::full(),
                Slice::full(),
                Slice::full(),
            ],
        )
    };
    let sum = (0..n)
        .step_by(per)
        .map(|a| {
            let b = (a + per).min(n);
            chunk(rows(&x, a, b), rows(&dy, a, b), [kh, kw], o)
        })
        .reduce(B::float_add)
        .expect("a sample");
    COUNT.fetch_add(1, Ordering::Relaxed);
    Some(B::float_reshape(sum, shape))
}

/// One chunk's part `[cout, cin·kh·kw]`: its samples' columns side by side
/// `[cin·kh·kw, n·L]`, one product with the output gradient `[cout, n·L]` (with the samples as
/// the product's batch, each sample's part would be a whole weight, summed afterwards).
fn chunk(x: CubeTensor, dy: CubeTensor, kernel: [usize; 2], o: &ConvOptions<2>) -> CubeTensor {
    let ds = dy.shape();
    let [n, cout, oh, ow] = dims4(&ds);
    let cols = B::fr_columns(x, kernel, o.clone()); // [1, cin·kh·kw, n·L]
    let cc = cols.shape()[1];
    let cols = B::float_reshape(cols, Shape::from(vec![cc, n * oh * ow]));
    let dy = B::float_swap_dims(dy, 0, 1);
    let dy = B::float_reshape(dy, Shape::from(vec![cout, n * oh * ow]));
    B::float_matmul(dy, B::float_swap_dims(cols, 0, 1))
}
