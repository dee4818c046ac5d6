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
    // SAFETY: the bounds of every operand were checked above; dst does not alias a or b
    // (it is a distinct &mut borrow); the level's instructions are the CPU's (level() never
    // exceeds what it detected).
    unsafe {
        product_fn()(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            cs as isize,
            rs as isize,
            accumulate,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
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
}
