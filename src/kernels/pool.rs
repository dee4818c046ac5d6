//! 2-D max pooling without padding or dilation on NCHW `f32` slices. The backward pass
//! recomputes each window's arg-max from the input (first maximum wins, as in burn and
//! PyTorch) instead of keeping an index tensor. With `relu`, the output is `max(0, ·)` of the
//! pooled value: `relu(pool(x))`, which equals `pool(relu(x))` in value and gradient (ReLU is
//! monotone, and a window whose maximum is not positive passes no gradient either way) at a
//! quarter of the ReLU's work.

use super::scratch::{for_chunks, threads};

/// Input `[n, c, h, w]` (n·c planes), window `k`, stride `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub k: [usize; 2],
    pub s: [usize; 2],
    pub relu: bool,
}

impl Pool {
    pub fn oh(&self) -> usize {
        (self.h - self.k[0]) / self.s[0] + 1
    }
    pub fn ow(&self) -> usize {
        (self.w - self.k[1]) / self.s[1] + 1
    }
    /// Offset in the plane of the first maximum of output `(oy, ox)`'s window.
    #[inline]
    fn argmax(&self, x: &[f32], oy: usize, ox: usize) -> (usize, f32) {
        let (y0, x0) = (oy * self.s[0], ox * self.s[1]);
        let mut best = (y0 * self.w + x0, x[y0 * self.w + x0]);
        for i in 0..self.k[0] {
            let row = (y0 + i) * self.w + x0;
            for j in 0..self.k[1] {
                let v = x[row + j];
                if v > best.1 {
                    best = (row + j, v);
                }
            }
        }
        best
    }
}

pub fn forward(p: &Pool, x: &[f32]) -> Vec<f32> {
    let (oh, ow, plane) = (p.oh(), p.ow(), p.h * p.w);
    let mut y = vec![0.0f32; p.planes * oh * ow];
    let body = |(i, out): (usize, &mut [f32])| {
        let src = &x[i * plane..(i + 1) * plane];
        if p.k == [2, 2] && p.s == [2, 2] {
            for oy in 0..oh {
                let (r0, r1) = (&src[2 * oy * p.w..], &src[(2 * oy + 1) * p.w..]);
                for (ox, o) in out[oy * ow..(oy + 1) * ow].iter_mut().enumerate() {
                    let mut m = r0[2 * ox];
                    for v in [r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]] {
                        if v > m {
                            m = v;
                        }
                    }
                    if p.relu && m <= 0.0 {
                        m = 0.0;
                    }
                    *o = m;
                }
            }
        } else {
            for oy in 0..oh {
                for ox in 0..ow {
                    let m = p.argmax(src, oy, ox).1;
                    out[oy * ow + ox] = if p.relu && m <= 0.0 { 0.0 } else { m };
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
            // branch-free arg-max of each 2×2 window (first maximum wins); every input of a
            // covered window is written, the max with its gradient and the others with 0
            for oy in 0..oh {
                let (a, b) = (2 * oy * p.w, (2 * oy + 1) * p.w);
                for ox in 0..ow {
                    let (i, j) = (a + 2 * ox, b + 2 * ox);
                    let v = [src[i], src[i + 1], src[j], src[j + 1]];
                    let (k01, m01) = if v[1] > v[0] { (1, v[1]) } else { (0, v[0]) };
                    let (k23, m23) = if v[3] > v[2] { (3, v[3]) } else { (2, v[2]) };
                    let (k, m) = if m23 > m01 { (k23, m23) } else { (k01, m01) };
                    // a NaN maximum passes no gradient, as in burn's ReLU
                    let passes = !p.relu || m > 0.0;
                    let d = if !passes { 0.0 } else { g[oy * ow + ox] };
                    out[i] = if k == 0 { d } else { 0.0 };
                    out[i + 1] = if k == 1 { d } else { 0.0 };
                    out[j] = if k == 2 { d } else { 0.0 };
                    out[j + 1] = if k == 3 { d } else { 0.0 };
                }
            }
            return;
        }
        for oy in 0..oh {
            for ox in 0..ow {
                let (at, m) = p.argmax(src, oy, ox);
                if !p.relu || m > 0.0 {
                    out[at] += g[oy * ow + ox];
                }
            }
        }
    };
    for_chunks(threads(), &mut dx, plane, |i, out| body((i, out)));
    dx
}
