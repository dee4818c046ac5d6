//! One LSTM layer over a whole sequence, forward and backward through time, on `f32` slices:
//! the recurrence that burn runs as a dozen small tensor ops per character (and as many autodiff
//! nodes) done in one call, as cuDNN and PyTorch's CPU LSTM do. The input projection of every
//! character (`x·Wx + b`, one matmul) comes in precomputed; each step adds `h·Wh` with one gemm
//! and applies the gates with [`super::exp`]'s branch-free σ and tanh; the backward pass runs
//! the steps in reverse with one gemm each and sums `Wh`'s gradient over the whole sequence in
//! one more. Gate order i, f, g, o (PyTorch's). Batch-major: `[batch, len, ·]`.
//!
//! The sequences of a batch are independent, so the batch runs in chunks of about
//! [`CHUNK_ROWS`] sequences, one chunk per thread. The chunks depend on the batch size only,
//! the gemms split their output, never their sums, and the gates run element by element: the
//! result does not depend on the number of threads.

use rayon::prelude::*;

use super::exp::{sigmoid, tanh};
use super::gemm::{View, matmul, matmul_col_major};
use super::scratch::{gather, scatter, threads};
use super::wide::wide;

/// The largest batch that runs through the fused layer on flex, whose step gemms read the
/// recurrent weight in place: faster for the local steps' batches (50 in the papers' code),
/// slower than gate-by-gate products for an evaluation's hundreds of sequences.
pub const FUSED_MAX_BATCH: usize = 128;

/// About this many sequences per chunk (the chunks of a batch are as even as can be).
const CHUNK_ROWS: usize = 32;

/// The sizes: `batch` sequences of `len` characters, `hidden` units.
#[derive(Clone, Copy, Debug)]
pub struct Seq {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
}

impl Seq {
    /// Sequences per chunk: the batch in `⌈batch / CHUNK_ROWS⌉` even chunks.
    fn rows(&self) -> usize {
        let chunks = self.batch.div_ceil(CHUNK_ROWS).max(1);
        self.batch.div_ceil(chunks).max(1)
    }
    /// Threads per chunk's gemms: the rest of the pool when there are fewer chunks than threads.
    fn inner_threads(&self) -> usize {
        (threads() / self.batch.div_ceil(self.rows()).max(1)).max(1)
    }
}

/// What the forward pass keeps for the backward pass: the gates after their activations
/// and the cell states, chunk by chunk in [`forward_chunk`]'s layout.
pub struct Kept<V = Vec<f32>> {
    pub gates: V,
    pub cells: V,
}

/// The hidden state after each character `[batch, len, hidden]`, from the input projections
/// `xw` (`[batch, len, 4·hidden]`, biases included) and the recurrent weight `wh`
/// (`[hidden, 4·hidden]`, row-major), with zero initial states; with what the backward pass
/// needs if `keep` (else each chunk keeps one step's gates and two cell states, returned too).
pub fn forward(s: &Seq, xw: &[f32], wh: &[f32], keep: bool) -> (Vec<f32>, Kept) {
    let (h, rows, th) = (s.hidden, s.rows(), s.inner_threads());
    let chunks = s.batch.div_ceil(rows);
    let (steps, cell_steps) = if keep { (s.len, s.len) } else { (1, 2) };
    let mut gates = vec![
        0.0f32;
        if keep {
            xw.len()
        } else {
            chunks * rows * 4 * h
        }
    ];
    let mut cells = vec![
        0.0f32;
        if keep {
            s.batch * s.len * h
        } else {
            chunks * rows * 2 * h
        }
    ];
    let mut hs = vec![0.0f32; s.batch * s.len * h];
    gates
        .par_chunks_mut(rows * steps * 4 * h)
        .zip(xw.par_chunks(rows * s.len * 4 * h))
        .zip(cells.par_chunks_mut(rows * cell_steps * h))
        .zip(hs.par_chunks_mut(rows * s.len * h))
        .for_each(|(((g, x), c), o)| forward_chunk(s, wh, x, [g, c, o], keep, th));
    (hs, Kept { gates, cells })
}

