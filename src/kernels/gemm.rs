//! The one place fedrun calls the `gemm` crate: `C (+)= A·B` on row-major or strided `f32`
//! matrices, with gemm's AVX-512, AVX2 (FMA) or scalar kernels as the SIMD level in use says
//! ([`super::simd::level`]: the CPU's, or the lower one `FEDRUN_SIMD` names).

use gemm::Parallelism;

use super::simd::{Level, level};

/// A read-only strided matrix view: element (i, j) is at `ptr + i·rs + j·cs`.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub data: &'a [f32],
    pub rs: usize,
    pub cs: usize,
}

impl<'a> View<'a> {
    /// A row-major matrix with `cols` columns.
    pub fn rows(data: &'a [f32], cols: usize) -> Self {
        View {
            data,
            rs: cols,
            cs: 1,
        }
    }
    /// The transpose of a row-major matrix with `cols` columns.
    pub fn transposed(data: &'a [f32], cols: usize) -> Self {
        View {
            data,
            rs: 1,
            cs: cols,
        }
    }
    fn fits(&self, r: usize, c: usize) -> bool {
        r == 0 || c == 0 || (r - 1) * self.rs + (c - 1) * self.cs < self.data.len()
    }
}

/// Below this many multiply-adds a product runs on one thread.
const PARALLEL_MIN: usize = 1 << 21;

/// `dst[m×n] = (accumulate ? dst : 0) + a[m×k]·b[k×n]`, with `dst` row-major of row stride
/// `ldd`. The result does not depend on `threads` (gemm splits the output, never the sum).
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    ldd: usize,
    accumulate: bool,
    a: View,
    b: View,
    threads: usize,
) {
    product([m, n, k], (dst, ldd, 1), accumulate, a, b, threads);
}

/// [`matmul`] into a column-major `dst` (element (i, j) at `j·ldd + i`). gemm's kernels run
/// along the destination's columns, so with few rows in `a` and a row-major `b` this form reads
/// `b` in place, where [`matmul`] would repack it on every call (an LSTM's recurrent weight,
/// once per character).
pub fn matmul_col_major(
    mnk: [usize; 3],
    (dst, ldd): (&mut [f32], usize),
    accumulate: bool,
    (a, b): (View, View),
    threads: usize,
) {
    product(mnk, (dst, 1, ldd), accumulate, a, b, threads);
}

/// `dst (+)= a·b` with `dst`'s element (i, j) at `i·rs + j·cs`.
fn product(
    [m, n, k]: [usize; 3],
    (dst, rs, cs): (&mut [f32], usize, usize),
    accumulate: bool,
    a: View,
    b: View,
    threads: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        a.fits(m, k) && b.fits(k, n) && (m - 1) * rs + (n - 1) * cs < dst.len(),
        "matmul: operands out of bounds"
    );
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    dst[i * rs + j * cs] = 0.0;
                }
            }
        }
        return;
    }
    let par = if threads > 1 && m * n * k >= PARALLEL_MIN {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: as `in_pieces` asks: bounds checked above, the level in use is the CPU's or lower
    unsafe {
        in_pieces(
            (product_fn(), level()),
            [m, n, k],
            (dst, rs, cs),
            accumulate,
            (a, b),
            par,
        )
    }
}

/// `f`, the product of `level`, called once for each piece of the sum ([`depth_chunks`]), the
/// pieces after the first added to `dst`.
///
/// # Safety
/// The operands hold an `m×k` and a `k×n` matrix and `dst` an `m×n` one at their strides, `dst`
/// aliases neither, and `level` is at most the CPU's.
unsafe fn in_pieces(
    (f, level): (GemmFn, Level),
    [m, n, k]: [usize; 3],
    (dst, rs, cs): (&mut [f32], usize, usize),
    accumulate: bool,
    (a, b): (View, View),
    par: Parallelism,
) {
    let chunks = depth_chunks([m, n, k], (a, b), level);
    let width = k.div_ceil(chunks);
    for c in 0..chunks {
        let (k0, k1) = (c * width, ((c + 1) * width).min(k));
        // SAFETY: the caller's; a piece reads columns k0..k1 of a and rows k0..k1 of b
        unsafe {
            f(
                m,
                n,
                k1 - k0,
                dst.as_mut_ptr(),
                cs as isize,
                rs as isize,
                accumulate || c > 0,
                a.data.as_ptr().add(k0 * a.cs),
                a.cs as isize,
                a.rs as isize,
                b.data.as_ptr().add(k0 * b.rs),
                b.cs as isize,
                b.rs as isize,
                1.0,
                1.0,
                false,
                false,
                false,
                par,
            );
        }
    }
}

