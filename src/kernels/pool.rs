//! 2-D max pooling without padding or dilation on NCHW `f32` slices, in floor or ceil mode
//! (ceil: a last, partial window where the side leaves a remainder, as TF's "same" pooling of
//! stride 2 and PyTorch's `ceil_mode`). The backward pass
//! recomputes each window's arg-max from the input (first maximum wins, as in burn and
//! PyTorch) instead of keeping an index tensor. With `relu`, the output is `max(0, ·)` of the
//! pooled value: `relu(pool(x))`, which equals `pool(relu(x))` in value and gradient (ReLU is
//! monotone, and a window whose maximum is not positive passes no gradient either way) at a
//! quarter of the ReLU's work.

use super::scratch::{for_chunks, threads};
use super::wide::wide;

/// Input `[n, c, h, w]` (n·c planes), window `k`, stride `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub k: [usize; 2],
    pub s: [usize; 2],
    pub relu: bool,
    /// Ceil mode: windows that start inside the input are kept, clipped at its edge.
    pub ceil: bool,
}

/// Windows along a side of `n` (window `k`, stride `s`).
fn windows(n: usize, k: usize, s: usize, ceil: bool) -> usize {
    if !ceil {
        return (n - k) / s + 1;
    }
    let o = (n - k).div_ceil(s) + 1;
    if (o - 1) * s >= n { o - 1 } else { o }
}

impl Pool {
    pub fn oh(&self) -> usize {
        windows(self.h, self.k[0], self.s[0], self.ceil)
    }
    pub fn ow(&self) -> usize {
        windows(self.w, self.k[1], self.s[1], self.ceil)
    }
    /// Whole 2×2 windows along each side (the fast paths' range; the rest are partial).
    fn whole(&self) -> (usize, usize) {
        (self.h / 2, self.w / 2)
    }
    /// Offset in the plane of the first maximum of output `(oy, ox)`'s window.
    #[inline]
    fn argmax(&self, x: &[f32], oy: usize, ox: usize) -> (usize, f32) {
        let (y0, x0) = (oy * self.s[0], ox * self.s[1]);
        let mut best = (y0 * self.w + x0, x[y0 * self.w + x0]);
        for i in 0..self.k[0].min(self.h - y0) {
            let row = (y0 + i) * self.w + x0;
            for j in 0..self.k[1].min(self.w - x0) {
                let v = x[row + j];
                if v > best.1 {
                    best = (row + j, v);
                }
            }
        }
        best
    }
    /// Output `(oy, ox)`: its window's maximum, through the ReLU if `relu`.
    fn pooled(&self, x: &[f32], oy: usize, ox: usize) -> f32 {
        let m = self.argmax(x, oy, ox).1;
        if self.relu && m <= 0.0 { 0.0 } else { m }
    }
    /// Adds output `(oy, ox)`'s gradient `g` to its window's first maximum in `dx`.
    fn route(&self, x: &[f32], oy: usize, ox: usize, g: f32, dx: &mut [f32]) {
        let (at, m) = self.argmax(x, oy, ox);
        if !self.relu || m > 0.0 {
            dx[at] += g;
        }
    }
}

wide! {
    /// One output row of whole 2×2 windows: input rows `r0`, `r1` (`2·o.len()` values each).
    fn forward_row(r0: &[f32], r1: &[f32], o: &mut [f32], relu: bool) {
        let pairs = r0.chunks_exact(2).zip(r1.chunks_exact(2));
        for (o, (a, b)) in o.iter_mut().zip(pairs) {
            let mut m = a[0];
            for v in [a[1], b[0], b[1]] {
                if v > m {
                    m = v;
                }
            }
            if relu && m <= 0.0 {
                m = 0.0;
            }
            *o = m;
        }
    }
}

