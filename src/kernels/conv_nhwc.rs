//! The channels-last strategy: a chunk of images is copied once into a zero-padded NHWC
//! buffer; a row of the im2row matrix (one output position) is then `kh` contiguous copies of
//! `kw·cin` floats, and the gemm's reduction runs over `(ki, kj, c)`. The weight is reordered
//! to match (and its gradient back). Chosen when `cin` is large enough for those copies to be
//! long. Each function writes the whole of its output slice.

use super::gemm::{View, matmul};
use super::geom::{Geom, dy_chunk};
use super::scratch::{
    add_row, copy_row, for_chunks, over_chunks, sum_over_chunks, with_weights, with_workspace,
};
use super::wide::wide;

/// Zero-padded channels-last copy of images `i0 .. i0 + nb`: `xp[j][y][x][c]`.
pub(super) fn to_padded_nhwc(g: &Geom, x: &[f32], i0: usize, nb: usize, xp: &mut [f32], th: usize) {
    let (hp, plane, cin) = (g.hp(), g.h * g.w, g.cin);
    for_chunks(
        th,
        &mut xp[..nb * hp * g.wp() * cin],
        g.wp() * cin,
        |r, row| {
            let (j, y) = (r / hp, r % hp);
            if y < g.ph || y >= g.ph + g.h {
                row.fill(0.0);
                return;
            }
            let iy = y - g.ph;
            row[..g.pw * cin].fill(0.0);
            row[(g.pw + g.w) * cin..].fill(0.0);
            let src = &x[(i0 + j) * cin * plane + iy * g.w..];
            transpose_row(
                src,
                plane,
                g.w,
                &mut row[g.pw * cin..(g.pw + g.w) * cin],
                cin,
            );
        },
    );
}

/// `body[ix·cin + c] = src[c·plane + ix]` for `ix < w`, `c < cin`: one image row from planar
/// to interleaved, a block of [`TILE`] channels at a time, so that each store fills
/// consecutive floats and the block's `w`-float source rows stay in L1; within a block, 8 × 8
/// squares are transposed through registers ([`square`]), the rest value by value.
fn transpose_row(src: &[f32], plane: usize, w: usize, body: &mut [f32], cin: usize) {
    const TILE: usize = 8;
    for c0 in (0..cin).step_by(TILE) {
        let cb = TILE.min(cin - c0);
        let s = &src[c0 * plane..];
        let full = if cb == TILE { w / 8 * 8 } else { 0 };
        for ix0 in (0..full).step_by(8) {
            square(s, plane, ix0, &mut body[ix0 * cin + c0..], cin);
        }
        for (ix, d) in body.chunks_exact_mut(cin).take(w).enumerate().skip(full) {
            for (cc, v) in d[c0..c0 + cb].iter_mut().enumerate() {
                *v = s[cc * plane + ix];
            }
        }
    }
}

wide! {
    /// `d[p·cin + cc] = s[cc·plane + ix0 + p]` for `p, cc < 8`: an 8 × 8 square, loaded as eight
    /// rows of eight pixels and stored as eight rows of eight channels.
    fn square(s: &[f32], plane: usize, ix0: usize, d: &mut [f32], cin: usize) {
        let rows: [[f32; 8]; 8] =
            std::array::from_fn(|cc| s[cc * plane + ix0..][..8].try_into().unwrap_or([0.0; 8]));
        for (p, out) in d.chunks_mut(cin).take(8).enumerate() {
            let col: [f32; 8] = std::array::from_fn(|cc| rows[cc][p]);
            out[..8].copy_from_slice(&col);
        }
    }
}

/// im2row of a padded channels-last chunk: row `p = (j, oy, ox)` of `col` holds the window
/// of output position `p` in `(ki, kj, c)` order.
fn im2row(g: &Geom, xp: &[f32], nb: usize, col: &mut [f32], th: usize) {
    let (hp, wp, ow, ohw) = (g.hp(), g.wp(), g.ow(), g.ohw());
    let seg = g.kw * g.cin;
    let k = g.kh * seg;
    for_chunks(th, &mut col[..nb * ohw * k], k, |p, row| {
        let (j, q) = (p / ohw, p % ohw);
        let (oy, ox) = (q / ow, q % ow);
        for ki in 0..g.kh {
            let y = oy * g.sh + ki;
            let src = &xp[((j * hp + y) * wp + ox * g.sw) * g.cin..];
            copy_row(&mut row[ki * seg..(ki + 1) * seg], src);
        }
    });
}

/// The adjoint of [`im2row`]: accumulates `col` into the padded channels-last `dxp`
/// (zeroed here). Each padded row `(j, y)` gathers its contributions in a fixed order.
fn row2im(g: &Geom, col: &[f32], nb: usize, dxp: &mut [f32], th: usize) {
    let (hp, wp, oh, ow, ohw) = (g.hp(), g.wp(), g.oh(), g.ow(), g.ohw());
    let seg = g.kw * g.cin;
    let k = g.kh * seg;
    for_chunks(
        th,
        &mut dxp[..nb * hp * wp * g.cin],
        wp * g.cin,
        |r, row| {
            let (j, y) = (r / hp, r % hp);
            row.fill(0.0);
            for ki in 0..g.kh {
                if y < ki || (y - ki) % g.sh != 0 || (y - ki) / g.sh >= oh {
                    continue;
                }
                let oy = (y - ki) / g.sh;
                for ox in 0..ow {
                    let src = &col[(j * ohw + oy * ow + ox) * k + ki * seg..][..seg];
                    add_row(&mut row[ox * g.sw * g.cin..][..seg], src);
                }
            }
        },
    );
}