/// [`forward`] over one chunk of `m` sequences, from their input projections `x`, into their
/// gates and cell states (`[len, 4·hidden, m]` and `[len, hidden, m]`: each step's values
/// for the chunk side by side, the layout in which the step's gemm reads `wh` in place; one
/// step and two alternating states unless `keep`) and their hidden states (`[m, len, hidden]`).
fn forward_chunk(s: &Seq, wh: &[f32], x: &[f32], bufs: [&mut [f32]; 3], keep: bool, th: usize) {
    let [g, c, o] = bufs;
    let (h, h4, len) = (s.hidden, 4 * s.hidden, s.len);
    let m = o.len() / (len * h);
    let (hm, zero) = (h * m, vec![0.0f32; h * m]);
    let mut state = vec![0.0f32; hm];
    for t in 0..len {
        let gt = &mut g[if keep { t * 4 * hm } else { 0 }..][..4 * hm];
        gather(gt, &x[t * h4..], len * h4, h4, m);
        if t > 0 {
            let h_prev = View {
                data: &state,
                rs: 1,
                cs: m,
            };
            let w = View::rows(wh, h4);
            matmul_col_major([m, h4, h], (gt, m), true, (h_prev, w), th);
        }
        // step t's cell state, after step t − 1's (in place of step t − 2's unless `keep`)
        let at = if keep { t * hm } else { (t % 2) * hm };
        let (c_prev, c_t) = if t == 0 {
            (&zero[..], &mut c[at..at + hm])
        } else if at > 0 {
            let (a, b) = c.split_at_mut(at);
            (&a[at - hm..], &mut b[..hm])
        } else {
            let (a, b) = c.split_at_mut(hm);
            (&b[..hm], &mut a[..])
        };
        cell_forward(gt, c_prev, c_t, &mut state);
        scatter(&mut o[t * h..], len * h, &state, h, m);
    }
}

wide! {
    /// One step of a chunk: the gates' pre-activations `g` (i, f, g, o, each `c.len()` long)
    /// become their activations; `c = f·c_prev + i·g`, `h = o·tanh(c)`.
    fn cell_forward(g: &mut [f32], c_prev: &[f32], c: &mut [f32], h: &mut [f32]) {
        let n = c.len();
        let (ifg, go) = g.split_at_mut(3 * n);
        let (gif, gg) = ifg.split_at_mut(2 * n);
        for v in gif.iter_mut() {
            *v = sigmoid(*v);
        }
        for v in go.iter_mut() {
            *v = sigmoid(*v);
        }
        for v in gg.iter_mut() {
            *v = tanh(*v);
        }
        let (gi, gf) = gif.split_at(n);
        let gates = gi.iter().zip(gf.iter()).zip(gg.iter().zip(go.iter()));
        let states = c.iter_mut().zip(h.iter_mut()).zip(c_prev);
        for (((c, h), &cp), ((&i, &f), (&cand, &o))) in states.zip(gates) {
            let cn = f * cp + i * cand;
            *c = cn;
            *h = o * tanh(cn);
        }
    }
}

/// The gradients `(dL/dxw, dL/dwh)` of [`forward`] against `dhs` (`dL/dh` of each step's
/// output, `[batch, len, hidden]`), from its output `hs` and what it kept (`k`'s slices).
pub fn backward(
    s: &Seq,
    wh: &[f32],
    hs: &[f32],
    k: Kept<&[f32]>,
    dhs: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (h, h4, rows, th) = (s.hidden, 4 * s.hidden, s.rows(), s.inner_threads());
    let mut dxw = vec![0.0f32; s.batch * s.len * h4];
    let per = rows * s.len * h;
    dxw.par_chunks_mut(rows * s.len * h4)
        .enumerate()
        .for_each(|(i, d)| {
            let at = i * per..(i * per + per).min(dhs.len());
            let kc = Kept {
                gates: &k.gates[i * rows * s.len * h4..][..d.len()],
                cells: &k.cells[at.clone()],
            };
            backward_chunk(s, wh, kc, &dhs[at], d, th);
        });
    // dWh = Σ_{b, t ≥ 1} h_{b, t−1}ᵀ · dgates_{b, t}: one product over the whole batch, with the
    // hidden states shifted one step (zero before the first)
    let mut h_prev = vec![0.0f32; hs.len()];
    for (p, q) in h_prev.chunks_mut(s.len * h).zip(hs.chunks(s.len * h)) {
        p[h..].copy_from_slice(&q[..(s.len - 1) * h]);
    }
    let mut dwh = vec![0.0f32; h * h4];
    let (a, d) = (View::transposed(&h_prev, h), View::rows(&dxw, h4));
    matmul(h, h4, s.batch * s.len, &mut dwh, h4, false, a, d, threads());
    (dxw, dwh)
}

