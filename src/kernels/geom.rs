//! The geometry of a convolution, shared by its strategies (`conv_nchw.rs`, `conv_nhwc.rs`,
//! `winograd.rs`) and the choice among them (`conv.rs`): sizes, chunks of images, and the
//! output gradient of a chunk in the gemm's layout.

use super::gemm::View;
use super::scratch::{copy_row, for_chunks};

/// Minimum gemm width (output positions) a chunk aims for.
const TARGET_COLS: usize = 512;

/// Geometry of one convolution: input `[n, cin, h, w]`, weight `[cout, cin, kh, kw]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    pub n: usize,
    pub cin: usize,
    pub h: usize,
    pub w: usize,
    pub cout: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
}

impl Geom {
    pub fn oh(&self) -> usize {
        (self.h + 2 * self.ph - self.kh) / self.sh + 1
    }
    pub fn ow(&self) -> usize {
        (self.w + 2 * self.pw - self.kw) / self.sw + 1
    }
    pub(super) fn ohw(&self) -> usize {
        self.oh() * self.ow()
    }
    /// Length of the reduction: `cin·kh·kw`.
    pub(super) fn k(&self) -> usize {
        self.cin * self.kh * self.kw
    }
    pub(super) fn hp(&self) -> usize {
        self.h + 2 * self.ph
    }
    pub(super) fn wp(&self) -> usize {
        self.w + 2 * self.pw
    }
    /// Images per chunk.
    pub(super) fn chunk(&self) -> usize {
        TARGET_COLS.div_ceil(self.ohw()).clamp(1, self.n.max(1))
    }
    /// The convolution that maps the output gradient to the input gradient, for stride 1 and
    /// `2p = k − 1` (same-size maps): channels swapped, the kernel flipped.
    pub(super) fn transposed(&self) -> Geom {
        Geom {
            cin: self.cout,
            cout: self.cin,
            h: self.oh(),
            w: self.ow(),
            ..*self
        }
    }
    /// Multiply-adds of the forward pass (direct convolution count).
    pub fn macs(&self) -> usize {
        self.n * self.cout * self.ohw() * self.k()
    }
}

/// Copies `dy` of images `i0 .. i0 + nb` into `[cout, nb·ohw]` (the gemm layout of a chunk).
fn gather_dy(g: &Geom, dy: &[f32], i0: usize, nb: usize, out: &mut [f32], th: usize) {
    let ohw = g.ohw();
    let cols = nb * ohw;
    for_chunks(th, &mut out[..g.cout * cols], cols, |co, row| {
        for j in 0..nb {
            copy_row(
                &mut row[j * ohw..(j + 1) * ohw],
                &dy[((i0 + j) * g.cout + co) * ohw..],
            );
        }
    });
}

/// The output gradient of a chunk as a `[cout, nb·ohw]` view: `dy` itself for one image,
/// else gathered into `tmp`.
pub(super) fn dy_chunk<'a>(
    g: &Geom,
    dy: &'a [f32],
    i0: usize,
    nb: usize,
    tmp: &'a mut [f32],
    th: usize,
) -> View<'a> {
    let ohw = g.ohw();
    if tmp.is_empty() {
        View::rows(&dy[i0 * g.cout * ohw..(i0 + 1) * g.cout * ohw], ohw)
    } else {
        gather_dy(g, dy, i0, nb, tmp, th);
        View::rows(&tmp[..g.cout * nb * ohw], nb * ohw)
    }
}