/// The depth of fedrun's pieces of a sum: the block gemm picks at the AVX2 and AVX-512 levels on
/// a CPU whose L1 cache is 32 KiB and 8-way (AMD Zen 1–4, most Intel cores), and the least it
/// picks on any CPU.
const DEPTH_BLOCK: usize = 512;

/// How many equal pieces of at most [`DEPTH_BLOCK`] the sum over `k` is cut into before gemm sees
/// it, so that every output sums in the same order on every CPU at a level.
///
/// gemm sums each output along `k` in blocks and adds the blocks' sums to the destination one
/// after another. On its blocked path (a product with more than 64 rows or columns that its
/// horizontal and vector kernels do not take) the block comes from the L1 cache's size and ways:
/// `ceil(k / b)` equal blocks with `b = max(512, …)`. `b` is 512 at AVX2 and AVX-512 on a 32 KiB
/// 8-way L1, but 1,024 at AVX2 on a 48 KiB 12-way one (AMD Zen 5, recent Intel cores), and 1,024
/// or 2,048 at the SSE2 baseline, where the sums then round otherwise. Cut here into the pieces
/// a 512 block gives, each piece is one gemm block on every CPU. Its other paths block by fixed
/// sizes (512 for products of at most 64 by 64, 1,024 on the horizontal kernels) and are left
/// whole; a vector product (one row or column) is left whole too.
///
/// Where this CPU's gemm already blocks by those pieces (at AVX-512 on AMD Zen 4 and 5, say), the
/// product stays one call.
fn depth_chunks([m, n, k]: [usize; 3], (a, b): (View, View), level: Level) -> usize {
    if k <= DEPTH_BLOCK {
        return 1;
    }
    let horizontal = level != Level::Sse2 && a.cs == 1 && b.rs == 1 && m * n <= 16 * 16;
    let blocked = (m > 64 || n > 64) && m > 1 && n > 1 && !horizontal;
    if !blocked {
        return 1;
    }
    let pieces = k.div_ceil(DEPTH_BLOCK);
    match tile(level) {
        Some((mr, nr))
            if gemm_common::cache::kernel_params(m, n, k, mr, nr, 4).kc == k.div_ceil(pieces) =>
        {
            1
        }
        _ => pieces,
    }
}