/// [`backward`] over one chunk of `m` sequences, from its kept gates and cells (in
/// [`forward_chunk`]'s layout) and `dhs`, into its input projections' gradient `d`.
fn backward_chunk(s: &Seq, wh: &[f32], k: Kept<&[f32]>, dhs: &[f32], d: &mut [f32], th: usize) {
    let (h, h4, len) = (s.hidden, 4 * s.hidden, s.len);
    let m = dhs.len() / (len * h);
    let (hm, zero) = (h * m, vec![0.0f32; h * m]);
    let (mut dh, mut dc, mut dg) = (vec![0.0f32; hm], vec![0.0f32; hm], vec![0.0f32; 4 * hm]);
    let mut dh_out = vec![0.0f32; hm];
    for t in (0..len).rev() {
        // dL/dh_t: from the output, plus (after the last step) from step t + 1's gates
        gather(&mut dh_out, &dhs[t * h..], len * h, h, m);
        dh.iter_mut().zip(&dh_out).for_each(|(a, &b)| *a += b);
        let c_prev = if t > 0 {
            &k.cells[(t - 1) * hm..][..hm]
        } else {
            &zero
        };
        let (gates, cells) = (&k.gates[t * 4 * hm..][..4 * hm], &k.cells[t * hm..][..hm]);
        cell_backward(gates, c_prev, cells, &dh, &mut dc, &mut dg);
        scatter(&mut d[t * h4..], len * h4, &dg, h4, m);
        if t > 0 {
            let dgv = View {
                data: &dg,
                rs: 1,
                cs: m,
            };
            let w = View::transposed(wh, h4);
            matmul_col_major([m, h, h4], (&mut dh, m), false, (dgv, w), th);
        }
    }
}

