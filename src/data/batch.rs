//! A batch: rows of a split gathered (and augmented) into one host buffer, then one upload.

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::augment;
use super::fed::{Augment, Features, Input, Split};
use crate::rng::Rng;

/// Gather rows `idx` of `split` into a batch on `device`, augmenting with `rng` when asked.
pub fn batch(
    split: &Split,
    idx: &[usize],
    aug: Augment,
    rng: Option<&mut Rng>,
    device: &Device,
) -> (Input, Tensor<1, Int>) {
    let b = idx.len();
    let y: Vec<i64> = idx.iter().map(|&i| split.y[i] as i64).collect();
    let y = Tensor::<1, Int>::from_data(TensorData::new(y, [b]), device);
    let x = match &split.x {
        Features::Images { c, h, w, data } => {
            let per = c * h * w;
            let mut out = vec![0f32; b * per];
            match (aug, rng) {
                (Augment::None, _) | (_, None) => {
                    for (k, &i) in idx.iter().enumerate() {
                        out[k * per..(k + 1) * per].copy_from_slice(&data[i * per..(i + 1) * per]);
                    }
                }
                (Augment::Batch, Some(rng)) => {
                    let t = augment::CropFlip::draw(rng);
                    for (k, &i) in idx.iter().enumerate() {
                        t.apply(
                            &data[i * per..(i + 1) * per],
                            &mut out[k * per..(k + 1) * per],
                            *c,
                            *h,
                            *w,
                        );
                    }
                }
                (Augment::Sample, Some(rng)) => {
                    for (k, &i) in idx.iter().enumerate() {
                        let t = augment::CropFlip::draw(rng);
                        t.apply(
                            &data[i * per..(i + 1) * per],
                            &mut out[k * per..(k + 1) * per],
                            *c,
                            *h,
                            *w,
                        );
                    }
                }
            }
            Input::Images(Tensor::<4>::from_data(
                TensorData::new(out, [b, *c, *h, *w]),
                device,
            ))
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
