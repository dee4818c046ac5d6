//! The K copies' convolution as batched products (the GPU backends' cohort form): each copy's
//! columns (im2col, the padding read as zero) with the samples side by side, in one kernel
//! ([`super::ext_columns`]), then one batched product over
//! the copies of each copy's weight `[o, c·kh·kw]` with its columns `[c·kh·kw, n·L]`, in a
//! convolution's precision ([`super::ext_conv_product::conv_matmul`]: TF32 on CUDA under
//! `run.tf32_conv`, as PyTorch's grouped convolution runs). Its launches do not grow with K,
//! where burn's grouped convolution leaves every fast path (a direct kernel forward, a
//! transposed convolution for the data gradient, a host loop over the groups for the weight
//! gradient). The backward is autodiff's: the product's two (the weight's gradient one product
//! a copy, over every sample at once) and the columns' adjoint (one kernel, a thread per input
//! value gathering the columns that read it).

use burn::backend::ops::ConvOptions;
use burn::tensor::Tensor;

use super::ext_columns::Cols;

/// The copies' convolution: `x` `[n, K·c, h, w]` (copy i's maps are channels `i·c..(i+1)·c`),
/// `w` `[K·o, c, kh, kw]`, `b` `[K·o]`, stride and padding (before, after) from `o` (dilation
/// 1, `o.groups` = K); `[n, K·o, oh, ow]`. The samples go in runs whose largest tensors (the
/// columns, the output and their gradients) fit `max_bytes` (None: one run;
/// `super::conv2d_batched` gives the device's largest buffer).
pub fn conv2d_batched_within(
    x: Tensor<4>,
    w: Tensor<4>,
    b: Option<Tensor<1>>,
    o: &ConvOptions<2>,
    max_bytes: Option<u64>,
) -> Tensor<4> {
    let [n, kc, _, _] = x.dims();
    let [ko, c, kh, kw] = w.dims();
    let g = Cols::new(x.dims(), [kh, kw], o);
    let (k, l, cols) = (o.groups, g.out[0] * g.out[1], c * kh * kw);
    debug_assert_eq!(kc, k * c, "the weight's input channels are one copy's");
    let out = ko / k;
    let per_sample = k * cols.max(out) * l;
    let run = samples_a_run(per_sample, max_bytes);
    if run >= n {
        return batched(x, w, b, o, &g);
    }
    let parts = (0..n)
        .step_by(run)
        .map(|s| {
            batched(
                x.clone().narrow(0, s, run.min(n - s)),
                w.clone(),
                b.clone(),
                o,
                &g,
            )
        })
        .collect();
    Tensor::cat(parts, 0)
}

/// How many samples of `per_sample` floats a run may take within `max_bytes` (at least one).
fn samples_a_run(per_sample: usize, max_bytes: Option<u64>) -> usize {
    match max_bytes {
        Some(max) => ((max / 4) as usize / per_sample.max(1)).max(1),
        None => usize::MAX,
    }
}

/// The floats of the columns that this thread's batched convolutions have gathered so far (what
/// their backward keeps, which the memory estimate counts as its columns).
pub fn columns_gathered() -> u64 {
    GATHERED.with(std::cell::Cell::get)
}

/// [`conv2d_batched`] of one run of samples, with `x`'s output map `g.out`: each copy's product
/// `[o, c·kh·kw] × [c·kh·kw, n·L]`, its samples side by side in the columns, so that the weight's
/// gradient is one product per copy too (with the samples as the batch, each sample's would be a
/// whole weight, summed afterwards: for ResNet-18's last layers, 30 times the columns).
fn batched(
    x: Tensor<4>,
    w: Tensor<4>,
    b: Option<Tensor<1>>,
    o: &ConvOptions<2>,
    g: &Cols,
) -> Tensor<4> {
    let k = o.groups;
    let [n, kc, _, _] = x.dims();
    let [ko, c, kh, kw] = w.dims();
    let (out, c_k) = (ko / k, kc / k);
    debug_assert_eq!(c, c_k, "the weight's input channels are one copy's");
    let (l, cc) = (g.out[0] * g.out[1], c * kh * kw);
    // each copy's columns [c·kh·kw, n·L], its samples side by side, in one kernel, whose
    // backward is one kernel too (a gather of the columns that read each input value)
    let cols = super::ext_columns::columns(x, [kh, kw], o); // [K, c·kh·kw, n·L]
    GATHERED.with(|t| t.set(t.get() + (kc * kh * kw * n * l) as u64));
    let wk: Tensor<3> = w.reshape([k, out, cc]);
    let y = super::ext_conv_product::conv_matmul(wk, cols); // [K, o, n·L]
    let y: Tensor<4> = y.reshape([ko, n, g.out[0], g.out[1]]).swap_dims(0, 1);
    match b {
        Some(b) => y + b.reshape([1, ko, 1, 1]),
        None => y,
    }
}

thread_local! {
    /// The columns' floats this thread's batched convolutions gathered ([`columns_gathered`]).
    static GATHERED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
