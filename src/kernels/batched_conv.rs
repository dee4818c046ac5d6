//! The K copies' convolution as batched products (the GPU backends' cohort form): each copy's
//! columns gathered from its maps in one `select` (im2col through an index, the padding read
//! from an appended zero), then one batched product of every (sample, copy) pair's columns with
//! its copy's weight, in a convolution's precision ([`super::ext_conv_product::conv_matmul`]: TF32 on CUDA under
//! `run.tf32_conv`, as PyTorch's grouped convolution runs). Its launches do not grow with K,
//! where burn's grouped convolution leaves every fast path (a direct kernel forward, a transposed convolution for the data gradient, a
//! host loop over the groups for the weight gradient). The backward is autodiff's: the
//! products' and the gather's (a scatter-add), with the broadcast weight's gradient summed over
//! the samples.

use std::cell::RefCell;
use std::collections::HashMap;

use burn::backend::ops::ConvOptions;
use burn::tensor::{Int, Tensor, TensorData};

/// The copies' convolution: `x` `[n, K·c, h, w]` (copy i's maps are channels `i·c..(i+1)·c`),
/// `w` `[K·o, c, kh, kw]`, `b` `[K·o]`, stride and padding (before, after) from `o` (dilation
/// 1, `o.groups` = K); `[n, K·o, oh, ow]`. The samples go in runs whose largest tensors (the
/// columns, the output, the weight gradient's per-sample terms, and their gradients) fit
/// `max_bytes` (None: one run; `super::conv2d_batched` gives the device's largest buffer).
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
    let per_sample = k * (cols.max(out) * l + out * cols);
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

/// [`conv2d_batched`] of one run of samples, with `x`'s geometry `g`.
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
    let device = x.device();
    // the maps flat with a zero appended: the index of a padded position points at it
    let flat: Tensor<3> = x.reshape([n, kc, h * wd]);
    let zero = Tensor::<3>::zeros([n, kc, 1], &device);
    let flat = Tensor::cat(vec![flat, zero], 2);
    let cols = flat.select(2, index(g, &device)); // [n, K·c, kh·kw·L]
    let l = g.out[0] * g.out[1];
    let cols: Tensor<4> = cols.reshape([n, k, c * kh * kw, l]);
    let wk: Tensor<4> = w.reshape([1, k, out, c * kh * kw]);
    let y = super::ext_conv_product::conv_matmul(wk, cols); // [n, K, o, L]
    let y: Tensor<4> = y.reshape([n, ko, g.out[0], g.out[1]]);
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

    /// For each kernel position (ki, kj) and output position (y, x), in that order, the flat
    /// index of the input value it reads, or `h·w` (the appended zero) in the padding.
    fn indices(&self) -> Vec<i64> {
        let [h, w] = self.map;
        let zero = (h * w) as i64;
        let mut v = Vec::with_capacity(self.kernel[0] * self.kernel[1] * self.out[0] * self.out[1]);
        for ki in 0..self.kernel[0] {
            for kj in 0..self.kernel[1] {
                for y in 0..self.out[0] {
                    for x in 0..self.out[1] {
                        let r = (y * self.stride[0] + ki) as i64 - self.pad[0].0 as i64;
                        let s = (x * self.stride[1] + kj) as i64 - self.pad[1].0 as i64;
                        let inside = (0..h as i64).contains(&r) && (0..w as i64).contains(&s);
                        v.push(if inside { r * w as i64 + s } else { zero });
                    }
                }
            }
        }
        v
    }
}

/// Gather indices kept by geometry and device, each uploaded once (in the form a backend's ops
/// take it).
pub(super) type Kept<T> = RefCell<HashMap<(Geometry, String), T>>;

/// `g`'s gather index on the device named `device`, from `cache`, `upload`ed from
/// [`Geometry::indices`] on first use.
pub(super) fn kept<T: Clone>(
    cache: &'static std::thread::LocalKey<Kept<T>>,
    g: &Geometry,
    device: String,
    upload: impl FnOnce(Vec<i64>) -> T,
) -> T {
    cache.with(|m| {
        let mut m = m.borrow_mut();
        m.entry((*g, device))
            .or_insert_with(|| upload(g.indices()))
            .clone()
    })
}

thread_local! {
    /// The gather indices of the batched products, as burn's tensors.
    static INDICES: Kept<Tensor<1, Int>> = RefCell::new(HashMap::new());
}

/// The gather index of `g` on `device` (uploaded on first use, then kept).
fn index(g: &Geometry, device: &burn::tensor::Device) -> Tensor<1, Int> {
    kept(&INDICES, g, format!("{device:?}"), |v| {
        let len = v.len();
        Tensor::from_data(TensorData::new(v, [len]), device)
    })
}
