//! The ops fedrun's models call, and fedrun's own kernels behind them, each plugged into burn as
//! a backend extension of its own with its own backward under autodiff (their shared flex
//! helpers in `ext.rs`):
//!
//! - on flex, fedrun's CPU kernels: the convolution (`ext_conv.rs`), GroupNorm (`ext_norm.rs`),
//!   max-pooling (`ext_pool.rs`), the large linear layers (`ext_linear.rs`), the LSTM layer
//!   (`ext_lstm.rs`), the activations and dropout (`ext_act.rs`);
//! - on cubecl's runtimes (wgpu, Vulkan, CUDA), their GPU sides: the convolution rule
//!   (`ext_gpu_conv.rs`: implicit GEMM, else the weight gradient as products over the samples,
//!   `gpu_wgrad.rs`, and burn's direct kernels), GroupNorm
//!   (`ext_gpu_norm.rs`), the LSTM layer (`ext_gpu_lstm.rs`), a batch gathered from a split kept
//!   on the device (`ext_gather.rs`, `ext_gpu_gather.rs`), and the K copies' dropout mask from
//!   seeds held in a tensor (`ext_mask.rs`, `ext_gpu_mask.rs`; flex too);
//! - a cohort's convolutions as batched products on the GPU backends (`batched_conv.rs`), their
//!   columns and the columns' adjoint one kernel each (`ext_columns.rs`, `ext_gpu_columns.rs`;
//!   flex too), and index ranges uploaded once ([`range`]);
//! - device work recorded once as a graph and replayed (`capture.rs`, `run.graph`);
//! - fedrun's own kernels as CUDA C++ with no GPU, for a check before a GPU's minutes are spent
//!   (`cuda_source.rs`, each kernel's launch arguments from `cuda_dummy.rs`);
//! - a GPU device's memory: its largest buffer, its capacity and what the process reserves
//!   (`gpu_memory.rs`).
//!
//! The functions here ([`conv2d_copies`], [`max_pool2d`], [`group_norm`], [`softmax_last`],
//! [`lstm_layer`], [`dropout_copies`], …) choose fedrun's kernel where it applies and burn's op
//! elsewhere, or everywhere with `run.kernels = "burn"`.

pub mod activation;
mod batched_conv;
pub mod capture;
pub mod conv;
mod conv_nchw;
mod conv_nhwc;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod conv_precision;
#[cfg(feature = "cuda")]
mod cuda_dummy;
#[cfg(feature = "cuda")]
pub mod cuda_source;
pub mod dropout;
mod exp;
mod ext;
mod ext_act;
mod ext_columns;
mod ext_conv;
mod ext_conv_product;
mod ext_gather;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod ext_gpu_columns;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod ext_gpu_conv;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod ext_gpu_gather;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod ext_gpu_lstm;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod ext_gpu_mask;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod ext_gpu_norm;
mod ext_linear;
mod ext_lstm;
pub mod ext_mask;
mod ext_norm;
mod ext_pool;
pub mod fpu;
pub mod gemm;
mod geom;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod gpu_grid;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod gpu_memory;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod gpu_wgrad;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub use gpu_wgrad::weight_grads_as_products;
pub mod linear;
pub mod lstm;
pub mod norm;
pub mod pool;
mod scratch;
pub mod simd;
pub mod softmax;
mod wide;
mod winograd;

use burn::backend::{DispatchDevice, ops::ConvOptions};
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2d;
use burn::nn::pool::MaxPool2d;
use burn::nn::{GroupNorm, Linear};
use burn::tensor::activation::relu as relu_op;
use burn::tensor::{Device, Tensor};

pub use batched_conv::{columns_gathered, conv2d_batched_within};
use ext_act::CpuActivations;
pub use ext_columns::columns;
use ext_conv::FrConv;
use ext_gather::FrGather;
use ext_linear::CpuLinear;
use ext_lstm::FrRecurrent;
use ext_mask::FrMask;
use ext_norm::FrNorm;
use ext_pool::CpuPool;

/// Which implementation runs the hot ops (`run.kernels`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kernels {
    /// fedrun's kernels on flex (burn's ops on other backends).
    #[default]
    Fedrun,
    /// burn's reference ops everywhere.
    Burn,
}