/// `dx[j][c][iy][ix] = dxp[j][iy + ph][ix + pw][c]` for images `0 .. nb` of the chunk.
fn from_padded_nhwc(g: &Geom, dxp: &[f32], nb: usize, dx: &mut [f32], th: usize) {
    let (hp, wp, plane, cin) = (g.hp(), g.wp(), g.h * g.w, g.cin);
    for_chunks(th, &mut dx[..nb * cin * plane], plane, |r, out| {
        let (j, c) = (r / cin, r % cin);
        for iy in 0..g.h {
            let src = &dxp[((j * hp + iy + g.ph) * wp + g.pw) * cin + c..];
            for (ix, o) in out[iy * g.w..(iy + 1) * g.w].iter_mut().enumerate() {
                *o = src[ix * cin];
            }
        }
    });
}

/// The weight `[cout, cin, kh, kw]` reordered to `[cout, (ki, kj, c)]`.
fn weight_to_rows(g: &Geom, w: &[f32], wt: &mut [f32]) {
    let kk = g.kh * g.kw;
    for co in 0..g.cout {
        for c in 0..g.cin {
            for r in 0..kk {
                wt[co * g.k() + r * g.cin + c] = w[(co * g.cin + c) * kk + r];
            }
        }
    }
}

/// `y = conv(x, w) + b`.
pub fn forward(g: &Geom, x: &[f32], w: &[f32], b: Option<&[f32]>, y: &mut [f32]) {
    let (ohw, k, nb) = (g.ohw(), g.k(), g.chunk());
    with_weights(g.cout * k, |wt| {
        weight_to_rows(g, w, wt);
        let wt = &*wt;
        over_chunks(y, nb * g.cout * ohw, |c, y, th| {
            let (i0, cols) = (c * nb, y.len() / g.cout);
            let nb = cols / ohw;
            let sizes = [nb * g.hp() * g.wp() * g.cin, cols * k, cols * g.cout];
            with_workspace(sizes, |[xp, col, tmp]| {
                to_padded_nhwc(g, x, i0, nb, xp, th);
                im2row(g, xp, nb, col, th);
                // position-major result [cols, cout]: gemm then reads the im2row matrix as
                // it lies, without packing it
                let (a, bt) = (View::rows(col, k), View::transposed(wt, k));
                matmul(cols, g.cout, k, tmp, g.cout, false, a, bt, th);
                for_chunks(th, y, ohw, |r, dst| {
                    let (j, co) = (r / g.cout, r % g.cout);
                    let src = &tmp[j * ohw * g.cout + co..];
                    let bias = b.map_or(0.0, |b| b[co]);
                    for (q, d) in dst.iter_mut().enumerate() {
                        *d = src[q * g.cout] + bias;
                    }
                });
            });
        });
    });
}

/// `dL/dx` for output gradient `dy`.
pub fn input_grad(g: &Geom, w: &[f32], dy: &[f32], dx: &mut [f32]) {
    let (ohw, k, nb) = (g.ohw(), g.k(), g.chunk());
    let plane = g.h * g.w;
    with_weights(g.cout * k, |wt| {
        weight_to_rows(g, w, wt);
        let wt = &*wt;
        over_chunks(dx, nb * g.cin * plane, |c, dx, th| {
            let i0 = c * nb;
            let nb = dx.len() / (g.cin * plane);
            let cols = nb * ohw;
            let gathered = if nb == 1 { 0 } else { g.cout * cols };
            let sizes = [nb * g.hp() * g.wp() * g.cin, cols * k, gathered];
            with_workspace(sizes, |[dxp, col, tmp]| {
                let dyv = dy_chunk(g, dy, i0, nb, tmp, th);
                // dY is [cout, cols]; its transpose is the left operand
                let lhs = View {
                    data: dyv.data,
                    rs: 1,
                    cs: dyv.rs,
                };
                matmul(cols, k, g.cout, col, k, false, lhs, View::rows(wt, k), th);
                row2im(g, col, nb, dxp, th);
                from_padded_nhwc(g, dxp, nb, dx, th);
            });
        });
    });
}

/// Writes the weight gradient of images `i0 .. i0 + nb` into `dwt`, in `[cout, (ki, kj, c)]`
/// order.
fn weight_grad_chunk(
    g: &Geom,
    x: &[f32],
    dy: &[f32],
    i0: usize,
    nb: usize,
    dwt: &mut [f32],
    th: usize,
) {
    let (k, cols) = (g.k(), nb * g.ohw());
    let gathered = if nb == 1 { 0 } else { g.cout * cols };
    let sizes = [nb * g.hp() * g.wp() * g.cin, cols * k, gathered];
    with_workspace(sizes, |[xp, col, tmp]| {
        let lhs = dy_chunk(g, dy, i0, nb, tmp, th);
        to_padded_nhwc(g, x, i0, nb, xp, th);
        im2row(g, xp, nb, col, th);
        matmul(g.cout, k, cols, dwt, k, false, lhs, View::rows(col, k), th);
    });
}

/// `dL/dw` for output gradient `dy`: the chunks' gradients summed in chunk order.
pub fn weight_grad(g: &Geom, x: &[f32], dy: &[f32], dw: &mut [f32]) {
    let (k, nb) = (g.k(), g.chunk());
    with_weights(g.cout * k, |dwt| {
        sum_over_chunks(g.n.div_ceil(nb), dwt, |c, part, th| {
            weight_grad_chunk(g, x, dy, c * nb, nb.min(g.n - c * nb), part, th);
        });
        // [cout, (ki, kj, c)] → [cout, c, ki, kj]
        let kk = g.kh * g.kw;
        for co in 0..g.cout {
            for c in 0..g.cin {
                for r in 0..kk {
                    dw[(co * g.cin + c) * kk + r] = dwt[co * k + r * g.cin + c];
                }
            }
        }
    });
}
