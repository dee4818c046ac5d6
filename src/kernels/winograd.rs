//! Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions with padding 1 on even-sized maps:
//! 16 multiplications per 2×2 output tile and channel pair instead of 36. The input is copied
//! into the zero-padded channels-last buffer of the channels-last strategy, each 4×4 tile is
//! transformed (`Bᵀ d B`), the 16 transformed positions are 16 gemms against the transformed
//! weight (`G g Gᵀ`), and each result tile is transformed back (`Aᵀ m A`). The input gradient
//! is the same convolution of the output gradient with the kernel flipped and its channels
//! swapped, and the weight gradient is formed in the transform domain (`Vᵀ·(A dY Aᵀ)` per
//! position, 16 gemms) and transformed back (`Gᵀ dU G`). Results differ from the direct sum by float rounding only (tested against burn's
//! op), and do not depend on the thread count.

use super::conv_nhwc::to_padded_nhwc;
use super::gemm::{View, matmul};
use super::geom::Geom;
use super::scratch::{
    for_chunks, over_chunks, sum_over_chunks, threads, with_weights, with_workspace,
};

/// Whether the convolution `g` runs here: 3×3, stride 1, padding 1, even maps of at least 4×4
/// (ResNet-18's last stage included, since the weight transforms run on all threads).
pub fn applies(g: &Geom) -> bool {
    (g.kh, g.kw, g.sh, g.sw, g.ph, g.pw) == (3, 3, 1, 1, 1, 1)
        && g.h * g.w >= 16
        && g.h.is_multiple_of(2)
        && g.w.is_multiple_of(2)
        && g.cin >= 16
        && g.cout >= 16
}

/// `G k Gᵀ` (4×4, row-major) of one 3×3 kernel `k(i, j)`.
#[allow(clippy::needless_range_loop)]
fn kernel_transform(k: impl Fn(usize, usize) -> f32) -> [f32; 16] {
    // t = G k (4×3)
    let mut t = [[0f32; 3]; 4];
    for j in 0..3 {
        let (a, b, d) = (k(0, j), k(1, j), k(2, j));
        t[0][j] = a;
        t[1][j] = 0.5 * (a + b + d);
        t[2][j] = 0.5 * (a - b + d);
        t[3][j] = d;
    }
    // U = t Gᵀ (4×4)
    let mut u = [0f32; 16];
    for (r, row) in t.iter().enumerate() {
        let (a, b, d) = (row[0], row[1], row[2]);
        u[4 * r..4 * r + 4].copy_from_slice(&[a, 0.5 * (a + b + d), 0.5 * (a - b + d), d]);
    }
    u
}

/// `u[ξ][c][co] = (G w[co][c] Gᵀ)[ξ]`, ξ = 4·row + column of the 4×4 transform. Built on all
/// threads, one input channel per task (`[c][ξ][co]` in `tmp`), then moved to `u`'s order one
/// ξ per task: each value is computed by the same arithmetic on any thread.
fn weight_transform(g: &Geom, w: &[f32], flip: bool, u: &mut [f32], tmp: &mut [f32]) {
    let (cin, cout) = (g.cin, g.cout);
    for_chunks(
        threads(),
        &mut tmp[..16 * cin * cout],
        16 * cout,
        |c, out| {
            for co in 0..cout {
                // the kernel as this convolution sees it: for the input gradient, w is
                // [cin', cout', 3, 3] of the forward layer, flipped and with channels swapped
                let tile = kernel_transform(|i, j| {
                    if flip {
                        w[((c * cout + co) * 3 + (2 - i)) * 3 + (2 - j)]
                    } else {
                        w[((co * cin + c) * 3 + i) * 3 + j]
                    }
                });
                for (xi, &x) in tile.iter().enumerate() {
                    out[xi * cout + co] = x;
                }
            }
        },
    );
    let tmp = &*tmp;
    for_chunks(
        threads(),
        &mut u[..16 * cin * cout],
        cin * cout,
        |xi, block| {
            for (c, row) in block.chunks_mut(cout).enumerate() {
                row.copy_from_slice(&tmp[(c * 16 + xi) * cout..][..cout]);
            }
        },
    );
}

