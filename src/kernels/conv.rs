//! 2-D convolution (groups 1, dilation 1) on NCHW `f32` slices: forward, input gradient and
//! weight/bias gradient, as im2col + gemm over chunks of images.
//!
//! A chunk holds enough images that the gemm has at least [`TARGET_COLS`] columns (one image
//! when its output plane is that large, so the gemm writes straight into the output). The
//! im2col buffer of a chunk stays in cache, and the buffers are kept per thread and reused, so
//! a training step allocates only the tensors it returns. 1×1 stride-1 unpadded convolutions
//! skip im2col. Every sum runs in an order fixed by the shapes alone, so the results are the
//! same bits at any thread count.

use rayon::prelude::*;
use std::cell::RefCell;

use super::gemm::{View, matmul};

/// Geometry of one convolution: input `[n, cin, h, w]`, weight `[cout, cin, kh, kw]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    pub n: usize,
    pub cin: usize,
    pub h: usize,
    pub w: usize,
    pub cout: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
}

impl Geom {
    pub fn oh(&self) -> usize {
        (self.h + 2 * self.ph - self.kh) / self.sh + 1
    }
    pub fn ow(&self) -> usize {
        (self.w + 2 * self.pw - self.kw) / self.sw + 1
    }
    fn ohw(&self) -> usize {
        self.oh() * self.ow()
    }
    /// Rows of the im2col matrix: `cin·kh·kw`.
    fn k(&self) -> usize {
        self.cin * self.kh * self.kw
    }
    fn pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.sh == 1 && self.sw == 1 && self.ph == 0 && self.pw == 0
    }
    /// Images per chunk.
    fn chunk(&self) -> usize {
        TARGET_COLS.div_ceil(self.ohw()).clamp(1, self.n.max(1))
    }
    /// Multiply-adds of the forward pass (direct convolution count).
    pub fn macs(&self) -> usize {
        self.n * self.cout * self.ohw() * self.k()
    }
}

/// Minimum gemm width (output positions) a chunk aims for.
const TARGET_COLS: usize = 512;

/// Below this many elements a copy loop runs on one thread.
const PARALLEL_COPY_MIN: usize = 1 << 15;

