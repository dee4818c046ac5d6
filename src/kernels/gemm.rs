//! The one place fedrun calls the `gemm` crate: `C (+)= A·B` on row-major or strided `f32`
//! matrices. gemm picks its AVX-512 / AVX2 / SSE kernels at run time (crate feature `x86-v4`).

use gemm::Parallelism;

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
    // (it is a distinct &mut borrow).
    unsafe {
        gemm::gemm(
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