/// `v[p][ξ][c] = (Bᵀ d B)[ξ]` for every tile `p = (j, ty, tx)` of the chunk.
fn input_transform(g: &Geom, xp: &[f32], nb: usize, v: &mut [f32], th: usize) {
    let (hp, wp, cin) = (g.h + 2, g.w + 2, g.cin);
    let (tyn, txn) = (g.h / 2, g.w / 2);
    for_chunks(
        th,
        &mut v[..nb * tyn * txn * 16 * cin],
        16 * cin,
        |p, out| {
            let (j, t) = (p / (tyn * txn), p % (tyn * txn));
            let (y0, x0) = (2 * (t / txn), 2 * (t % txn));
            let at = |r: usize, s: usize| &xp[((j * hp + y0 + r) * wp + x0 + s) * cin..][..cin];
            let d: [[&[f32]; 4]; 4] = std::array::from_fn(|r| std::array::from_fn(|s| at(r, s)));
            let (o, rest) = out.split_at_mut(4 * cin);
            let (o1, rest) = rest.split_at_mut(4 * cin);
            let (o2, o3) = rest.split_at_mut(4 * cin);
            for c in 0..cin {
                // t = Bᵀ d, row by row
                let mut t = [[0f32; 4]; 4];
                for s in 0..4 {
                    let (d0, d1, d2, d3) = (d[0][s][c], d[1][s][c], d[2][s][c], d[3][s][c]);
                    t[0][s] = d0 - d2;
                    t[1][s] = d1 + d2;
                    t[2][s] = d2 - d1;
                    t[3][s] = d1 - d3;
                }
                // V = t B
                for (r, dst) in [&mut *o, &mut *o1, &mut *o2, &mut *o3]
                    .into_iter()
                    .enumerate()
                {
                    let [a, b, e, f] = t[r];
                    dst[c] = a - e;
                    dst[cin + c] = b + e;
                    dst[2 * cin + c] = e - b;
                    dst[3 * cin + c] = b - f;
                }
            }
        },
    );
}

/// `yt[j][oy][ox][co]` from the transformed products `m[p][ξ][co]`: `Aᵀ m A` per tile.
fn output_transform(g: &Geom, m: &[f32], nb: usize, yt: &mut [f32], th: usize) {
    let cout = g.cout;
    let (tyn, txn) = (g.h / 2, g.w / 2);
    // one output row pair of one image per chunk: rows 2ty, 2ty + 1
    for_chunks(
        th,
        &mut yt[..nb * g.h * g.w * cout],
        2 * g.w * cout,
        |rp, out| {
            let (j, ty) = (rp / tyn, rp % tyn);
            let (top, bottom) = out.split_at_mut(g.w * cout);
            for tx in 0..txn {
                let p = (j * tyn + ty) * txn + tx;
                let mm = &m[p * 16 * cout..(p + 1) * 16 * cout];
                let (y00, y01) = top[2 * tx * cout..(2 * tx + 2) * cout].split_at_mut(cout);
                let (y10, y11) = bottom[2 * tx * cout..(2 * tx + 2) * cout].split_at_mut(cout);
                for co in 0..cout {
                    let q = |r: usize, s: usize| mm[(4 * r + s) * cout + co];
                    let mut t0 = [0f32; 4];
                    let mut t1 = [0f32; 4];
                    for s in 0..4 {
                        t0[s] = q(0, s) + q(1, s) + q(2, s);
                        t1[s] = q(1, s) - q(2, s) - q(3, s);
                    }
                    y00[co] = t0[0] + t0[1] + t0[2];
                    y01[co] = t0[1] - t0[2] - t0[3];
                    y10[co] = t1[0] + t1[1] + t1[2];
                    y11[co] = t1[1] - t1[2] - t1[3];
                }
            }
        },
    );
}

