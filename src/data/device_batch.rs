//! Batches gathered on a GPU from a split kept there for the whole run ([`super::resident`]):
//! the split uploaded once (its features normalised on the host exactly as a host batch
//! normalises them, its labels), then each batch gathered on the device from its row indices
//! and, for an augmented batch, an index map of its pixels (the crop and flip, or FedACG's
//! rotation, drawn on the host from the same stream in the same order as the host gather): one
//! small upload and one kernel a batch instead of the batch's values, and the same values bit
//! for bit, so no CSV moves. On cubecl's runtimes only, within `run.device_data_mb` for all the
//! splits a process holds; beyond it, or on flex, batches are gathered on the host
//! (`batch.rs`).

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::augment::{CropFlip, PAD};
use super::fed::{Augment, Features, Input, Split};
use super::resident::{Constants, Held, OnDevice, reserve};
use super::rotate_crop_flip::RotateCropFlip;
use crate::rng::Rng;

/// Rows `idx` of `split` gathered on `device` from its resident copy, augmented with `rng` when
/// asked (the same draws as the host gather); None where the split is not kept on `device`
/// (flex, over the budget), with `rng` untouched.
pub fn batch(
    split: &Split,
    idx: &[usize],
    aug: Augment,
    rng: Option<&mut Rng>,
    device: &Device,
) -> Option<(Input, Tensor<1, Int>)> {
    if !crate::kernels::on_cube(device) {
        return None;
    }
    let on = resident(split, device)?;
    let b = idx.len();
    let rows: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
    let rows = Tensor::<1, Int>::from_data(TensorData::new(rows, [b]), &on.device);
    let map = rng
        .and_then(|rng| draw_maps(split, aug, rng, b))
        .map(|(map, m)| Tensor::from_data(TensorData::new(map, [m, map_len(split)]), &on.device));
    gather(split, rows, map, aug, device)
}

/// The pixel maps of an augmented batch of `b` rows of `split`, drawn from `rng` as [`batch`]
/// and the host gather draw them: one for all rows or one a row, and how many. None without
/// augmentation or for tokens (nothing drawn).
pub fn draw_maps(
    split: &Split,
    aug: Augment,
    rng: &mut Rng,
    b: usize,
) -> Option<(Vec<i64>, usize)> {
    let (_, h, w) = split.x.image_shape()?;
    maps(aug, Some(rng), b, h, w)
}

/// The length of a pixel map of `split` (its pixels a channel; 1 for tokens).
pub fn map_len(split: &Split) -> usize {
    split.x.image_shape().map_or(1, |(_, h, w)| h * w)
}

/// A split's copy on a device, held by its tensors (what a batch is gathered from, with no
/// borrow of the split: a captured step that outlives a training keeps one).
#[derive(Clone)]
pub struct Kept {
    on: OnDevice,
    shape: Option<(usize, usize, usize)>,
}

/// `split`'s copy on `device` (made now within the budget, on any backend); None where it is
/// not kept.
pub fn kept(split: &Split, device: &Device) -> Option<Kept> {
    Some(Kept {
        on: resident(split, device)?,
        shape: split.x.image_shape(),
    })
}

/// Rows `rows` of `split` (indices on `device`'s inner device) gathered from its copy on
/// `device` (made now within the budget, on any backend), an image row's pixels through
/// `map` (`[m, h·w]`, m = 1 or the rows; None: the identity), filled as `aug` fills; with their
/// labels. None where the split is not kept on `device`.
pub fn gather(
    split: &Split,
    rows: Tensor<1, Int>,
    map: Option<Tensor<2, Int>>,
    aug: Augment,
    device: &Device,
) -> Option<(Input, Tensor<1, Int>)> {
    kept(split, device)?.gather(rows, map, aug, device)
}

impl Kept {
    /// [`gather`] from this copy.
    pub fn gather(
        &self,
        rows: Tensor<1, Int>,
        map: Option<Tensor<2, Int>>,
        aug: Augment,
        device: &Device,
    ) -> Option<(Input, Tensor<1, Int>)> {
        let on = &self.on;
        let lift = device.is_autodiff();
        let b = rows.dims()[0];
        let y = on.y.clone().select(0, rows.clone());
        let x = match (&on.x, self.shape) {
            (Held::Tokens(t), _) => Input::Tokens(up(t.clone().select(0, rows), lift)),
            (Held::Images(src), Some((c, h, w))) => {
                let k = on.constants.as_ref()?;
                let map = map.unwrap_or_else(|| k.identity.clone());
                let fill = match aug {
                    Augment::Fedacg => k.black.clone(),
                    _ => k.zero.clone(),
                };
                let out = crate::kernels::gather_rows(src.clone(), rows, map, fill);
                Input::Images(up(out.reshape([b, c, h, w]), lift))
            }
            (Held::Images(_), None) => return None,
        };
        Some((x, up(y, lift)))
    }
}

/// `t` on the autodiff device when `lift` (untracked data).
fn up<const D: usize, K: burn::tensor::kind::Autodiff>(
    t: Tensor<D, K>,
    lift: bool,
) -> Tensor<D, K> {
    if lift { t.autodiff() } else { t }
}

