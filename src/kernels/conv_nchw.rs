//! The channels-first strategy: im2col straight from the NCHW input, `col[(c, ki, kj)][p]`,
//! one row copy per (channel, kernel offset, output row). Chosen for few input channels (the
//! first layers, 3 channels) and 1×1 strided kernels, where a channels-last copy would give
//! short segments and a gemm of poor shape. Each function writes the whole of its output.

use super::gemm::{View, matmul};
use super::geom::{Geom, dy_chunk};
use super::scratch::{
    add_row, copy_row, for_chunks, over_chunks, sum_over_chunks, with_workspace, zero,
};
use super::wide::wide;

/// The valid output range `[lo, hi)` along one axis for kernel offset `kk`: the outputs whose
/// input index `o·s + kk − p` lies in `[0, len)`.
fn valid(out: usize, len: usize, s: usize, kk: usize, p: usize) -> (usize, usize) {
    let lo = p.saturating_sub(kk).div_ceil(s).min(out);
    let hi = if len + p > kk {
        ((len + p - kk - 1) / s + 1).min(out)
    } else {
        0
    };
    (lo, hi.max(lo))
}

wide! {
    /// Row `r = (c, ki, kj)` of the im2col of images `i0 .. i0 + nb` (see [`im2col`]).
    fn im2col_row(g: &Geom, x: &[f32], i0: usize, nb: usize, r: usize, row: &mut [f32]) {
        let (oh, ow, ohw) = (g.oh(), g.ow(), g.ohw());
        let plane = g.h * g.w;
        let c = r / (g.kh * g.kw);
        let ki = (r / g.kw) % g.kh;
        let kj = r % g.kw;
        let (ylo, yhi) = valid(oh, g.h, g.sh, ki, g.ph);
        let (xlo, xhi) = valid(ow, g.w, g.sw, kj, g.pw);
        for j in 0..nb {
            let src = &x[((i0 + j) * g.cin + c) * plane..][..plane];
            let dst = &mut row[j * ohw..(j + 1) * ohw];
            zero(&mut dst[..ylo * ow]);
            zero(&mut dst[yhi * ow..]);
            for oy in ylo..yhi {
                let iy = oy * g.sh + ki - g.ph;
                let srow = &src[iy * g.w..(iy + 1) * g.w];
                let drow = &mut dst[oy * ow..(oy + 1) * ow];
                zero(&mut drow[..xlo]);
                zero(&mut drow[xhi..]);
                if g.sw == 1 {
                    let ix0 = xlo + kj - g.pw;
                    copy_row(&mut drow[xlo..xhi], &srow[ix0..]);
                } else {
                    for (ox, d) in drow[xlo..xhi].iter_mut().enumerate() {
                        *d = srow[(xlo + ox) * g.sw + kj - g.pw];
                    }
                }
            }
        }
    }
}

/// im2col of images `i0 .. i0 + nb`: `col[r][j·ohw + oy·ow + ox]` for row `r = (c, ki, kj)`.
fn im2col(g: &Geom, x: &[f32], i0: usize, nb: usize, col: &mut [f32], th: usize) {
    for_chunks(th, col, nb * g.ohw(), |r, row| {
        im2col_row(g, x, i0, nb, r, row)
    });
}

wide! {
    /// Plane `p = (j, c)` of [`col2im`], zeroed first.
    fn col2im_plane(g: &Geom, col: &[f32], nb: usize, p: usize, dst: &mut [f32]) {
        let (oh, ow, ohw) = (g.oh(), g.ow(), g.ohw());
        let cols = nb * ohw;
        let (j, c) = (p / g.cin, p % g.cin);
        dst.fill(0.0);
        for ki in 0..g.kh {
            let (ylo, yhi) = valid(oh, g.h, g.sh, ki, g.ph);
            for kj in 0..g.kw {
                let (xlo, xhi) = valid(ow, g.w, g.sw, kj, g.pw);
                let r = (c * g.kh + ki) * g.kw + kj;
                let src = &col[r * cols + j * ohw..][..ohw];
                for oy in ylo..yhi {
                    let iy = oy * g.sh + ki - g.ph;
                    let drow = &mut dst[iy * g.w..(iy + 1) * g.w];
                    let srow = &src[oy * ow..(oy + 1) * ow];
                    if g.sw == 1 {
                        let ix0 = xlo + kj - g.pw;
                        add_row(&mut drow[ix0..ix0 + (xhi - xlo)], &srow[xlo..xhi]);
                    } else {
                        for ox in xlo..xhi {
                            drow[ox * g.sw + kj - g.pw] += srow[ox];
                        }
                    }
                }
            }
        }
    }
}