/// `y = conv(x, w) + b` for a convolution that [`applies`]; with `flip`, `w` is the weight of the
/// forward layer whose input gradient this is (`g` then has its channels swapped).
pub fn forward(g: &Geom, x: &[f32], w: &[f32], b: Option<&[f32]>, flip: bool, y: &mut [f32]) {
    let (cin, cout, hw) = (g.cin, g.cout, g.h * g.w);
    let nb = g.chunk();
    with_weights(32 * cin * cout, |buf| {
        let (u, tmp) = buf.split_at_mut(16 * cin * cout);
        weight_transform(g, w, flip, u, tmp);
        let u = &*u;
        over_chunks(y, nb * cout * hw, |c, y, th| {
            let i0 = c * nb;
            let nb = y.len() / (cout * hw);
            let tiles = nb * hw / 4;
            let padded = nb * (g.h + 2) * (g.w + 2) * cin;
            let sizes = [
                padded.max(nb * hw * cout),
                tiles * 16 * cin,
                tiles * 16 * cout,
            ];
            with_workspace(sizes, |[xp, v, m]| {
                to_padded_nhwc(g, x, i0, nb, xp, th);
                input_transform(g, xp, nb, v, th);
                for xi in 0..16 {
                    let a = View {
                        data: &v[xi * cin..],
                        rs: 16 * cin,
                        cs: 1,
                    };
                    let b = View::rows(&u[xi * cin * cout..(xi + 1) * cin * cout], cout);
                    matmul(
                        tiles,
                        cout,
                        cin,
                        &mut m[xi * cout..],
                        16 * cout,
                        false,
                        a,
                        b,
                        th,
                    );
                }
                output_transform(g, m, nb, xp, th);
                let yt = &*xp;
                for_chunks(th, y, hw, |r, dst| {
                    let (j, co) = (r / cout, r % cout);
                    let src = &yt[j * hw * cout + co..];
                    let bias = b.map_or(0.0, |b| b[co]);
                    for (q, d) in dst.iter_mut().enumerate() {
                        *d = src[q * cout] + bias;
                    }
                });
            });
        });
    });
}

/// `dm[p][ξ][co] = (A dY Aᵀ)[ξ]` for every tile of the chunk: the gradient of the transformed
/// products, from the output gradient (NCHW, images `i0 ..`).
fn output_grad_transform(g: &Geom, dy: &[f32], i0: usize, nb: usize, dm: &mut [f32], th: usize) {
    let (cout, hw) = (g.cout, g.h * g.w);
    let (tyn, txn) = (g.h / 2, g.w / 2);
    for_chunks(
        th,
        &mut dm[..nb * tyn * txn * 16 * cout],
        16 * cout,
        |p, out| {
            let (j, t) = (p / (tyn * txn), p % (tyn * txn));
            let (y0, x0) = (2 * (t / txn), 2 * (t % txn));
            let base = &dy[(i0 + j) * cout * hw..(i0 + j + 1) * cout * hw];
            for co in 0..cout {
                let plane = &base[co * hw..];
                let (a, b) = (plane[y0 * g.w + x0], plane[y0 * g.w + x0 + 1]);
                let (c, d) = (plane[(y0 + 1) * g.w + x0], plane[(y0 + 1) * g.w + x0 + 1]);
                // r = A dY (rows of two), then each row (u, v) → (u, u + v, u − v, −v)
                let rows = [[a, b], [a + c, b + d], [a - c, b - d], [-c, -d]];
                for (r, [u, v]) in rows.into_iter().enumerate() {
                    let o = &mut out[4 * r * cout..];
                    o[co] = u;
                    o[cout + co] = u + v;
                    o[2 * cout + co] = u - v;
                    o[3 * cout + co] = -v;
                }
            }
        },
    );
}

