//! 2-D convolution (groups 1, dilation 1) on NCHW `f32` slices: forward, input gradient and
//! weight/bias gradient, each a gemm over an unfolded copy of the input, in chunks of images.
//!
//! Two unfoldings, chosen by shape: channels-first im2col ([`super::conv_nchw`]) for few input
//! channels and 1×1 strided kernels, channels-last im2row ([`super::conv_nhwc`]) otherwise;
//! 1×1 stride-1 unpadded kernels multiply the data directly. A chunk holds enough images that
//! the gemm has at least 512 output positions (`geom.rs`) and its unfolded copy stays in cache.
//! Buffers are kept per thread and reused (a training step allocates only the tensors it
//! returns), and every sum runs in an order fixed by the shapes alone, so the results are the
//! same bits at any thread count.

use super::gemm::{View, matmul};
pub use super::geom::Geom;
use super::scratch::{sum, threads};
use super::{conv_nchw as nchw, conv_nhwc as nhwc, winograd};

/// How a convolution of this geometry runs.
fn strategy(g: &Geom) -> Strategy {
    let one = g.kh == 1 && g.kw == 1 && g.ph == 0 && g.pw == 0;
    if one && g.sh == 1 && g.sw == 1 {
        Strategy::Pointwise
    } else if one || g.cin < NHWC_MIN_CIN {
        Strategy::Nchw
    } else {
        Strategy::Nhwc
    }
}

enum Strategy {
    Pointwise,
    Nchw,
    Nhwc,
}

/// Input channels from which the channels-last unfolding is used.
const NHWC_MIN_CIN: usize = 16;

/// `y = conv(x, w) + b`.
pub fn forward(g: &Geom, x: &[f32], w: &[f32], b: Option<&[f32]>) -> Vec<f32> {
    let mut y = vec![0.0f32; g.n * g.cout * g.ohw()];
    match strategy(g) {
        Strategy::Pointwise => {
            let (hw, th) = (g.ohw(), threads());
            for i in 0..g.n {
                let dst = &mut y[i * g.cout * hw..(i + 1) * g.cout * hw];
                if let Some(b) = b {
                    dst.chunks_mut(hw).zip(b).for_each(|(r, &v)| r.fill(v));
                }
                let rhs = View::rows(&x[i * g.cin * hw..(i + 1) * g.cin * hw], hw);
                matmul(
                    g.cout,
                    hw,
                    g.cin,
                    dst,
                    hw,
                    b.is_some(),
                    View::rows(w, g.cin),
                    rhs,
                    th,
                );
            }
        }
        Strategy::Nchw => nchw::forward(g, x, w, b, &mut y),
        Strategy::Nhwc if winograd::applies(g) => winograd::forward(g, x, w, b, false, &mut y),
        Strategy::Nhwc => nhwc::forward(g, x, w, b, &mut y),
    }
    y
}

/// `dL/dx` for output gradient `dy`.
pub fn input_grad(g: &Geom, w: &[f32], dy: &[f32]) -> Vec<f32> {
    let mut dx = vec![0.0f32; g.n * g.cin * g.h * g.w];
    match strategy(g) {
        Strategy::Pointwise => {
            let (hw, th) = (g.ohw(), threads());
            let wt = View::transposed(w, g.cin);
            for i in 0..g.n {
                let rhs = View::rows(&dy[i * g.cout * hw..(i + 1) * g.cout * hw], hw);
                let dst = &mut dx[i * g.cin * hw..(i + 1) * g.cin * hw];
                matmul(g.cin, hw, g.cout, dst, hw, false, wt, rhs, th);
            }
        }
        Strategy::Nchw => nchw::input_grad(g, w, dy, &mut dx),
        // the input gradient of a 3×3 stride-1 padding-1 convolution is one too
        Strategy::Nhwc if winograd::applies(&g.transposed()) => {
            winograd::forward(&g.transposed(), dy, w, None, true, &mut dx)
        }
        Strategy::Nhwc => nhwc::input_grad(g, w, dy, &mut dx),
    }
    dx
}

/// `(dL/dw, dL/db)` for output gradient `dy`.
pub fn weight_grad(g: &Geom, x: &[f32], dy: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut dw = vec![0.0f32; g.cout * g.k()];
    let ohw = g.ohw();
    match strategy(g) {
        Strategy::Pointwise => {
            let th = threads();
            for i in 0..g.n {
                let lhs = View::rows(&dy[i * g.cout * ohw..(i + 1) * g.cout * ohw], ohw);
                let rhs = View::transposed(&x[i * g.cin * ohw..(i + 1) * g.cin * ohw], ohw);
                matmul(g.cout, g.cin, ohw, &mut dw, g.cin, i > 0, lhs, rhs, th);
            }
        }
        Strategy::Nchw => nchw::weight_grad(g, x, dy, &mut dw),
        Strategy::Nhwc if winograd::applies(g) => winograd::weight_grad(g, x, dy, &mut dw),
        Strategy::Nhwc => nhwc::weight_grad(g, x, dy, &mut dw),
    }
    let mut db = vec![0.0f32; g.cout];
    for i in 0..g.n {
        for (co, d) in db.iter_mut().enumerate() {
            *d += sum(&dy[(i * g.cout + co) * ohw..][..ohw]);
        }
    }
    (dw, db)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct convolution, the definition.
    fn naive(g: &Geom, x: &[f32], w: &[f32]) -> Vec<f32> {
        let (oh, ow) = (g.oh(), g.ow());
        let mut y = vec![0.0; g.n * g.cout * oh * ow];
        for n in 0..g.n {
            for co in 0..g.cout {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut s = 0.0f64;
                        for c in 0..g.cin {
                            for ki in 0..g.kh {
                                for kj in 0..g.kw {
                                    let iy = (oy * g.sh + ki) as isize - g.ph as isize;
                                    let ix = (ox * g.sw + kj) as isize - g.pw as isize;
                                    if iy >= 0
                                        && ix >= 0
                                        && (iy as usize) < g.h
                                        && (ix as usize) < g.w
                                    {
                                        s += x[((n * g.cin + c) * g.h + iy as usize) * g.w
                                            + ix as usize]
                                            as f64
                                            * w[((co * g.cin + c) * g.kh + ki) * g.kw + kj] as f64;
                                    }
                                }
                            }
                        }
                        y[((n * g.cout + co) * oh + oy) * ow + ox] = s as f32;
                    }
                }
            }
        }
        y
    }

    #[test]
    fn forward_matches_the_definition_with_chunks_and_strides() {
        for &(n, h, k, s, p) in &[
            (3, 7, 3, 1, 1),
            (5, 6, 3, 2, 1),
            (2, 5, 1, 2, 0),
            (4, 9, 5, 1, 2),
        ] {
            let g = Geom {
                n,
                cin: 3,
                h,
                w: h + 1,
                cout: 5,
                kh: k,
                kw: k,
                sh: s,
                sw: s,
                ph: p,
                pw: p,
            };
            let x: Vec<f32> = (0..n * 3 * h * (h + 1))
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let w: Vec<f32> = (0..5 * 3 * k * k)
                .map(|i| ((i * 13 % 29) as f32 - 14.0) / 14.0)
                .collect();
            let y = forward(&g, &x, &w, None);
            let r = naive(&g, &x, &w);
            for (a, b) in y.iter().zip(&r) {
                assert!((a - b).abs() < 1e-4, "{g:?}: {a} vs {b}");
            }
        }
    }
}
