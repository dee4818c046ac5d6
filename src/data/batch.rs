//! A batch: rows of a split gathered (and augmented) into one host buffer, then one upload; or,
//! on a GPU backend with the split resident there, gathered on the device (`device_batch.rs`).

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::augment;
use super::fed::{Augment, Features, Input, Split};
use super::rotate_crop_flip::RotateCropFlip;
use crate::rng::Rng;

/// Gather rows `idx` of `split` into a batch on `device`, augmenting with `rng` when asked.
pub fn batch(
    split: &Split,
    idx: &[usize],
    aug: Augment,
    rng: Option<&mut Rng>,
    device: &Device,
) -> (Input, Tensor<1, Int>) {
    let mut rng = rng;
    if let Some(b) = super::device_batch::batch(split, idx, aug, rng.as_deref_mut(), device) {
        return b;
    }
    let b = idx.len();
    let y: Vec<i64> = idx.iter().map(|&i| split.y[i] as i64).collect();
    let y = Tensor::<1, Int>::from_data(TensorData::new(y, [b]), device);
    let x = match &split.x {
        Features::Images { c, h, w, data } => {
            images(idx, (*c, *h, *w), &Rows::Floats(data), aug, rng, device)
        }
        Features::Pixels {
            c,
            h,
            w,
            data,
            mean,
            std,
        } => {
            let rows = Rows::Bytes { data, mean, std };
            images(idx, (*c, *h, *w), &rows, aug, rng, device)
        }
        Features::Tokens { len, data } => {
            let mut out = Vec::with_capacity(b * len);
            for &i in idx {
                out.extend(data[i * len..(i + 1) * len].iter().map(|&t| t as i64));
            }
            Input::Tokens(Tensor::<2, Int>::from_data(
                TensorData::new(out, [b, *len]),
                device,
            ))
        }
    };
    (x, y)
}

/// Where image rows come from: floats already normalised (read in place), or bytes
/// normalised per channel as `(p/255 − mean)/std` into a scratch row.
enum Rows<'a> {
    Floats(&'a [f32]),
    Bytes {
        data: &'a [u8],
        mean: &'a [f32],
        std: &'a [f32],
    },
}

impl Rows<'_> {
    /// Row `i` through the FedACG transform into `dst`: black in pixel space for bytes (the
    /// data sets it is for); 0 for floats.
    fn rotate_crop_flip(
        &self,
        t: &RotateCropFlip,
        i: usize,
        shape: (usize, usize, usize),
        dst: &mut [f32],
    ) {
        let (c, h, w) = shape;
        let per = c * h * w;
        match self {
            Rows::Bytes { data, mean, std } => {
                t.apply_pixels(&data[i * per..(i + 1) * per], dst, shape, mean, std)
            }
            Rows::Floats(data) => {
                let src = &data[i * per..(i + 1) * per];
                let map = t.sources(h, w);
                for (d, s) in dst.chunks_mut(h * w).zip(src.chunks(h * w)) {
                    for (o, at) in d.iter_mut().zip(&map) {
                        *o = at.map_or(0.0, |k| s[k]);
                    }
                }
            }
        }
    }

    /// Row `i` of `per` values (`plane` per channel), normalised.
    fn row<'s>(&'s self, i: usize, per: usize, plane: usize, scratch: &'s mut [f32]) -> &'s [f32] {
        match self {
            Rows::Floats(data) => &data[i * per..(i + 1) * per],
            Rows::Bytes { data, mean, std } => {
                let src = &data[i * per..(i + 1) * per];
                for (ch, (d, s)) in scratch.chunks_mut(plane).zip(src.chunks(plane)).enumerate() {
                    let (m, sd) = (mean[ch], std[ch]);
                    for (o, &p) in d.iter_mut().zip(s) {
                        *o = (p as f32 / 255.0 - m) / sd;
                    }
                }
                scratch
            }
        }
    }
}

/// Image rows `idx` gathered into one batch, augmented when asked.
fn images(
    idx: &[usize],
    (c, h, w): (usize, usize, usize),
    rows: &Rows,
    aug: Augment,
    rng: Option<&mut Rng>,
    device: &Device,
) -> Input {
    let (b, per, plane) = (idx.len(), c * h * w, h * w);
    let mut out = vec![0f32; b * per];
    let mut scratch = match rows {
        Rows::Floats(_) => Vec::new(),
        Rows::Bytes { .. } => vec![0f32; per],
    };
    let dst_rows = out.chunks_mut(per).zip(idx);
    match (aug, rng) {
        (Augment::None, _) | (_, None) => {
            for (dst, &i) in dst_rows {
                dst.copy_from_slice(rows.row(i, per, plane, &mut scratch));
            }
        }
        (Augment::Batch, Some(rng)) => {
            let t = augment::CropFlip::draw(rng);
            for (dst, &i) in dst_rows {
                t.apply(rows.row(i, per, plane, &mut scratch), dst, c, h, w);
            }
        }
        (Augment::Sample, Some(rng)) => {
            for (dst, &i) in dst_rows {
                let t = augment::CropFlip::draw(rng);
                t.apply(rows.row(i, per, plane, &mut scratch), dst, c, h, w);
            }
        }
        (Augment::Fedacg, Some(rng)) => {
            for (dst, &i) in dst_rows {
                let t = RotateCropFlip::draw(rng);
                rows.rotate_crop_flip(&t, i, (c, h, w), dst);
            }
        }
    }
    Input::Images(Tensor::<4>::from_data(
        TensorData::new(out, [b, c, h, w]),
        device,
    ))
}