/// `dw[co][c][i][j] = (Gᵀ du[·][c][co] G)[i][j]` from the transform-domain gradient.
fn weight_grad_transform(g: &Geom, du: &[f32], dw: &mut [f32]) {
    let (cin, cout) = (g.cin, g.cout);
    // Gᵀ rows: (1, ½, ½, 0), (0, ½, −½, 0), (0, ½, ½, 1)
    const GT: [[f32; 4]; 3] = [
        [1.0, 0.5, 0.5, 0.0],
        [0.0, 0.5, -0.5, 0.0],
        [0.0, 0.5, 0.5, 1.0],
    ];
    // `CO_BLOCK` output channels per task (their `cin·9` weights each are contiguous), input
    // channel by input channel, so that each of the 16 rows of `du` read for a `c` is a run of
    // `CO_BLOCK` neighbours rather than one value a cache line (one channel per task read all
    // of `du`, megabytes, a value at a time)
    const CO_BLOCK: usize = 16;
    for_chunks(
        threads(),
        &mut dw[..cout * cin * 9],
        CO_BLOCK * cin * 9,
        |b, out| {
            for c in 0..cin {
                for (k, dwk) in out.chunks_mut(cin * 9).enumerate() {
                    let co = b * CO_BLOCK + k;
                    let q = |r: usize, s: usize| du[((4 * r + s) * cin + c) * cout + co];
                    for (i, gi) in GT.iter().enumerate() {
                        // row i of Gᵀ du (4 values)
                        let t: [f32; 4] = std::array::from_fn(|s| {
                            gi[0] * q(0, s) + gi[1] * q(1, s) + gi[2] * q(2, s) + gi[3] * q(3, s)
                        });
                        for (j, gj) in GT.iter().enumerate() {
                            dwk[(c * 3 + i) * 3 + j] =
                                gj[0] * t[0] + gj[1] * t[1] + gj[2] * t[2] + gj[3] * t[3];
                        }
                    }
                }
            }
        },
    );
}

/// Writes the transform-domain weight gradient of images `i0 .. i0 + nb` into
/// `du[ξ][c][co]`.
fn weight_grad_chunk(
    g: &Geom,
    x: &[f32],
    dy: &[f32],
    i0: usize,
    nb: usize,
    du: &mut [f32],
    th: usize,
) {
    let (cin, cout, hw) = (g.cin, g.cout, g.h * g.w);
    let tiles = nb * hw / 4;
    let sizes = [
        nb * (g.h + 2) * (g.w + 2) * cin,
        tiles * 16 * cin,
        tiles * 16 * cout,
    ];
    with_workspace(sizes, |[xp, v, dm]| {
        to_padded_nhwc(g, x, i0, nb, xp, th);
        input_transform(g, xp, nb, v, th);
        output_grad_transform(g, dy, i0, nb, dm, th);
        for xi in 0..16 {
            // du[ξ] = V[ξ]ᵀ dM[ξ]: (c, p) · (p, co)
            let a = View {
                data: &v[xi * cin..],
                rs: 1,
                cs: 16 * cin,
            };
            let b = View {
                data: &dm[xi * cout..],
                rs: 16 * cout,
                cs: 1,
            };
            let dst = &mut du[xi * cin * cout..(xi + 1) * cin * cout];
            matmul(cin, cout, tiles, dst, cout, false, a, b, th);
        }
    });
}

/// `dL/dw` for a convolution that [`applies`]: the chunks' transform-domain gradients summed
/// in chunk order, then transformed back.
pub fn weight_grad(g: &Geom, x: &[f32], dy: &[f32], dw: &mut [f32]) {
    let nb = g.chunk();
    with_weights(16 * g.cin * g.cout, |du| {
        sum_over_chunks(g.n.div_ceil(nb), du, |c, part, th| {
            weight_grad_chunk(g, x, dy, c * nb, nb.min(g.n - c * nb), part, th);
        });
        weight_grad_transform(g, du, dw);
    });
}
