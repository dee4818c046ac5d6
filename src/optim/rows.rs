//! K clients' parameters as the rows of device tensors (the local steps): each
//! parameter tensor of the K clients as one `[K, n]` tensor, and a factor per row.

use std::ops::Range;

use burn::tensor::{Bool, Device, Tensor, TensorData};

use crate::kernels::capture::in_place;

/// A factor per row of a step's `[K, n]` tensors: one number when all rows share it (a scalar
/// product, as for one client), else a `[K, 1]` column broadcast over the rows.
#[derive(Clone)]
pub enum RowFactor {
    One(f32),
    Rows(Box<Tensor<2>>),
}

impl RowFactor {
    /// The factor whose k-th row is `v[k]`, on `device`.
    pub fn new(v: &[f32], device: &Device) -> RowFactor {
        match v.first() {
            Some(&a) if v.iter().all(|&b| b.to_bits() == a.to_bits()) => RowFactor::One(a),
            _ => {
                let t = Tensor::<1>::from_data(TensorData::new(v.to_vec(), [v.len()]), device);
                RowFactor::Rows(Box::new(t.reshape([v.len(), 1])))
            }
        }
    }

    /// Its buffer, or its one value as a host number ([`super::buffers`]).
    pub fn buffers<'a>(&'a mut self, out: &mut Vec<super::buffers::Buf<'a>>) {
        match self {
            RowFactor::One(a) => out.push(super::buffers::host(f64::from(*a))),
            RowFactor::Rows(t) => out.push(super::buffers::Buf::F2(t)),
        }
    }

    /// Whether every row's factor is `a`.
    pub fn is(&self, a: f32) -> bool {
        matches!(self, RowFactor::One(b) if *b == a)
    }

    /// `t` with each row times its factor.
    pub fn times(&self, t: Tensor<2>) -> Tensor<2> {
        match self {
            RowFactor::One(a) => t * *a,
            RowFactor::Rows(r) => t * (**r).clone(),
        }
    }
}

/// The longest axis [`row_sums`] reduces in one op.
const PIECE: usize = 4096;

/// Each row's sum `[K, 1]` of `t` (`[K, n]`), reduced over pieces of at most 4,096 elements and
/// then over the pieces' sums. No single reduction is long: an f32 sum over millions of
/// elements in one run loses digits (a step's clip norm then differed from an f64 norm
/// enough to move a ResNet-18 update by 1e-4), and burn's `sum_dim` over one long
/// axis came out wrong on the wgpu backend (Mesa's lavapipe: rows of 614,400 summed to less
/// than half their value, while 70,000 were right).
pub fn row_sums(t: Tensor<2>) -> Tensor<2> {
    let [k, n] = t.dims();
    if n <= PIECE {
        return t.sum_dim(1);
    }
    // the largest piece that divides n; zeros pad the rows to whole pieces when it is small
    let c = (1..=PIECE).rev().find(|c| n % c == 0).unwrap_or(1);
    let (t, c) = if c >= PIECE / 16 {
        (t, c)
    } else {
        let pad = n.div_ceil(PIECE) * PIECE - n;
        let zeros = Tensor::<2>::zeros([k, pad], &t.device());
        (Tensor::cat(vec![t, zeros], 1), PIECE)
    };
    let m = t.dims()[1] / c;
    let pieces: Tensor<3> = t.reshape([k, m, c]);
    row_sums(pieces.sum_dim(2).reshape([k, m]))
}

/// K flat vectors `rows` (zeros for a None) on `device` as one `[K, n]` tensor per piece
/// `ranges` (the parameter tensors of a layout), each its own upload (not views of one: every
/// row tensor starts contiguous at its own buffer); no autodiff.
pub fn upload_rows(
    rows: &[Option<&[f32]>],
    ranges: &[Range<usize>],
    device: &Device,
) -> Vec<Tensor<2>> {
    let k = rows.len();
    ranges
        .iter()
        .map(|r| {
            let mut flat = Vec::with_capacity(k * r.len());
            for row in rows {
                match row {
                    Some(v) => flat.extend_from_slice(&v[r.clone()]),
                    None => flat.resize(flat.len() + r.len(), 0.0),
                }
            }
            Tensor::<2>::from_data(TensorData::new(flat, [k, r.len()]), device).inner()
        })
        .collect()
}

/// `old` set to `new` in the rows where `active` (`[K, 1]`) is true, written in place (the same
/// buffer every step, as a captured step needs): a row that does not step keeps its state.
pub(super) fn set_rows(old: &mut Tensor<2>, new: Tensor<2>, active: &Tensor<2, Bool>) {
    let dims = old.dims();
    in_place(old, |o| o.mask_where(active.clone().expand(dims), new));
}