wide! {
    /// One output row's gradient `g` routed to its whole 2×2 windows (input rows `r0`, `r1`):
    /// branch-free arg-max (first maximum wins); every input of a window is written, the
    /// maximum with its gradient and the others with 0.
    fn backward_row(r0: &[f32], r1: &[f32], g: &[f32], o0: &mut [f32], o1: &mut [f32], relu: bool) {
        let ins = r0.chunks_exact(2).zip(r1.chunks_exact(2));
        let outs = o0.chunks_exact_mut(2).zip(o1.chunks_exact_mut(2));
        for ((&g, (a, b)), (oa, ob)) in g.iter().zip(ins).zip(outs) {
            let v = [a[0], a[1], b[0], b[1]];
            let (k01, m01) = if v[1] > v[0] { (1, v[1]) } else { (0, v[0]) };
            let (k23, m23) = if v[3] > v[2] { (3, v[3]) } else { (2, v[2]) };
            let (k, m) = if m23 > m01 { (k23, m23) } else { (k01, m01) };
            // a NaN maximum passes no gradient, as in burn's ReLU
            let passes = !relu || m > 0.0;
            let d = if !passes { 0.0 } else { g };
            oa[0] = if k == 0 { d } else { 0.0 };
            oa[1] = if k == 1 { d } else { 0.0 };
            ob[0] = if k == 2 { d } else { 0.0 };
            ob[1] = if k == 3 { d } else { 0.0 };
        }
    }
}

pub fn forward(p: &Pool, x: &[f32]) -> Vec<f32> {
    let (oh, ow, plane) = (p.oh(), p.ow(), p.h * p.w);
    let mut y = vec![0.0f32; p.planes * oh * ow];
    let body = |(i, out): (usize, &mut [f32])| {
        let src = &x[i * plane..(i + 1) * plane];
        if p.k == [2, 2] && p.s == [2, 2] {
            let (wh, ww) = p.whole();
            for (oy, o) in out.chunks_exact_mut(ow).take(wh).enumerate() {
                let (r0, r1) = (&src[2 * oy * p.w..], &src[(2 * oy + 1) * p.w..]);
                forward_row(&r0[..2 * ww], &r1[..2 * ww], &mut o[..ww], p.relu);
            }
            // the partial windows of ceil mode: the last column, then the last row
            for (oy, ox) in (0..wh).map(|oy| (oy, ww)).chain((0..ow).map(|ox| (wh, ox))) {
                if oy < oh && ox < ow {
                    out[oy * ow + ox] = p.pooled(src, oy, ox);
                }
            }
        } else {
            for oy in 0..oh {
                for ox in 0..ow {
                    out[oy * ow + ox] = p.pooled(src, oy, ox);
                }
            }
        }
    };
    for_chunks(threads(), &mut y, oh * ow, |i, out| body((i, out)));
    y
}

pub fn backward(p: &Pool, x: &[f32], dy: &[f32]) -> Vec<f32> {
    let (oh, ow, plane) = (p.oh(), p.ow(), p.h * p.w);
    let mut dx = vec![0.0f32; p.planes * plane];
    let body = |(i, out): (usize, &mut [f32])| {
        let src = &x[i * plane..(i + 1) * plane];
        let g = &dy[i * oh * ow..(i + 1) * oh * ow];
        if p.k == [2, 2] && p.s == [2, 2] {
            let (wh, ww) = p.whole();
            for oy in 0..wh {
                let (a, b) = (2 * oy * p.w, (2 * oy + 1) * p.w);
                let (o0, o1) = out[a..].split_at_mut(p.w);
                let (s0, s1) = (&src[a..a + 2 * ww], &src[b..b + 2 * ww]);
                let gr = &g[oy * ow..oy * ow + ww];
                backward_row(s0, s1, gr, &mut o0[..2 * ww], &mut o1[..2 * ww], p.relu);
            }
            // ceil mode's partial windows cover inputs no whole window wrote (still 0)
            for (oy, ox) in (0..wh).map(|oy| (oy, ww)).chain((0..ow).map(|ox| (wh, ox))) {
                if oy < oh && ox < ow {
                    p.route(src, oy, ox, g[oy * ow + ox], out);
                }
            }
            return;
        }
        for oy in 0..oh {
            for ox in 0..ow {
                p.route(src, oy, ox, g[oy * ow + ox], out);
            }
        }
    };
    for_chunks(threads(), &mut dx, plane, |i, out| body((i, out)));
    dx
}
