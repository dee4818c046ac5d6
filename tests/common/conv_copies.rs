//! The K copies' convolution as batched products against burn's grouped convolution, on a
//! device: the output and the gradients of the input, the weight and the bias.

use burn::backend::ops::ConvOptions;
use burn::tensor::{Device, Distribution, Tensor};

/// The largest difference of `a` from `b`, relative to `b`'s largest magnitude.
fn rel<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    let a = a.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    let b = b.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-12);
    a.iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

/// The geometries of the models' convolutions: (copies, in, out, map, kernel, stride, pad).
pub const CASES: &[(usize, usize, usize, usize, usize, usize, usize)] = &[
    (1, 3, 4, 9, 3, 1, 1),
    (3, 3, 6, 10, 5, 1, 0),
    (3, 4, 5, 9, 3, 2, 1),
    (2, 4, 6, 8, 1, 2, 0),
    (4, 2, 3, 7, 3, 1, 1),
    // ResNet-18's first stage: a large map
    (3, 16, 16, 32, 3, 1, 1),
    // ResNet-18's last stages: wide channels on small maps
    (3, 128, 256, 4, 3, 2, 1),
    (3, 256, 256, 2, 3, 1, 1),
    (3, 128, 256, 4, 1, 2, 0),
];

/// Check every case of [`CASES`] on `device` (an autodiff device) to `tol`.
pub fn check(device: &Device, tol: f32) {
    for &(k, c, o, m, ks, s, p) in CASES {
        let opts = ConvOptions::new([s, s], [p, p], [1, 1], k);
        let u = Distribution::Uniform(-1.0, 1.0);
        let x = Tensor::<4>::random([2, k * c, m, m], u, device);
        let w = Tensor::<4>::random([k * o, c, ks, ks], u, device);
        let b = Tensor::<1>::random([k * o], u, device);
        // a loss that weighs each output differently, the same for both forms
        let side = (m + 2 * p - ks) / s + 1;
        let dims = [2, k * o, side, side];
        let n: usize = dims.iter().product();
        let wv: Vec<f32> = (0..n)
            .map(|i| 0.5 + (i * 37 % 101) as f32 / 101.0)
            .collect();
        let wts = Tensor::<4>::from_data(burn::tensor::TensorData::new(wv, dims), device);
        // batched: as the device's buffers allow (one run here), or in runs of one sample
        let run = |batched: Option<Option<u64>>| {
            let (x, w, b) = (
                x.clone().require_grad(),
                w.clone().require_grad(),
                b.clone().require_grad(),
            );
            let (xc, wc, bc) = (x.clone(), w.clone(), Some(b.clone()));
            let y = match batched {
                Some(None) => fedrun::kernels::conv2d_batched(xc, wc, bc, &opts),
                Some(max) => fedrun::kernels::conv2d_batched_within(xc, wc, bc, &opts, max),
                None => burn::tensor::module::conv2d(xc, wc, bc, opts.clone()),
            };
            let g = (y.clone() * wts.clone()).sum().backward();
            let gx = x.grad(&g).unwrap();
            let gw = w.grad(&g).unwrap();
            let gb = b.grad(&g).unwrap();
            (y.inner(), gx, gw, gb)
        };
        let (y0, x0, w0, b0) = run(None);
        for (form, batched) in [("one run", None), ("runs of one sample", Some(1))] {
            let (y1, x1, w1, b1) = run(Some(batched));
            let tag = format!("K {k}, {c}→{o}, {m}², kernel {ks}, stride {s}, pad {p}, {form}");
            assert_eq!(y1.dims(), y0.dims(), "{tag}: shape");
            let (y, x, w, b) = (y0.clone(), x0.clone(), w0.clone(), b0.clone());
            let errs = [rel(y1, y), rel(x1, x), rel(w1, w), rel(b1, b)];
            for (e, what) in errs.iter().zip(["output", "dx", "dw", "db"]) {
                assert!(*e <= tol, "{tag}: {what} off by {e:e}");
            }
        }
    }
}

/// A columns' geometry: copies, channels a copy, map, kernel, and the stride and padding.
pub type ColumnCase = (usize, usize, [usize; 2], [usize; 2], ConvOptions<2>);

/// The columns' geometries of [`columns_and_adjoint`]: [`CASES`], a non-square map, and padding
/// unequal before and after (a "same" even kernel).
pub fn column_cases() -> Vec<ColumnCase> {
    let mut v: Vec<_> = CASES
        .iter()
        .map(|&(k, c, _, m, ks, s, p)| {
            let o = ConvOptions::new([s, s], [p, p], [1, 1], k);
            (k, c, [m, m], [ks, ks], o)
        })
        .collect();
    v.push((
        2,
        3,
        [5, 8],
        [3, 2],
        ConvOptions::new([1, 2], [1, 0], [1, 1], 2),
    ));
    let same = ConvOptions::new_with_padding([1, 1], [(1, 2), (0, 1)], [1, 1], 3);
    v.push((3, 2, [6, 7], [4, 2], same));
    v
}

/// The copies' columns of fixed maps `[2, K·c, h, w]` (values from their index, the same on
/// every device) and, under autodiff (`device` an autodiff device), the maps' gradient of the
/// columns weighted by a fixed pattern, i.e. the columns' adjoint applied to it: (the columns'
/// shape, the columns, the maps' gradient).
pub fn columns_and_adjoint(
    device: &Device,
    (k, c, [h, w], kernel, o): &ColumnCase,
) -> ([usize; 3], Vec<f32>, Vec<f32>) {
    use burn::tensor::TensorData;
    let dims = [2, k * c, *h, *w];
    let n: usize = dims.iter().product();
    let xv: Vec<f32> = (0..n).map(|i| (i * 53 % 97) as f32 / 97.0 - 0.5).collect();
    let x = Tensor::<4>::from_data(TensorData::new(xv, dims), device).require_grad();
    let cols = fedrun::kernels::columns(x.clone(), *kernel, o);
    let cd = cols.dims();
    let m: usize = cd.iter().product();
    let dv: Vec<f32> = (0..m)
        .map(|i| 0.25 + (i * 37 % 101) as f32 / 101.0)
        .collect();
    let d = Tensor::<3>::from_data(TensorData::new(dv, cd), device);
    let g = (cols.clone() * d).sum().backward();
    let gx = x.grad(&g).expect("the maps' gradient");
    let v = |t: Tensor<3>| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    let gv = gx.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    (cd, v(cols.inner()), gv)
}