/// The split's copy on `device`'s inner device: made now if it fits the budget and no other
/// device holds one.
fn resident(split: &Split, device: &Device) -> Option<OnDevice> {
    let inner = device.clone().inner();
    split.resident.on(&inner, || upload(split, &inner))
}

/// The split on `device`, or None beyond the budget or the device's largest buffer.
fn upload(split: &Split, device: &Device) -> Option<OnDevice> {
    let n = split.len();
    let per = match &split.x {
        Features::Images { c, h, w, .. } | Features::Pixels { c, h, w, .. } => 4 * c * h * w,
        Features::Tokens { len, .. } => 8 * len,
    };
    let bytes = (n * (per + 8)) as u64;
    // one buffer holds the features: over the device's largest (lavapipe's 128 MiB binding),
    // the batches are gathered on the host instead
    if crate::kernels::max_buffer(device).is_some_and(|max| (n * per) as u64 > max) {
        return None;
    }
    if !reserve(bytes) {
        return None;
    }
    let labels: Vec<i64> = split.y.iter().map(|&v| v as i64).collect();
    let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), device);
    let x = match &split.x {
        Features::Images { c, h, w, data } => Held::Images(Tensor::from_data(
            TensorData::new(data.clone(), [n, *c, h * w]),
            device,
        )),
        Features::Pixels {
            c,
            h,
            w,
            data,
            mean,
            std,
        } => Held::Images(Tensor::from_data(
            TensorData::new(normalised(data, mean, std, h * w), [n, *c, h * w]),
            device,
        )),
        Features::Tokens { len, data } => {
            let t: Vec<i64> = data.iter().map(|&v| v as i64).collect();
            Held::Tokens(Tensor::from_data(TensorData::new(t, [n, *len]), device))
        }
    };
    let constants = split.x.image_shape().map(|(c, h, w)| Constants {
        identity: Tensor::from_data(
            TensorData::new((0..(h * w) as i64).collect(), [1, h * w]),
            device,
        ),
        zero: Tensor::from_data(TensorData::new(vec![0.0f32; c], [c]), device),
        black: Tensor::from_data(TensorData::new(black(split), [c]), device),
    });
    Some(OnDevice {
        device: device.clone(),
        x,
        y,
        bytes,
        constants,
    })
}

/// Bytes normalised per channel as a host batch normalises them, `(p/255 − mean)/std`.
fn normalised(data: &[u8], mean: &[f32], std: &[f32], plane: usize) -> Vec<f32> {
    let c = mean.len();
    data.chunks(plane)
        .enumerate()
        .flat_map(|(k, s)| {
            let (m, sd) = (mean[k % c], std[k % c]);
            s.iter().map(move |&p| (p as f32 / 255.0 - m) / sd)
        })
        .collect()
}

/// The pixel maps of an augmented batch of `b` (one for all, or one per row) and how many: each
/// output pixel's source pixel, −1 for the fill; drawn from `rng` as the host gather draws.
/// None without augmentation (the resident identity map).
fn maps(
    aug: Augment,
    rng: Option<&mut Rng>,
    b: usize,
    h: usize,
    w: usize,
) -> Option<(Vec<i64>, usize)> {
    match (aug, rng) {
        (Augment::None, _) | (_, None) => None,
        (Augment::Batch, Some(rng)) => Some((crop_map(&CropFlip::draw(rng), h, w), 1)),
        (Augment::Sample, Some(rng)) => {
            let all = (0..b).flat_map(|_| crop_map(&CropFlip::draw(rng), h, w));
            Some((all.collect(), b))
        }
        (Augment::Fedacg, Some(rng)) => {
            let mut all = Vec::with_capacity(b * h * w);
            for _ in 0..b {
                let t = RotateCropFlip::draw(rng);
                all.extend(t.sources(h, w).iter().map(|s| s.map_or(-1, |k| k as i64)));
            }
            Some((all, b))
        }
    }
}

/// [`CropFlip::apply`]'s pixel map: output pixel (i, j) from (i + di − PAD, j' + dj − PAD), j'
/// mirrored when flipped; −1 outside the image.
fn crop_map(t: &CropFlip, h: usize, w: usize) -> Vec<i64> {
    let mut map = Vec::with_capacity(h * w);
    for i in 0..h {
        for j in 0..w {
            let si = i as isize + t.di as isize - PAD as isize;
            let jj = if t.flip { w - 1 - j } else { j };
            let sj = jj as isize + t.dj as isize - PAD as isize;
            let inside = (0..h as isize).contains(&si) && (0..w as isize).contains(&sj);
            map.push(if inside {
                si as i64 * w as i64 + sj as i64
            } else {
                -1
            });
        }
    }
    map
}

/// Each channel's fill for FedACG's transform: black in pixel space for bytes, as the host's
/// (0 for floats, and for the crop's padding in every case).
fn black(split: &Split) -> Vec<f32> {
    match &split.x {
        Features::Pixels { mean, std, .. } => mean
            .iter()
            .zip(std)
            .map(|(&m, &sd)| (0u8 as f32 / 255.0 - m) / sd)
            .collect(),
        x => vec![0.0; x.image_shape().map_or(1, |s| s.0)],
    }
}
