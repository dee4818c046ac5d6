//! What the kernels share: per-thread scratch buffers, the parallel row loop, short-row
//! copies and a fixed-order sum.

use rayon::prelude::*;
use std::cell::RefCell;

/// Below this many elements a copy loop runs on one thread.
const PARALLEL_COPY_MIN: usize = 1 << 15;

thread_local! {
    static WORKSPACE: RefCell<[Vec<f32>; 4]> =
        const { RefCell::new([Vec::new(), Vec::new(), Vec::new(), Vec::new()]) };
}

/// Runs `f` with four scratch buffers of at least the given sizes, reused across calls on this
/// thread. The buffers are taken out of the thread-local slot while `f` runs, so a nested call
/// (rayon may run other work while this thread waits) gets fresh ones instead of a panic.
pub fn with_workspace<R>(sizes: [usize; 4], f: impl FnOnce([&mut [f32]; 4]) -> R) -> R {
    let mut bufs = WORKSPACE.with(|w| std::mem::take(&mut *w.borrow_mut()));
    for (b, &n) in bufs.iter_mut().zip(&sizes) {
        if b.len() < n {
            b.resize(n, 0.0);
        }
    }
    let [a, b, c, d] = &mut bufs;
    let r = f([
        &mut a[..sizes[0]],
        &mut b[..sizes[1]],
        &mut c[..sizes[2]],
        &mut d[..sizes[3]],
    ]);
    WORKSPACE.with(|w| *w.borrow_mut() = bufs);
    r
}

pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `f(index, chunk)` over `data.chunks_mut(size)`, in parallel when it is worth it.
pub fn for_chunks(data: &mut [f32], size: usize, f: impl Fn(usize, &mut [f32]) + Sync + Send) {
    if threads() > 1 && data.len() >= PARALLEL_COPY_MIN {
        data.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    } else {
        data.chunks_mut(size).enumerate().for_each(|(i, c)| f(i, c));
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