/// col2im of images `i0 .. i0 + nb` into `dx` (the planes of those images, zeroed here):
/// the adjoint of [`im2col`].
fn col2im(g: &Geom, col: &[f32], nb: usize, dx: &mut [f32], th: usize) {
    for_chunks(th, dx, g.h * g.w, |p, dst| col2im_plane(g, col, nb, p, dst));
}

/// `y = conv(x, w) + b`.
pub fn forward(g: &Geom, x: &[f32], w: &[f32], b: Option<&[f32]>, y: &mut [f32]) {
    let (ohw, k, nb) = (g.ohw(), g.k(), g.chunk());
    let wv = View::rows(w, k);
    over_chunks(y, nb * g.cout * ohw, |c, y, th| {
        let (i0, cols) = (c * nb, y.len() / g.cout);
        let nb = cols / ohw;
        let direct = nb == 1;
        let sizes = [k * cols, if direct { 0 } else { g.cout * cols }, 0];
        with_workspace(sizes, |[col, tmp, _]| {
            im2col(g, x, i0, nb, col, th);
            let rhs = View::rows(col, cols);
            if direct {
                if let Some(b) = b {
                    y.chunks_mut(ohw).zip(b).for_each(|(r, &v)| r.fill(v));
                }
                matmul(g.cout, cols, k, y, cols, b.is_some(), wv, rhs, th);
            } else {
                matmul(g.cout, cols, k, tmp, cols, false, wv, rhs, th);
                for_chunks(th, y, ohw, |r, dst| {
                    let (j, co) = (r / g.cout, r % g.cout);
                    let src = &tmp[co * cols + j * ohw..][..ohw];
                    let bias = b.map_or(0.0, |b| b[co]);
                    dst.iter_mut().zip(src).for_each(|(d, s)| *d = s + bias);
                });
            }
        });
    });
}

/// `dL/dx` for output gradient `dy`.
pub fn input_grad(g: &Geom, w: &[f32], dy: &[f32], dx: &mut [f32]) {
    let (ohw, k, nb) = (g.ohw(), g.k(), g.chunk());
    let plane = g.h * g.w;
    let wt = View::transposed(w, k);
    over_chunks(dx, nb * g.cin * plane, |c, dx, th| {
        let i0 = c * nb;
        let nb = dx.len() / (g.cin * plane);
        let cols = nb * ohw;
        let sizes = [k * cols, if nb == 1 { 0 } else { g.cout * cols }, 0];
        with_workspace(sizes, |[col, tmp, _]| {
            let rhs = dy_chunk(g, dy, i0, nb, tmp, th);
            matmul(k, cols, g.cout, col, cols, false, wt, rhs, th);
            col2im(g, col, nb, dx, th);
        });
    });
}

/// Writes the weight gradient of images `i0 .. i0 + nb` into `dw`.
fn weight_grad_chunk(
    g: &Geom,
    x: &[f32],
    dy: &[f32],
    i0: usize,
    nb: usize,
    dw: &mut [f32],
    th: usize,
) {
    let (k, cols) = (g.k(), nb * g.ohw());
    let sizes = [k * cols, if nb == 1 { 0 } else { g.cout * cols }, 0];
    with_workspace(sizes, |[col, tmp, _]| {
        let lhs = dy_chunk(g, dy, i0, nb, tmp, th);
        im2col(g, x, i0, nb, col, th);
        matmul(
            g.cout,
            k,
            cols,
            dw,
            k,
            false,
            lhs,
            View::transposed(col, cols),
            th,
        );
    });
}

/// `dL/dw` for output gradient `dy`: the chunks' gradients summed in chunk order.
pub fn weight_grad(g: &Geom, x: &[f32], dy: &[f32], dw: &mut [f32]) {
    let nb = g.chunk();
    sum_over_chunks(g.n.div_ceil(nb), dw, |c, part, th| {
        weight_grad_chunk(g, x, dy, c * nb, nb.min(g.n - c * nb), part, th);
    });
}
