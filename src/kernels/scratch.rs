//! What the kernels share: per-thread scratch buffers, the parallel row loop, short-row
//! copies and a fixed-order sum.

use rayon::prelude::*;
use std::cell::RefCell;

/// Below this many elements a copy loop runs on one thread.
const PARALLEL_COPY_MIN: usize = 1 << 15;

thread_local! {
    static WORKSPACE: RefCell<[Vec<f32>; 3]> =
        const { RefCell::new([Vec::new(), Vec::new(), Vec::new()]) };
    static WEIGHTS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    static PARTS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Grows `v` to at least `n` elements (buffers only ever grow). The `with_*` helpers take their
/// buffers out of the thread-local slot while `f` runs and put them back after, so a nested
/// call (rayon may run other work on this thread while it waits) gets fresh buffers instead of
/// a panic.
fn grow(v: &mut Vec<f32>, n: usize) {
    if v.len() < n {
        v.resize(n, 0.0);
    }
}

/// Runs `f` with three per-thread scratch buffers of at least the given sizes (the unfolded
/// input and gemm operands of one chunk), reused across calls on this thread.
pub fn with_workspace<R>(sizes: [usize; 3], f: impl FnOnce([&mut [f32]; 3]) -> R) -> R {
    let mut bufs = WORKSPACE.with(|w| std::mem::take(&mut *w.borrow_mut()));
    for (b, &n) in bufs.iter_mut().zip(&sizes) {
        grow(b, n);
    }
    let [a, b, c] = &mut bufs;
    let r = f([&mut a[..sizes[0]], &mut b[..sizes[1]], &mut c[..sizes[2]]]);
    WORKSPACE.with(|w| *w.borrow_mut() = bufs);
    r
}

/// Runs `f` with a per-thread buffer of at least `n` elements for a whole call's weights (the
/// reordered weight, or the weight-gradient accumulators), separate from the chunk buffers of
/// [`with_workspace`] so that chunks can run on this thread meanwhile.
pub fn with_weights<R>(n: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    let mut v = WEIGHTS.with(|w| std::mem::take(&mut *w.borrow_mut()));
    grow(&mut v, n);
    let r = f(&mut v[..n]);
    WEIGHTS.with(|w| *w.borrow_mut() = v);
    r
}

pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Whether a loop over `len` elements is worth splitting over `th` threads.
pub fn worth_parallel(th: usize, len: usize) -> bool {
    th > 1 && len >= PARALLEL_COPY_MIN
}

/// Runs `f(index, chunk)` over `data.chunks_mut(size)`, on `th` threads when it is worth it.
pub fn for_chunks(
    th: usize,
    data: &mut [f32],
    size: usize,
    f: impl Fn(usize, &mut [f32]) + Sync + Send,
) {
    if worth_parallel(th, data.len()) {
        data.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    } else {
        data.chunks_mut(size).enumerate().for_each(|(i, c)| f(i, c));
    }
}

/// Whether `chunks` chunks of images run one per thread (each with single-thread kernels) rather
/// than one after another (each with all threads). Which way they run never changes a result.
pub fn chunks_in_parallel(chunks: usize) -> bool {
    let th = threads();
    th > 1 && chunks >= 2 * th
}

/// `out = Σ_c f(c)` over `chunks` per-chunk results of `out.len()` floats (`f(c, part,
/// threads)` writes chunk `c`'s result into `part`), summed in chunk order. The results are
/// computed one per thread when there are enough chunks ([`chunks_in_parallel`]), else one after
/// another with all threads: the same sums in the same order either way, so the same bits.
pub fn sum_over_chunks(
    chunks: usize,
    out: &mut [f32],
    f: impl Fn(usize, &mut [f32], usize) + Sync + Send,
) {
    let n = out.len();
    let mut parts = PARTS.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if chunks_in_parallel(chunks) {
        grow(&mut parts, chunks * n);
        let parts = &mut parts[..chunks * n];
        parts
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(c, p)| f(c, p, 1));
        let parts = &*parts;
        for_chunks(threads(), out, 4096, |blk, d| {
            let at = blk * 4096;
            d.copy_from_slice(&parts[at..at + d.len()]);
            for c in 1..chunks {
                add_row(d, &parts[c * n + at..]);
            }
        });
    } else {
        let th = threads();
        grow(&mut parts, n);
        for c in 0..chunks {
            if c == 0 {
                f(0, out, th);
            } else {
                f(c, &mut parts[..n], th);
                add_row(out, &parts[..n]);
            }
        }
    }
    PARTS.with(|p| *p.borrow_mut() = parts);
}

/// Runs `f(chunk, out_chunk, threads)` over `out.chunks_mut(per)`: one chunk per thread when
/// there are enough chunks ([`chunks_in_parallel`]), else one after another with all threads.
pub fn over_chunks(
    out: &mut [f32],
    per: usize,
    f: impl Fn(usize, &mut [f32], usize) + Sync + Send,
) {
    if chunks_in_parallel(out.len().div_ceil(per)) {
        out.par_chunks_mut(per)
            .enumerate()
            .for_each(|(c, o)| f(c, o, 1));
    } else {
        let th = threads();
        out.chunks_mut(per)
            .enumerate()
            .for_each(|(c, o)| f(c, o, th));
    }
}

/// `d.copy_from_slice(s)`, inline for short rows: a call to `memcpy` per 9- or 15-float
/// segment costs more than the copy.
#[inline(always)]
pub fn copy_row(d: &mut [f32], s: &[f32]) {
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
    while i < n {
        d[i] = s[i];
        i += 1;
    }
}

/// `d += s` elementwise.
#[inline(always)]
pub fn add_row(d: &mut [f32], s: &[f32]) {
    let n = d.len();
    d.iter_mut().zip(&s[..n]).for_each(|(d, s)| *d += s);
}

/// `d.fill(0.0)`, skipping the call when `d` is empty.
#[inline(always)]
pub fn zero(d: &mut [f32]) {
    if !d.is_empty() {
        d.fill(0.0);
    }
}

/// Sum with eight running partial sums (vectorised; the order is fixed by the length).
pub fn sum(v: &[f32]) -> f32 {
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

/// Columns per block of [`gather`] and [`scatter`]: a cache line of the rows' side.
const BLOCK: usize = 16;

/// `dst[q·m + r] = src[r·stride + q]` for `q < n`, `r < m`: `m` rows of `n` side by side,
/// a block of [`BLOCK`] columns at a time so that the block's `dst` stays in L1.
pub fn gather(dst: &mut [f32], src: &[f32], stride: usize, n: usize, m: usize) {
    for q0 in (0..n).step_by(BLOCK) {
        let q1 = (q0 + BLOCK).min(n);
        for r in 0..m {
            let row = &src[r * stride + q0..r * stride + q1];
            for (q, &v) in (q0..q1).zip(row) {
                dst[q * m + r] = v;
            }
        }
    }
}

/// `dst[r·stride + q] = src[q·m + r]`: [`gather`]'s inverse.
pub fn scatter(dst: &mut [f32], stride: usize, src: &[f32], n: usize, m: usize) {
    for q0 in (0..n).step_by(BLOCK) {
        let q1 = (q0 + BLOCK).min(n);
        for r in 0..m {
            let row = &mut dst[r * stride + q0..r * stride + q1];
            for (q, d) in (q0..q1).zip(row) {
                *d = src[q * m + r];
            }
        }
    }
}