/// The rows and columns of `level`'s microkernel for `f32`, which gemm's block sizes are
/// computed from (None off x86-64).
fn tile(level: Level) -> Option<(usize, usize)> {
    #[cfg(target_arch = "x86_64")]
    {
        use gemm_f32::microkernel::{avx512f, fma, scalar};
        Some(match level {
            Level::Avx512 => (avx512f::f32::MR_DIV_N * 16, avx512f::f32::NR),
            Level::Avx2 => (fma::f32::MR_DIV_N * 8, fma::f32::NR),
            Level::Sse2 => (scalar::f32::MR_DIV_N, scalar::f32::NR),
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        None
    }
}

/// gemm's entry point for `f32` (dst, dst_cs, dst_rs, read_dst, lhs, lhs_cs, lhs_rs, rhs,
/// rhs_cs, rhs_rs, alpha, beta, three conjugation flags, parallelism), at one SIMD level.
type GemmFn = unsafe fn(
    usize,
    usize,
    usize,
    *mut f32,
    isize,
    isize,
    bool,
    *const f32,
    isize,
    isize,
    *const f32,
    isize,
    isize,
    f32,
    f32,
    bool,
    bool,
    bool,
    Parallelism,
);

/// gemm's own `gemm_basic` of one level, as its `gemm_def!` instantiates it (gemm-f32 keeps
/// those modules private; its microkernel tables and gemm-common's driver are public): the
/// same driver, blocking and kernels that `gemm::gemm` picks on a CPU whose widest level is
/// this one.
#[cfg(target_arch = "x86_64")]
macro_rules! gemm_basic_at {
    ($name:ident, $simd:ty, $ukr:ident, $lanes:expr) => {
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            m: usize,
            n: usize,
            k: usize,
            dst: *mut f32,
            dst_cs: isize,
            dst_rs: isize,
            read_dst: bool,
            lhs: *const f32,
            lhs_cs: isize,
            lhs_rs: isize,
            rhs: *const f32,
            rhs_cs: isize,
            rhs_rs: isize,
            alpha: f32,
            beta: f32,
            conj_dst: bool,
            conj_lhs: bool,
            conj_rhs: bool,
            par: Parallelism,
        ) {
            use gemm_common::simd::MixedSimd;
            use gemm_f32::microkernel::$ukr::f32 as u;
            const N: usize = $lanes;
            // gemm::gemm's own first move: a destination along its rows is computed as the
            // transposed product (fedrun's strides are never negative, its other case)
            let (m, n, dst_cs, dst_rs, lhs, lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs) =
                if dst_cs.abs() < dst_rs.abs() {
                    (
                        n, m, dst_rs, dst_cs, rhs, rhs_rs, rhs_cs, lhs, lhs_rs, lhs_cs,
                    )
                } else {
                    (
                        m, n, dst_cs, dst_rs, lhs, lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs,
                    )
                };
            // SAFETY: the caller's (gemm::gemm's contract); the level is the CPU's
            unsafe {
                gemm_common::gemm::gemm_basic_generic::<
                    _,
                    f32,
                    N,
                    { u::MR_DIV_N * N },
                    { u::NR },
                    { u::MR_DIV_N },
                    { u::H_M },
                    { u::H_N },
                >(
                    <$simd as MixedSimd<f32, f32, f32, f32>>::try_new().unwrap(),
                    m,
                    n,
                    k,
                    dst,
                    dst_cs,
                    dst_rs,
                    read_dst,
                    lhs,
                    lhs_cs,
                    lhs_rs,
                    rhs,
                    rhs_cs,
                    rhs_rs,
                    alpha,
                    beta,
                    conj_dst,
                    conj_lhs,
                    conj_rhs,
                    |a, b, c| a * b + c,
                    &u::UKR,
                    &u::H_UKR,
                    false,
                    par,
                )
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
gemm_basic_at!(gemm_avx512, gemm_common::simd::V4, avx512f, 16);
#[cfg(target_arch = "x86_64")]
gemm_basic_at!(gemm_avx2, gemm_common::simd::V3, fma, 8);
#[cfg(target_arch = "x86_64")]
gemm_basic_at!(gemm_sse2, gemm_common::simd::Scalar, scalar, 1);

/// The product at `level`: at the CPU's own level gemm's own entry point (which picks that
/// level's kernels itself), below it gemm's driver with the lower level's kernels
/// ([`instantiated`]). The driver instantiated here gives `gemm::gemm`'s bits (tested), but at
/// the AVX-512 level it ran a ResNet-18 step 1.9x slower than `gemm::gemm` on an AVX-512 EPYC
/// (cause not found), so only a capped level, as the tests run it, takes it.
fn at_level(level: Level) -> GemmFn {
    if level == super::simd::detected() {
        return gemm::gemm;
    }
    instantiated(level)
}

/// The product of the level in use, chosen once.
fn product_fn() -> GemmFn {
    static F: std::sync::OnceLock<GemmFn> = std::sync::OnceLock::new();
    *F.get_or_init(|| at_level(level()))
}

/// gemm's driver with `level`'s kernels.
fn instantiated(level: Level) -> GemmFn {
    #[cfg(target_arch = "x86_64")]
    {
        match level {
            Level::Avx512 => gemm_avx512,
            Level::Avx2 => gemm_avx2,
            Level::Sse2 => gemm_sse2,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        gemm::gemm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::simd::detected;

    /// `m×k` and `k×n` operands of small integers' ratios.
    fn operands(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
        let f = |i: usize, s: usize| ((i * s % 97) as f32 - 48.0) / 37.0;
        (
            (0..m * k).map(|i| f(i, 31)).collect(),
            (0..k * n).map(|i| f(i, 17)).collect(),
        )
    }

    fn product_at(f: GemmFn, [m, n, k]: [usize; 3], a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        // SAFETY: row-major operands of these sizes, a level at most the CPU's (callers check)
        unsafe {
            f(
                m,
                n,
                k,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                1.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            )
        };
        c
    }

    /// Every level the CPU has computes the product (to rounding); gemm's driver as
    /// instantiated here gives `gemm::gemm`'s own bits at the CPU's level (so a capped level
    /// runs gemm's algorithm), over shapes that take its several paths.
    #[test]
    fn each_level_is_the_product_and_gemms_own_at_the_cpus_level() {
        for mnk in [
            [37, 29, 700],
            [3, 5, 9],
            [1, 40, 33],
            [130, 70, 1300],
            [16, 16, 2],
        ] {
            let [m, n, k] = mnk;
            let (a, b) = operands(m, n, k);
            let naive: Vec<f64> = (0..m * n)
                .map(|ij| {
                    let (i, j) = (ij / n, ij % n);
                    (0..k)
                        .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                        .sum()
                })
                .collect();
            for level in [Level::Sse2, Level::Avx2, Level::Avx512] {
                if level > detected() {
                    continue;
                }
                let c = product_at(instantiated(level), mnk, &a, &b);
                for (x, y) in c.iter().zip(&naive) {
                    assert!(
                        (f64::from(*x) - y).abs() < 1e-3,
                        "{level:?}: {x} against {y}"
                    );
                }
            }
            let own = product_at(instantiated(detected()), mnk, &a, &b);
            let theirs = product_at(gemm::gemm, mnk, &a, &b);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&own), bits(&theirs), "{mnk:?}: the driver is gemm's");
        }
    }

    /// What each level's microkernel computes for one output: a chain of multiply-adds along
    /// the sum, from 0, fused above the baseline, in `width`-long blocks (the last shorter), each
    /// block's sum added to the output.
    fn blocked_reference(
        level: Level,
        a: &[f32],
        b: &[f32],
        [m, n, k]: [usize; 3],
        width: usize,
    ) -> Vec<f32> {
        let fma = |x: f32, y: f32, acc: f32| match level {
            Level::Sse2 => x * y + acc,
            _ => x.mul_add(y, acc),
        };
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                for (blk, p0) in (0..k).step_by(width).enumerate() {
                    let acc = (p0..(p0 + width).min(k))
                        .fold(0f32, |s, p| fma(a[i * k + p], b[p * n + j], s));
                    c[i * n + j] = if blk == 0 { acc } else { c[i * n + j] + acc };
                }
            }
        }
        c
    }

    /// At every level the CPU has, a product sums each output in the blocks a 32 KiB 8-way L1
    /// cache gives gemm, whatever this CPU's cache: on the blocked path `ceil(k/512)` equal
    /// pieces (gemm picks 1,024 at the AVX2 level on a 48 KiB 12-way L1, as on an AMD EPYC of
    /// family 26, where this fails without the pieces), on the small-product path fixed blocks
    /// of 512 (gemm's own).
    #[test]
    fn every_level_sums_in_the_same_blocks_on_every_cpu() {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (mnk, width) in [
            ([130, 70, 1300], 434),
            ([70, 130, 1030], 344),
            ([200, 3, 2000], 500),
            ([37, 29, 700], 512),
            ([30, 60, 1500], 512),
        ] {
            let [m, n, k] = mnk;
            let (a, b) = operands(m, n, k);
            for level in [Level::Sse2, Level::Avx2, Level::Avx512] {
                if level > detected() {
                    continue;
                }
                let mut c = vec![f32::NAN; m * n];
                let views = (View::rows(&a, k), View::rows(&b, n));
                // SAFETY: row-major operands of these sizes, a level at most the CPU's
                unsafe {
                    in_pieces(
                        (instantiated(level), level),
                        mnk,
                        (&mut c, n, 1),
                        false,
                        views,
                        Parallelism::None,
                    );
                }
                let want = blocked_reference(level, &a, &b, mnk, width);
                assert_eq!(bits(&c), bits(&want), "{level:?} {mnk:?}");
            }
        }
    }
}