wide! {
    /// One step of a chunk backward: from the activations `a` (i, f, g, o), the cell states before
    /// and after, `dh` and the cell gradient `dc` carried from the next step (replaced by the one
    /// for the step before), the gradients of the gates' pre-activations into `out`.
    fn cell_backward(
        a: &[f32],
        c_prev: &[f32],
        c: &[f32],
        dh: &[f32],
        dc: &mut [f32],
        out: &mut [f32],
    ) {
        let n = c.len();
        let (oif, ogo) = out.split_at_mut(2 * n);
        let (oi, of) = oif.split_at_mut(n);
        let (og, oo) = ogo.split_at_mut(n);
        let (ai, rest) = a.split_at(n);
        let (af, rest) = rest.split_at(n);
        let (ag, ao) = rest.split_at(n);
        let outs = oi
            .iter_mut()
            .zip(of.iter_mut())
            .zip(og.iter_mut().zip(oo.iter_mut()));
        let acts = ai.iter().zip(af.iter()).zip(ag.iter().zip(ao.iter()));
        let states = c.iter().zip(c_prev).zip(dh.iter().zip(dc.iter_mut()));
        for ((((oi, of), (og, oo)), ((&i, &f), (&g, &o))), ((&c, &cp), (&dh, dc))) in
            outs.zip(acts).zip(states)
        {
            let tc = tanh(c);
            let dct = *dc + dh * o * (1.0 - tc * tc);
            *oi = dct * g * i * (1.0 - i);
            *of = dct * cp * f * (1.0 - f);
            *og = dct * i * (1.0 - g * g);
            *oo = dh * tc * o * (1.0 - o);
            *dc = dct * f;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(n: usize, seed: u64, scale: f32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
            })
            .collect()
    }

    /// `L = Σ w ⊙ hs` for fixed weights, in f64 through the forward pass.
    fn loss(s: &Seq, xw: &[f32], wh: &[f32], w: &[f32]) -> f64 {
        let (hs, _) = forward(s, xw, wh, false);
        hs.iter().zip(w).map(|(&h, &w)| h as f64 * w as f64).sum()
    }

    /// The finite-difference check of the gradients at every `stride`-th entry.
    fn check_gradients(s: Seq, stride: usize) {
        let xw = lcg(s.batch * s.len * 4 * s.hidden, 1, 2.0);
        let wh = lcg(4 * s.hidden * s.hidden, 2, 1.0);
        let w = lcg(s.batch * s.len * s.hidden, 3, 1.0);
        let (hs, kept) = forward(&s, &xw, &wh, true);
        let k = Kept {
            gates: &kept.gates[..],
            cells: &kept.cells[..],
        };
        let (dxw, dwh) = backward(&s, &wh, &hs, k, &w);
        let eps = 1e-2f32;
        let check = |grad: &[f32], which: usize| {
            for k in (0..grad.len()).step_by(stride) {
                let (mut a, mut b) = ((xw.clone(), wh.clone()), (xw.clone(), wh.clone()));
                let (pa, pb) = if which == 0 {
                    (&mut a.0, &mut b.0)
                } else {
                    (&mut a.1, &mut b.1)
                };
                pa[k] += eps;
                pb[k] -= eps;
                let fd = (loss(&s, &a.0, &a.1, &w) - loss(&s, &b.0, &b.1, &w)) / (2.0 * eps as f64);
                assert!(
                    (fd - grad[k] as f64).abs() < 2e-3,
                    "{which} {k}: {fd} vs {}",
                    grad[k]
                );
            }
        };
        check(&dxw, 0);
        check(&dwh, 1);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let s = Seq {
            batch: 3,
            len: 5,
            hidden: 4,
        };
        check_gradients(s, 1);
        // a batch in three chunks
        let s = Seq {
            batch: 70,
            len: 4,
            hidden: 5,
        };
        assert_eq!(s.rows(), 24);
        check_gradients(s, 41);
    }

    #[test]
    fn the_same_bits_at_any_thread_count() {
        let s = Seq {
            batch: 70,
            len: 6,
            hidden: 40,
        };
        let xw = lcg(s.batch * s.len * 4 * s.hidden, 4, 2.0);
        let wh = lcg(4 * s.hidden * s.hidden, 5, 0.5);
        let dhs = lcg(s.batch * s.len * s.hidden, 6, 1.0);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let (hs, kept) = forward(&s, &xw, &wh, true);
                let k = Kept {
                    gates: &kept.gates[..],
                    cells: &kept.cells[..],
                };
                let (dxw, dwh) = backward(&s, &wh, &hs, k, &dhs);
                (hs, dxw, dwh)
            })
        };
        let one = run(1);
        // without keeping the states for the backward pass: the same output
        assert_eq!(forward(&s, &xw, &wh, false).0, one.0);
        assert!(one.2.iter().any(|&v| v != 0.0));
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
    }

    /// The vectorised step ([`wide!`]: AVX-512 or AVX2 on a CPU that has them) gives the bits
    /// of the same equations written out one element at a time.
    #[test]
    fn the_wide_step_is_the_scalar_step_bit_for_bit() {
        let n = 1_000;
        let g0 = lcg(4 * n, 7, 16.0);
        let (c_prev, dh, dc0) = (lcg(n, 8, 4.0), lcg(n, 9, 1.0), lcg(n, 10, 1.0));
        let (mut g, mut c, mut h) = (g0.clone(), vec![0.0; n], vec![0.0; n]);
        cell_forward(&mut g, &c_prev, &mut c, &mut h);
        let (mut dc, mut out) = (dc0.clone(), vec![0.0; 4 * n]);
        cell_backward(&g, &c_prev, &c, &dh, &mut dc, &mut out);
        for j in 0..n {
            let (i, f) = (sigmoid(g0[j]), sigmoid(g0[n + j]));
            let (cand, o) = (tanh(g0[2 * n + j]), sigmoid(g0[3 * n + j]));
            let cn = f * c_prev[j] + i * cand;
            assert_eq!(
                (c[j].to_bits(), h[j].to_bits()),
                (cn.to_bits(), (o * tanh(cn)).to_bits())
            );
            let tc = tanh(cn);
            let dct = dc0[j] + dh[j] * o * (1.0 - tc * tc);
            assert_eq!(out[j].to_bits(), (dct * cand * i * (1.0 - i)).to_bits());
            assert_eq!(
                out[3 * n + j].to_bits(),
                (dh[j] * tc * o * (1.0 - o)).to_bits()
            );
            assert_eq!(dc[j].to_bits(), (dct * f).to_bits());
        }
    }
}
