//! The channels-first strategy: im2col straight from the NCHW input, `col[(c, ki, kj)][p]`,
//! one row copy per (channel, kernel offset, output row). Chosen for few input channels (the
//! first layers, 3 channels), where a channels-last copy would give 9- or 15-float segments and
//! a gemm of poor shape. Each function writes the whole of its output slice.

use super::conv::{Geom, dy_chunk};
use super::gemm::{View, matmul};
use super::scratch::{copy_row, for_chunks, threads, with_workspace, zero};

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

/// im2col of images `i0 .. i0 + nb`: `col[r][j·ohw + oy·ow + ox]` for row `r = (c, ki, kj)`.
fn im2col(g: &Geom, x: &[f32], i0: usize, nb: usize, col: &mut [f32]) {
    let (oh, ow, ohw) = (g.oh(), g.ow(), g.ohw());
    let cols = nb * ohw;
    let plane = g.h * g.w;
    for_chunks(col, cols, |r, row| {
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
    });
}

/// col2im of images `i0 .. i0 + nb` into `dx` (the planes of those images, zeroed here):
/// the adjoint of [`im2col`].
fn col2im(g: &Geom, col: &[f32], nb: usize, dx: &mut [f32]) {
    let (oh, ow, ohw) = (g.oh(), g.ow(), g.ohw());
    let cols = nb * ohw;
    let plane = g.h * g.w;
    for_chunks(dx, plane, |p, dst| {
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
                        drow[ix0..ix0 + (xhi - xlo)]
                            .iter_mut()
                            .zip(&srow[xlo..xhi])
                            .for_each(|(d, s)| *d += s);
                    } else {
                        for ox in xlo..xhi {
                            drow[ox * g.sw + kj - g.pw] += srow[ox];
                        }
                    }
                }
            }
        }
    });
}

/// `y = conv(x, w) + b`.
pub fn forward(g: &Geom, x: &[f32], w: &[f32], b: Option<&[f32]>, y: &mut [f32]) {
    let (ohw, k, th) = (g.ohw(), g.k(), threads());
    let wv = View::rows(w, k);
    let nb = g.chunk();
    let direct = nb == 1;
    let sizes = [
        k * nb * ohw,
        if direct { 0 } else { g.cout * nb * ohw },
        0,
        0,
    ];
    with_workspace(sizes, |[col, tmp, _, _]| {
        for i0 in (0..g.n).step_by(nb) {
            let nb = nb.min(g.n - i0);
            let cols = nb * ohw;
            im2col(g, x, i0, nb, &mut col[..k * cols]);
            let rhs = View::rows(&col[..k * cols], cols);
            if direct {
                let dst = &mut y[i0 * g.cout * ohw..(i0 + 1) * g.cout * ohw];
                if let Some(b) = b {
                    dst.chunks_mut(ohw).zip(b).for_each(|(r, &v)| r.fill(v));
                }
                matmul(g.cout, cols, k, dst, cols, b.is_some(), wv, rhs, th);
            } else {
                let tmp = &mut tmp[..g.cout * cols];
                matmul(g.cout, cols, k, tmp, cols, false, wv, rhs, th);
                let out = &mut y[i0 * g.cout * ohw..(i0 + nb) * g.cout * ohw];
                for_chunks(out, ohw, |r, dst| {
                    let (j, co) = (r / g.cout, r % g.cout);
                    let src = &tmp[co * cols + j * ohw..][..ohw];
                    let bias = b.map_or(0.0, |b| b[co]);
                    dst.iter_mut().zip(src).for_each(|(d, s)| *d = s + bias);
                });
            }
        }
    });
}

/// `dL/dx` for output gradient `dy`.
pub fn input_grad(g: &Geom, w: &[f32], dy: &[f32], dx: &mut [f32]) {
    let (ohw, k, th) = (g.ohw(), g.k(), threads());
    let plane = g.h * g.w;
    let wt = View::transposed(w, k);
    let nb = g.chunk();
    let sizes = [
        k * nb * ohw,
        if nb == 1 { 0 } else { g.cout * nb * ohw },
        0,
        0,
    ];
    with_workspace(sizes, |[col, tmp, _, _]| {
        for i0 in (0..g.n).step_by(nb) {
            let nb = nb.min(g.n - i0);
            let cols = nb * ohw;
            let rhs = dy_chunk(g, dy, i0, nb, tmp);
            matmul(
                k,
                cols,
                g.cout,
                &mut col[..k * cols],
                cols,
                false,
                wt,
                rhs,
                th,
            );
            col2im(
                g,
                &col[..k * cols],
                nb,
                &mut dx[i0 * g.cin * plane..(i0 + nb) * g.cin * plane],
            );
        }
    });
}

/// `dL/dw` for output gradient `dy`.
pub fn weight_grad(g: &Geom, x: &[f32], dy: &[f32], dw: &mut [f32]) {
    let (ohw, k, th) = (g.ohw(), g.k(), threads());
    let nb = g.chunk();
    let sizes = [
        k * nb * ohw,
        if nb == 1 { 0 } else { g.cout * nb * ohw },
        0,
        0,
    ];
    with_workspace(sizes, |[col, tmp, _, _]| {
        for i0 in (0..g.n).step_by(nb) {
            let nb = nb.min(g.n - i0);
            let cols = nb * ohw;
            let lhs = dy_chunk(g, dy, i0, nb, tmp);
            im2col(g, x, i0, nb, &mut col[..k * cols]);
            let rhs = View::transposed(&col[..k * cols], cols);
            matmul(g.cout, k, cols, dw, k, i0 > 0, lhs, rhs, th);
        }
    });
}
