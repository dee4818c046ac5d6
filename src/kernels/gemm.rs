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
        at_level(level())(
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

/// The product at `level`.
fn at_level(level: Level) -> GemmFn {
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

    fn product_at(level: Level, [m, n, k]: [usize; 3], a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        // SAFETY: row-major operands of these sizes, level at most the CPU's (callers check)
        unsafe {
            at_level(level)(
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

    /// Every level the CPU has computes the product (to rounding), and the CPU's own level is
    /// `gemm::gemm`'s own choice, bit for bit.
    #[test]
    fn each_level_is_the_product_and_the_cpus_is_gemms_own() {
        let mnk = [37, 29, 700];
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
            let c = product_at(level, mnk, &a, &b);
            for (x, y) in c.iter().zip(&naive) {
                assert!(
                    (f64::from(*x) - y).abs() < 1e-3,
                    "{level:?}: {x} against {y}"
                );
            }
        }
        let mut own = vec![0f32; m * n];
        matmul(
            m,
            n,
            k,
            &mut own,
            n,
            false,
            View::rows(&a, k),
            View::rows(&b, n),
            1,
        );
        let mut theirs = vec![0f32; m * n];
        // SAFETY: as above
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                theirs.as_mut_ptr(),
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
        if crate::kernels::simd::level() == detected() {
            assert_eq!(own, theirs, "the CPU's level is gemm's choice");
        }
    }
}
