//! The K copies' convolution as batched products (the GPU backends' cohort form): each copy's
//! columns gathered from its maps in one `select` (im2col through an index, the padding read
//! from an appended zero) and laid with the samples side by side, then one batched product over
//! the copies of each copy's weight `[o, c·kh·kw]` with its columns `[c·kh·kw, n·L]`, in a
//! convolution's precision ([`super::ext_conv_product::conv_matmul`]: TF32 on CUDA under
//! `run.tf32_conv`, as PyTorch's grouped convolution runs). Its launches do not grow with K,
//! where burn's grouped convolution leaves every fast path (a direct kernel forward, a
//! transposed convolution for the data gradient, a host loop over the groups for the weight
//! gradient). The backward is autodiff's: the product's two (the weight's gradient one product
//! a copy, over every sample at once) and the gather's (a scatter-add, burn's `select_assign`).

use std::cell::RefCell;
use std::collections::HashMap;

use burn::backend::ops::ConvOptions;
use burn::tensor::{Int, Tensor, TensorData};

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
    let [n, kc, h, wd] = x.dims();
    let [ko, c, kh, kw] = w.dims();
    let g = Geometry::new([h, wd], [kh, kw], o.stride, o.padding);
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

/// [`conv2d_batched`] of one run of samples, with `x`'s geometry `g`: each copy's product
/// `[o, c·kh·kw] × [c·kh·kw, n·L]`, its samples side by side in the columns, so that the weight's
/// gradient is one product per copy too (with the samples as the batch, each sample's would be a
/// whole weight, summed afterwards: for ResNet-18's last layers, 30 times the columns).
fn batched(
    x: Tensor<4>,
    w: Tensor<4>,
    b: Option<Tensor<1>>,
    o: &ConvOptions<2>,
    g: &Geometry,
) -> Tensor<4> {
    let k = o.groups;
    let [n, kc, h, wd] = x.dims();
    let [ko, c, kh, kw] = w.dims();
    let (out, c_k) = (ko / k, kc / k);
    debug_assert_eq!(c, c_k, "the weight's input channels are one copy's");
    let (device, l, cc) = (x.device(), g.out[0] * g.out[1], c * kh * kw);
    // the maps flat with a zero appended: the index of a padded position points at it
    let flat: Tensor<3> = x.reshape([n, kc, h * wd]);
    let zero = Tensor::<3>::zeros([n, kc, 1], &device);
    let flat = Tensor::cat(vec![flat, zero], 2);
    let cols = flat.select(2, index(g, 1, &device)); // [n, K·c, kh·kw·L]
    GATHERED.with(|t| t.set(t.get() + (kc * kh * kw * n * l) as u64));
    // the samples side by side (a copy). The gather stays one a sample: its backward, burn's
    // select_assign, runs a thread per gathered row, each looping over the whole index, so
    // gathering along n·L would leave K·c threads of kh·kw·n·L steps (ResNet-18's first
    // layers at K = 10, batch 50: 640 threads of 460,800) where this keeps n·K·c of kh·kw·L
    let cols: Tensor<3> = cols
        .reshape([n, k, cc, l])
        .permute([1, 2, 0, 3])
        .reshape([k, cc, n * l]);
    let wk: Tensor<3> = w.reshape([k, out, cc]);
    let y = super::ext_conv_product::conv_matmul(wk, cols); // [K, o, n·L]
    let y: Tensor<4> = y.reshape([ko, n, g.out[0], g.out[1]]).swap_dims(0, 1);
    match b {
        Some(b) => y + b.reshape([1, ko, 1, 1]),
        None => y,
    }
}

/// A convolution's geometry: input map, kernel, stride, padding and output map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Geometry {
    map: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [(usize, usize); 2],
    pub out: [usize; 2],
}

impl Geometry {
    pub fn new(
        map: [usize; 2],
        kernel: [usize; 2],
        stride: [usize; 2],
        pad: [(usize, usize); 2],
    ) -> Self {
        let o = |i: usize| (map[i] + pad[i].0 + pad[i].1 - kernel[i]) / stride[i] + 1;
        Geometry {
            map,
            kernel,
            stride,
            pad,
            out: [o(0), o(1)],
        }
    }

    /// For each kernel position (ki, kj), sample s of `n` and output position (y, x), in that
    /// order, the index of the input value it reads in `n` maps of `h·w` laid end to end, or
    /// `n·h·w` (the appended zero) in the padding.
    fn indices(&self, n: usize) -> Vec<i64> {
        let [h, w] = self.map;
        let (hw, [oh, ow]) = ((h * w) as i64, self.out);
        let zero = n as i64 * hw;
        let mut v = Vec::with_capacity(self.kernel[0] * self.kernel[1] * n * oh * ow);
        for ki in 0..self.kernel[0] {
            for kj in 0..self.kernel[1] {
                for s in 0..n as i64 {
                    for y in 0..oh {
                        for x in 0..ow {
                            let r = (y * self.stride[0] + ki) as i64 - self.pad[0].0 as i64;
                            let q = (x * self.stride[1] + kj) as i64 - self.pad[1].0 as i64;
                            let inside = (0..h as i64).contains(&r) && (0..w as i64).contains(&q);
                            v.push(if inside {
                                s * hw + r * w as i64 + q
                            } else {
                                zero
                            });
                        }
                    }
                }
            }
        }
        v
    }
}

/// Gather indices kept by geometry, samples and device, each uploaded once (in the form a
/// backend's ops take it).
pub(super) type Kept<T> = RefCell<HashMap<(Geometry, usize, String), T>>;

/// `g`'s gather index over `n` samples on the device named `device`, from `cache`, `upload`ed
/// from [`Geometry::indices`] on first use.
pub(super) fn kept<T: Clone>(
    cache: &'static std::thread::LocalKey<Kept<T>>,
    (g, n): (&Geometry, usize),
    device: String,
    upload: impl FnOnce(Vec<i64>) -> T,
) -> T {
    cache.with(|m| {
        let mut m = m.borrow_mut();
        m.entry((*g, n, device))
            .or_insert_with(|| upload(g.indices(n)))
            .clone()
    })
}

thread_local! {
    /// The columns' floats this thread's batched convolutions gathered ([`columns_gathered`]).
    static GATHERED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The gather indices of the batched products, as burn's tensors.
    static INDICES: Kept<Tensor<1, Int>> = RefCell::new(HashMap::new());
}

/// The gather index of `g` over `n` samples on `device` (uploaded on first use, then kept).
fn index(g: &Geometry, n: usize, device: &burn::tensor::Device) -> Tensor<1, Int> {
    kept(&INDICES, (g, n), format!("{device:?}"), |v| {
        let len = v.len();
        Tensor::from_data(TensorData::new(v, [len]), device)
    })
}