thread_local! {
    static WORKSPACE: RefCell<[Vec<f32>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

/// Runs `f` with two scratch buffers of at least `a` and `b` elements, reused across calls on
/// this thread. The buffers are taken out of the thread-local slot while `f` runs, so a nested
/// call (rayon may run other work while this thread waits) gets fresh ones instead of a panic.
fn with_workspace<R>(a: usize, b: usize, f: impl FnOnce(&mut [f32], &mut [f32]) -> R) -> R {
    let [mut wa, mut wb] = WORKSPACE.with(|w| std::mem::take(&mut *w.borrow_mut()));
    if wa.len() < a {
        wa.resize(a, 0.0);
    }
    if wb.len() < b {
        wb.resize(b, 0.0);
    }
    let r = f(&mut wa[..a], &mut wb[..b]);
    WORKSPACE.with(|w| *w.borrow_mut() = [wa, wb]);
    r
}

fn threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `f(index, chunk)` over `data.chunks_mut(size)`, in parallel when it is worth it.
fn for_chunks(data: &mut [f32], size: usize, f: impl Fn(usize, &mut [f32]) + Sync + Send) {
    if threads() > 1 && data.len() >= PARALLEL_COPY_MIN {
        data.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    } else {
        data.chunks_mut(size).enumerate().for_each(|(i, c)| f(i, c));
    }
}

/// `d.copy_from_slice(s)` for the short rows of small feature maps, inline: a call to
/// `memcpy` per 10-float row costs more than the copy.
#[inline(always)]
fn copy_row(d: &mut [f32], s: &[f32]) {
    let n = d.len();
    let s = &s[..n];
    if n > 64 {
        d.copy_from_slice(s);
        return;
    }
    let mut i = 0;
    while i + 8 <= n {
        let v: [f32; 8] = s[i..i + 8].try_into().unwrap();
        d[i..i + 8].copy_from_slice(&v);
        i += 8;
    }
    if i + 4 <= n {
        let v: [f32; 4] = s[i..i + 4].try_into().unwrap();
        d[i..i + 4].copy_from_slice(&v);
        i += 4;
    }
    if i < n {
        d[i] = s[i];
    }
    if i + 1 < n {
        d[i + 1] = s[i + 1];
    }
    if i + 2 < n {
        d[i + 2] = s[i + 2];
    }
}

/// `d.fill(0.0)`, skipping the call when `d` is empty.
#[inline(always)]
fn zero(d: &mut [f32]) {
    if !d.is_empty() {
        d.fill(0.0);
    }
}

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
pub fn forward(g: &Geom, x: &[f32], w: &[f32], b: Option<&[f32]>) -> Vec<f32> {
    let (ohw, k) = (g.ohw(), g.k());
    let mut y = vec![0.0f32; g.n * g.cout * ohw];
    let th = threads();
    let wv = View::rows(w, k);
    let nb = if g.pointwise() { 1 } else { g.chunk() };
    let direct = nb == 1;
    let bias_rows = |dst: &mut [f32]| {
        if let Some(b) = b {
            dst.chunks_mut(ohw)
                .zip(b.iter().cycle())
                .for_each(|(r, &v)| r.fill(v));
        }
    };
    let cols_max = nb * ohw;
    let col_len = if g.pointwise() { 0 } else { k * cols_max };
    let tmp_len = if direct { 0 } else { g.cout * cols_max };
    with_workspace(col_len, tmp_len, |col, tmp| {
        for i0 in (0..g.n).step_by(nb) {
            let nb = nb.min(g.n - i0);
            let cols = nb * ohw;
            let rhs = if g.pointwise() {
                View::rows(&x[i0 * g.cin * ohw..(i0 + 1) * g.cin * ohw], ohw)
            } else {
                im2col(g, x, i0, nb, &mut col[..k * cols]);
                View::rows(&col[..k * cols], cols)
            };
            if direct {
                let dst = &mut y[i0 * g.cout * ohw..(i0 + 1) * g.cout * ohw];
                bias_rows(dst);
                matmul(g.cout, cols, k, dst, cols, b.is_some(), wv, rhs, th);
            } else {
                let tmp = &mut tmp[..g.cout * cols];
                matmul(g.cout, cols, k, tmp, cols, false, wv, rhs, th);
                let out = &mut y[i0 * g.cout * ohw..(i0 + nb) * g.cout * ohw];
                for_chunks(out, ohw, |r, dst| {
                    let (j, co) = (r / g.cout, r % g.cout);
                    let src = &tmp[co * cols + j * ohw..][..ohw];
                    match b {
                        Some(b) => dst.iter_mut().zip(src).for_each(|(d, s)| *d = s + b[co]),
                        None => copy_row(dst, src),
                    }
                });
            }
        }
    });
    y
}

/// Copies `dy` of images `i0 .. i0 + nb` into `[cout, nb·ohw]` (the gemm layout of a chunk).
fn gather_dy(g: &Geom, dy: &[f32], i0: usize, nb: usize, out: &mut [f32]) {
    let ohw = g.ohw();
    let cols = nb * ohw;
    for_chunks(out, cols, |co, row| {
        for j in 0..nb {
            copy_row(
                &mut row[j * ohw..(j + 1) * ohw],
                &dy[((i0 + j) * g.cout + co) * ohw..],
            );
        }
    });
}

/// `dL/dx` for output gradient `dy`.
pub fn input_grad(g: &Geom, w: &[f32], dy: &[f32]) -> Vec<f32> {
    let (ohw, k) = (g.ohw(), g.k());
    let plane = g.h * g.w;
    let mut dx = vec![0.0f32; g.n * g.cin * plane];
    let th = threads();
    let wt = View::transposed(w, k);
    if g.pointwise() {
        for i in 0..g.n {
            let rhs = View::rows(&dy[i * g.cout * ohw..(i + 1) * g.cout * ohw], ohw);
            let dst = &mut dx[i * g.cin * plane..(i + 1) * g.cin * plane];
            matmul(k, ohw, g.cout, dst, ohw, false, wt, rhs, th);
        }
        return dx;
    }
    let nb = g.chunk();
    let tmp_len = if nb == 1 { 0 } else { g.cout * nb * ohw };
    with_workspace(k * nb * ohw, tmp_len, |col, tmp| {
        for i0 in (0..g.n).step_by(nb) {
            let nb = nb.min(g.n - i0);
            let cols = nb * ohw;
            let rhs = if nb == 1 && tmp.is_empty() {
                View::rows(&dy[i0 * g.cout * ohw..(i0 + 1) * g.cout * ohw], ohw)
            } else {
                gather_dy(g, dy, i0, nb, &mut tmp[..g.cout * cols]);
                View::rows(&tmp[..g.cout * cols], cols)
            };
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
    dx
}

/// `(dL/dw, dL/db)` for output gradient `dy`.
pub fn weight_grad(g: &Geom, x: &[f32], dy: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (ohw, k) = (g.ohw(), g.k());
    let mut dw = vec![0.0f32; g.cout * k];
    let th = threads();
    let nb = if g.pointwise() { 1 } else { g.chunk() };
    let col_len = if g.pointwise() { 0 } else { k * nb * ohw };
    let tmp_len = if nb == 1 { 0 } else { g.cout * nb * ohw };
    with_workspace(col_len, tmp_len, |col, tmp| {
        for i0 in (0..g.n).step_by(nb) {
            let nb = nb.min(g.n - i0);
            let cols = nb * ohw;
            let lhs = if tmp.is_empty() {
                View::rows(&dy[i0 * g.cout * ohw..(i0 + 1) * g.cout * ohw], ohw)
            } else {
                gather_dy(g, dy, i0, nb, &mut tmp[..g.cout * cols]);
                View::rows(&tmp[..g.cout * cols], cols)
            };
            let rhs = if g.pointwise() {
                View::transposed(&x[i0 * g.cin * ohw..(i0 + 1) * g.cin * ohw], ohw)
            } else {
                im2col(g, x, i0, nb, &mut col[..k * cols]);
                View::transposed(&col[..k * cols], cols)
            };
            matmul(g.cout, k, cols, &mut dw, k, i0 > 0, lhs, rhs, th);
        }
    });
    let mut db = vec![0.0f32; g.cout];
    for i in 0..g.n {
        for (co, d) in db.iter_mut().enumerate() {
            *d += sum(&dy[(i * g.cout + co) * ohw..][..ohw]);
        }
    }
    (dw, db)
}

/// Sum with eight running partial sums (vectorised; the order is fixed by the length).
fn sum(v: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = v.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for &r in rest {
        s += r;
    }
    s
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