/// Whether `device` is flex, with or without autodiff.
pub fn is_flex(device: &Device) -> bool {
    match device.as_dispatch() {
        DispatchDevice::Flex(_) => true,
        DispatchDevice::Autodiff(inner) => matches!(**inner, DispatchDevice::Flex(_)),
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// The options of `conv` if fedrun's kernel covers it (groups 1, dilation 1, symmetric padding
/// per axis).
fn options(conv: &Conv2d) -> Option<ConvOptions<2>> {
    let (ph, pw) = match conv.padding {
        PaddingConfig2d::Valid => (0, 0),
        PaddingConfig2d::Explicit(t, l, b, r) if t == b && l == r => (t, l),
        _ => return None,
    };
    (conv.groups == 1 && conv.dilation == [1, 1])
        .then(|| ConvOptions::new(conv.stride, [ph, pw], [1, 1], 1))
}

/// Whether fedrun's convolution runs on `device`: flex (fedrun's CPU kernels) or, in a GPU
/// build, one of cubecl's runtimes (fedrun's kernel rule, `ext_gpu_conv.rs`).
fn own_conv(device: &Device) -> bool {
    on_cube(device) || is_flex(device)
}

/// Whether `device` is one of cubecl's runtimes (wgpu, Vulkan, CUDA; never in a build without
/// them).
pub fn on_cube(device: &Device) -> bool {
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if ext_gpu_conv::is_cube(device) {
        return true;
    }
    let _ = device;
    false
}

/// The most bytes one buffer may hold on `device`: a GPU runtime's largest allocation (a wgpu
/// binding's limit, which Mesa's lavapipe sets at 128 MiB), None on flex.
pub fn max_buffer(device: &Device) -> Option<u64> {
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if let Some(b) = gpu_memory::max_buffer(device) {
        return Some(b);
    }
    let _ = device;
    None
}

/// A GPU `device`'s memory: the bytes its runtime says it may hold (CUDA's total memory,
/// Vulkan's largest heap with the SPIR-V compiler; None where it states none: wgpu's WebGPU) and
/// the bytes this process reserves on it now; None on flex.
pub fn device_memory(device: &Device) -> Option<(Option<u64>, u64)> {
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if let Some(m) = gpu_memory::memory(device) {
        return Some(m);
    }
    let _ = device;
    None
}

/// `conv.forward(x)`, on fedrun's kernel where it applies.
pub fn conv2d(conv: &Conv2d, x: Tensor<4>, kernels: Kernels) -> Tensor<4> {
    let o = match options(conv) {
        Some(o) if kernels == Kernels::Fedrun && own_conv(&x.device()) => o,
        _ => return conv.forward(x),
    };
    type D = burn::backend::Dispatch;
    let (x, w) = (x.into_dispatch(), conv.weight.val().into_dispatch());
    let y = match &conv.bias {
        Some(b) => <D as FrConv>::fr_conv2d_bias(x, w, b.val().into_dispatch(), o),
        None => <D as FrConv>::fr_conv2d(x, w, o),
    };
    Tensor::from_dispatch(y)
}

/// A convolution whose weight and bias are tensors rather than a module's (the stacked
/// models' `[K·o, c, kh, kw]` slices): fedrun's kernel where it applies (flex, one group), burn's
/// op elsewhere.
pub fn conv2d_of(
    x: Tensor<4>,
    w: Tensor<4>,
    b: Option<Tensor<1>>,
    o: ConvOptions<2>,
    kernels: Kernels,
) -> Tensor<4> {
    if !(o.groups == 1 && kernels == Kernels::Fedrun && own_conv(&x.device())) {
        return burn::tensor::module::conv2d(x, w, b, o);
    }
    type D = burn::backend::Dispatch;
    let (x, w) = (x.into_dispatch(), w.into_dispatch());
    Tensor::from_dispatch(match b {
        Some(b) => <D as FrConv>::fr_conv2d_bias(x, w, b.into_dispatch(), o),
        None => <D as FrConv>::fr_conv2d(x, w, o),
    })
}

/// `pool.forward(x)`, followed by a ReLU if `relu`, on fedrun's kernel where it applies (no
/// padding, dilation 1, floor or ceil mode). `relu(pool(x))` equals `pool(relu(x))`, value and
/// gradient; models use this order, which applies the ReLU to a quarter of the values.
pub fn max_pool2d(pool: &MaxPool2d, x: Tensor<4>, relu: bool, kernels: Kernels) -> Tensor<4> {
    let plain = matches!(
        pool.padding,
        PaddingConfig2d::Valid | PaddingConfig2d::Explicit(0, 0, 0, 0)
    ) && pool.dilation == [1, 1];
    if !(plain && kernels == Kernels::Fedrun && is_flex(&x.device())) {
        let y = pool.forward(x);
        return if relu { relu_op(y) } else { y };
    }
    let y = <burn::backend::Dispatch as CpuPool>::fr_max_pool2d(
        x.into_dispatch(),
        pool.kernel_size,
        pool.stride,
        relu,
        pool.ceil_mode,
    );
    Tensor::from_dispatch(y)
}

/// Whether fedrun's GroupNorm runs on `device`: flex (fedrun's CPU kernel) or one of cubecl's
/// runtimes (one kernel forward, two backward: `ext_gpu_norm.rs`).
fn own_norm(device: &Device) -> bool {
    on_cube(device) || is_flex(device)
}

/// `gn.forward(x)`, followed by a ReLU if `relu`, on fedrun's fused kernel where it applies
/// (affine GroupNorm on flex and on the GPU backends).
pub fn group_norm(gn: &GroupNorm, x: Tensor<4>, relu: bool, kernels: Kernels) -> Tensor<4> {
    let (gamma, beta) = match (&gn.gamma, &gn.beta) {
        (Some(g), Some(b)) if gn.affine && kernels == Kernels::Fedrun && own_norm(&x.device()) => {
            (g, b)
        }
        _ => {
            let y = gn.forward(x);
            return if relu { relu_op(y) } else { y };
        }
    };
    let (y, _stats) = <burn::backend::Dispatch as FrNorm>::fr_group_norm(
        x.into_dispatch(),
        gamma.val().into_dispatch(),
        beta.val().into_dispatch(),
        gn.num_groups,
        gn.epsilon,
        relu,
    );
    Tensor::from_dispatch(y)
}

/// GroupNorm of `x` with `groups` groups and the per-channel affine `gamma`, `beta` given as
/// tensors (a cohort's stacked parameters), then a ReLU if `relu`: fedrun's kernel on flex and
/// the GPU backends, the same formula as burn's module elsewhere (each group's mean and biased
/// variance).
pub fn group_norm_of(
    x: Tensor<4>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
    groups: usize,
    epsilon: f64,
    relu: bool,
    kernels: Kernels,
) -> Tensor<4> {
    if kernels == Kernels::Fedrun && own_norm(&x.device()) {
        let (y, _stats) = <burn::backend::Dispatch as FrNorm>::fr_group_norm(
            x.into_dispatch(),
            gamma.into_dispatch(),
            beta.into_dispatch(),
            groups,
            epsilon,
            relu,
        );
        return Tensor::from_dispatch(y);
    }
    let [b, c, h, w] = x.dims();
    let g: Tensor<3> = x.reshape([b, groups, c / groups * h * w]);
    let mean = g.clone().mean_dim(2);
    let centred = g - mean;
    let var = (centred.clone() * centred.clone()).mean_dim(2);
    let y: Tensor<4> = (centred / (var + epsilon).sqrt()).reshape([b, c, h, w]);
    let y = y * gamma.reshape([1, c, 1, 1]) + beta.reshape([1, c, 1, 1]);
    if relu { relu_op(y) } else { y }
}

/// `softmax(x)` over the last axis, on fedrun's kernel (a vectorised `exp`) where it applies.
pub fn softmax_last<const D: usize>(x: Tensor<D>, kernels: Kernels) -> Tensor<D> {
    if !(kernels == Kernels::Fedrun && is_flex(&x.device())) {
        return burn::tensor::activation::softmax(x, D - 1);
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as CpuActivations>::fr_softmax(
        x.into_dispatch(),
    ))
}

/// `σ(x)`, on fedrun's kernel (a vectorised `exp`) where it applies.
pub fn sigmoid<const D: usize>(x: Tensor<D>, kernels: Kernels) -> Tensor<D> {
    activation(x, false, kernels)
}

/// `tanh(x)`, on fedrun's kernel (a vectorised `exp`) where it applies.
pub fn tanh<const D: usize>(x: Tensor<D>, kernels: Kernels) -> Tensor<D> {
    activation(x, true, kernels)
}

fn activation<const D: usize>(x: Tensor<D>, is_tanh: bool, kernels: Kernels) -> Tensor<D> {
    if !(kernels == Kernels::Fedrun && is_flex(&x.device())) {
        return if is_tanh {
            x.tanh()
        } else {
            burn::tensor::activation::sigmoid(x)
        };
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as CpuActivations>::fr_activation(
        x.into_dispatch(),
        is_tanh,
    ))
}

/// One LSTM layer over a whole sequence on fedrun's kernel ([`lstm`]): the hidden state after
/// each character `[batch, len, hidden]` from the input projections `xw` (`[batch, len,
/// 4·hidden]`, biases included, gates i, f, g, o) and the recurrent weight `wh` (`[hidden,
/// 4·hidden]`), zero initial states. On flex and cubecl's runtimes.
pub fn lstm_layer(xw: Tensor<3>, wh: Tensor<2>) -> Tensor<3> {
    lstm_states(xw, wh)
}

/// [`lstm_layer`] over a stack of copies, each its own weights: `xw` `[K, batch, len,
/// 4·hidden]`, `wh` `[K, hidden, 4·hidden]`, the states `[K, batch, len, hidden]`. On cubecl's
/// runtimes only (flex runs a copy at a time).
pub fn lstm_layers(xw: Tensor<4>, wh: Tensor<3>) -> Tensor<4> {
    lstm_states(xw, wh)
}

/// The layer's hidden states for either rank (the extension reads the copies from the rank).
fn lstm_states<const D: usize, const W: usize>(xw: Tensor<D>, wh: Tensor<W>) -> Tensor<D> {
    // autodiff keeps what its backward pass needs whatever `keep` says; flex alone keeps nothing
    let (hs, _, _) = <burn::backend::Dispatch as FrRecurrent>::fr_lstm(
        xw.into_dispatch(),
        wh.into_dispatch(),
        false,
    );
    Tensor::from_dispatch(hs)
}

/// Rows `rows` (`[b]`) of `src` (`[n, c, p]`), each with its pixel `q` taken from pixel
/// `map[k mod m, q]` (`map` `[m, p]`, m = 1 or b) or `fill[channel]` where the map holds −1:
/// one kernel on cubecl's runtimes (`ext_gpu_gather.rs`), burn's `select` and `gather`
/// elsewhere (the same values: both only copy).
pub fn gather_rows(
    src: Tensor<3>,
    rows: Tensor<1, burn::tensor::Int>,
    map: Tensor<2, burn::tensor::Int>,
    fill: Tensor<1>,
) -> Tensor<3> {
    if !on_cube(&src.device()) {
        return gather_rows_by_ops(src, rows, map, fill);
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as FrGather>::fr_gather(
        src.into_dispatch(),
        rows.into_dispatch(),
        map.into_dispatch(),
        fill.into_dispatch(),
    ))
}

thread_local! {
    /// The index ranges by length and device, uploaded once.
    static RANGES: std::cell::RefCell<std::collections::HashMap<(usize, String), Tensor<1, burn::tensor::Int>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// `0..n` on `device`, uploaded the first time this thread asks for it there and then kept: a
/// forward that needs an index range uploads nothing at a step (a captured step may not).
pub fn range(n: usize, device: &Device) -> Tensor<1, burn::tensor::Int> {
    let key = (n, format!("{device:?}"));
    RANGES.with(|m| {
        m.borrow_mut()
            .entry(key)
            .or_insert_with(|| Tensor::arange(0..n as i64, device))
            .clone()
    })
}

/// [`gather_rows`] in burn's ops: the rows selected, each pixel gathered through the map
/// (repeated over the rows when it is one), the fill where the map holds −1.
fn gather_rows_by_ops(
    src: Tensor<3>,
    rows: Tensor<1, burn::tensor::Int>,
    map: Tensor<2, burn::tensor::Int>,
    fill: Tensor<1>,
) -> Tensor<3> {
    let picked = src.select(0, rows);
    let [b, c, p] = picked.dims();
    let m = map.dims()[0];
    let map = match m == b {
        true => map,
        false => map.repeat_dim(0, b / m.max(1)),
    };
    let outside = map
        .clone()
        .lower_elem(0)
        .reshape([b, 1, p])
        .expand([b, c, p]);
    let idx = map.clamp_min(0).reshape([b, 1, p]).expand([b, c, p]);
    let got = picked.gather(2, idx);
    let fill = fill.reshape([1, c, 1]).expand([b, c, p]);
    got.mask_where(outside, fill)
}

/// The K copies' convolution as batched products ([`conv2d_batched_within`]), its samples in
/// runs whose tensors fit one of `x`'s device's buffers ([`max_buffer`]: 128 MiB on lavapipe; a
/// quarter of the memory on CUDA, where a cohort's runs are one at any paper's size).
pub fn conv2d_batched(
    x: Tensor<4>,
    w: Tensor<4>,
    b: Option<Tensor<1>>,
    o: &ConvOptions<2>,
) -> Tensor<4> {
    let max = max_buffer(&x.device());
    conv2d_batched_within(x, w, b, o, max)
}

/// The K copies' convolution on their maps side by side in the channels (`[b, K·c, h, w]`,
/// weights `[K·o, c, kh, kw]`, bias `[K·o]`): on flex with fedrun's kernels each copy's own
/// (burn's grouped convolution takes a slower direct path there, and rounds unlike fedrun's
/// kernels that one client at a time uses); on the GPU backends with fedrun's kernels batched
/// products ([`conv2d_batched`]: launches that do not grow with K); else burn's grouped
/// convolution.
pub fn conv2d_copies(
    x: Tensor<4>,
    w: Tensor<4>,
    b: Option<Tensor<1>>,
    o: ConvOptions<2>,
    kernels: Kernels,
) -> Tensor<4> {
    let k = o.groups;
    if k > 1 && kernels == Kernels::Fedrun && on_cube(&x.device()) && o.dilation == [1, 1] {
        return conv2d_batched(x, w, b, &o);
    }
    if !(kernels == Kernels::Fedrun && is_flex(&x.device())) || k == 1 {
        return conv2d_of(x, w, b, o, kernels);
    }
    let (c, out) = (x.dims()[1] / k, w.dims()[0] / k);
    let one = ConvOptions {
        groups: 1,
        ..o.clone()
    };
    let per: Vec<Tensor<4>> = (0..k)
        .map(|i| {
            let xi = x.clone().narrow(1, i * c, c);
            let wi = w.clone().narrow(0, i * out, out);
            let bi = b.clone().map(|b| b.narrow(0, i * out, out));
            conv2d_of(xi, wi, bi, one.clone(), kernels)
        })
        .collect();
    Tensor::cat(per, 1)
}

/// The norm with the batch's own statistics (mean and biased variance per channel over the
/// batch and the map) and the per-channel affine `gamma`, `beta` (the copies' `[K·c]` for maps
/// side by side in the channels).
pub fn batch_stat_norm(x: Tensor<4>, gamma: Tensor<1>, beta: Tensor<1>, eps: f64) -> Tensor<4> {
    let c = x.dims()[1];
    let mean = channel_means(x.clone());
    let centred = x - mean;
    let var = channel_means(centred.clone() * centred.clone());
    let y = centred / (var + eps).sqrt();
    y * gamma.reshape([1, c, 1, 1]) + beta.reshape([1, c, 1, 1])
}

/// Each channel's mean over the batch and the map, `[1, c, 1, 1]`. On flex, means over the
/// batch, the rows and the columns in turn (the golden CSVs' sums). Elsewhere each (sample,
/// channel)'s map as one contiguous row summed, then the batch: two reductions, the large one
/// along memory, where the first of the three ran across the batch with a stride of a sample.
fn channel_means(x: Tensor<4>) -> Tensor<4> {
    if is_flex(&x.device()) {
        return x.mean_dim(0).mean_dim(2).mean_dim(3);
    }
    let [n, c, h, w] = x.dims();
    let rows: Tensor<3> = x.reshape([n, c, h * w]);
    let sums = rows.sum_dim(2).sum_dim(0);
    (sums / (n * h * w) as f64).reshape([1, c, 1, 1])
}

/// Dropout of probability `prob` on `x`, whose axis `axis` holds K copies side by side, copy
/// c's part with the mask of `seeds[c]` ([`dropout::Mask`]: a pure function of the seed and the
/// element's index in the copy's part): fedrun's kernel on flex, copy by copy (the mask
/// recomputed in the backward pass); elsewhere the K copies' mask in one op on the device
/// ([`ext_mask::FrMask`], from the seeds as a `[K, 4]` tensor), multiplied in.
pub fn dropout_copies<const D: usize>(
    x: Tensor<D>,
    seeds: &[u64],
    axis: usize,
    prob: f64,
    kernels: Kernels,
) -> Tensor<D> {
    if prob <= 0.0 || seeds.is_empty() {
        return x;
    }
    if kernels == Kernels::Fedrun && is_flex(&x.device()) {
        let one = |x: Tensor<D>, seed: u64| -> Tensor<D> {
            Tensor::from_dispatch(<burn::backend::Dispatch as CpuActivations>::fr_dropout(
                x.into_dispatch(),
                seed,
                prob,
            ))
        };
        if let [seed] = seeds {
            return one(x, *seed);
        }
        let n = x.dims()[axis] / seeds.len();
        let parts = (seeds.iter().enumerate())
            .map(|(i, &s)| one(x.clone().narrow(axis, i * n, n), s))
            .collect();
        return Tensor::cat(parts, axis);
    }
    let q: Vec<f32> = seeds.iter().flat_map(|&s| ext_mask::quarters(s)).collect();
    let k = seeds.len();
    let seeds = Tensor::<2>::from_data(burn::tensor::TensorData::new(q, [k, 4]), &x.device());
    let mask = dropout_mask(&x, seeds, axis, prob);
    x * mask
}

/// The dropout mask of `like`'s shape for the copies side by side along `axis`, copy c's from
/// its seed, row c of `seeds` (`[K, 4]`, the seed's 16-bit quarters as f32, on the device).
pub fn dropout_mask<const D: usize>(
    like: &Tensor<D>,
    seeds: Tensor<2>,
    axis: usize,
    prob: f64,
) -> Tensor<D> {
    let copies = seeds.dims()[0];
    Tensor::from_dispatch(<burn::backend::Dispatch as FrMask>::fr_dropout_mask(
        like.clone().into_dispatch(),
        seeds.into_dispatch(),
        axis,
        copies,
        prob,
    ))
}

/// `x·w + b` (`x` `[m, k]`, `w` `[k, n]`, `b` `[n]`): on fedrun's dense kernel for a large
/// weight (a million values or more) and few rows on flex ([`linear`]'s reason), burn's
/// `linear` elsewhere.
pub fn linear_of(x: Tensor<2>, w: Tensor<2>, b: Tensor<1>, kernels: Kernels) -> Tensor<2> {
    let big = w.shape().num_elements() >= 1 << 20 && x.dims()[0] <= linear::MAX_ROWS;
    if !(big && kernels == Kernels::Fedrun && is_flex(&x.device())) {
        return burn::tensor::module::linear(x, w, Some(b));
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as CpuLinear>::fr_linear(
        x.into_dispatch(),
        w.into_dispatch(),
        b.into_dispatch(),
    ))
}

/// A max-pool of `size`×`size` windows, stride `size`, floor or `ceil` mode, then a ReLU if
/// `relu`: fedrun's kernel on flex with its kernels ([`max_pool2d`]'s), burn's op elsewhere.
pub fn max_pool2d_of(x: Tensor<4>, size: usize, ceil: bool, relu: bool, k: Kernels) -> Tensor<4> {
    if !(k == Kernels::Fedrun && is_flex(&x.device())) {
        let opts = burn::tensor::ops::MaxPoolOptions::new([size, size])
            .with_stride([size, size])
            .with_ceil_mode(ceil);
        let y = burn::tensor::module::max_pool2d(x, opts);
        return if relu { relu_op(y) } else { y };
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as CpuPool>::fr_max_pool2d(
        x.into_dispatch(),
        [size, size],
        [size, size],
        relu,
        ceil,
    ))
}

/// `lin.forward(x)` for a batch of `x` `[m, k]`, on fedrun's dense kernel where it applies (a
/// layer with a bias, at most [`linear::MAX_ROWS`] rows, on flex): the same products, with the
/// weight read in place instead of repacked per call.
pub fn linear(lin: &Linear, x: Tensor<2>, kernels: Kernels) -> Tensor<2> {
    let fits = x.dims()[0] <= linear::MAX_ROWS && lin.bias.is_some();
    if !(fits && kernels == Kernels::Fedrun && is_flex(&x.device())) {
        return lin.forward(x);
    }
    let b = lin.bias.as_ref().expect("checked above").val();
    Tensor::from_dispatch(<burn::backend::Dispatch as CpuLinear>::fr_linear(
        x.into_dispatch(),
        lin.weight.val().into_dispatch(),
        b.into_dispatch(),
    ))
}
