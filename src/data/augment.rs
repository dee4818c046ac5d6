//! CIFAR augmentation: RandomCrop(32, padding 4, zero fill in normalised space) followed by a
//! horizontal flip with probability ½ (spec §8.3).

use crate::rng::Rng;

pub const PAD: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CropFlip {
    /// Offsets into the padded image, each in 0..=2·PAD.
    pub di: usize,
    pub dj: usize,
    pub flip: bool,
}

impl CropFlip {
    pub fn draw(rng: &mut Rng) -> CropFlip {
        let di = rng.below(2 * PAD + 1);
        let dj = rng.below(2 * PAD + 1);
        let flip = rng.uniform() < 0.5;
        CropFlip { di, dj, flip }
    }

    /// Write the transformed `c × h × w` image `src` into `dst`.
    pub fn apply(&self, src: &[f32], dst: &mut [f32], c: usize, h: usize, w: usize) {
        for ch in 0..c {
            let s = &src[ch * h * w..(ch + 1) * h * w];
            let d = &mut dst[ch * h * w..(ch + 1) * h * w];
            for i in 0..h {
                let si = i as isize + self.di as isize - PAD as isize;
                let row = &mut d[i * w..(i + 1) * w];
                if si < 0 || si >= h as isize {
                    row.fill(0.0);
                    continue;
                }
                let srow = &s[si as usize * w..(si as usize + 1) * w];
                for (j, out) in row.iter_mut().enumerate() {
                    // pixel j of the (optionally flipped) crop
                    let jj = if self.flip { w - 1 - j } else { j };
                    let sj = jj as isize + self.dj as isize - PAD as isize;
                    *out = if sj < 0 || sj >= w as isize {
                        0.0
                    } else {
                        srow[sj as usize]
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centre_crop_without_flip_is_identity() {
        let src: Vec<f32> = (0..2 * 3 * 3).map(|v| v as f32).collect();
        let mut dst = vec![0.0; src.len()];
        CropFlip {
            di: PAD,
            dj: PAD,
            flip: false,
        }
        .apply(&src, &mut dst, 2, 3, 3);
        assert_eq!(src, dst);
    }

    #[test]
    fn shift_pads_with_zero_and_flip_mirrors() {
        // 1 channel, 1 row of 6: shift right by one (dj = PAD - 1): [0, a0, a1, ...]
        let src = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut dst = vec![9.0; 6];
        CropFlip {
            di: PAD,
            dj: PAD - 1,
            flip: false,
        }
        .apply(&src, &mut dst, 1, 1, 6);
        assert_eq!(dst, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        CropFlip {
            di: PAD,
            dj: PAD,
            flip: true,
        }
        .apply(&src, &mut dst, 1, 1, 6);
        assert_eq!(dst, vec![6.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
        // a row shift out of range is all zeros
        CropFlip {
            di: 0,
            dj: PAD,
            flip: false,
        }
        .apply(&src, &mut dst, 1, 1, 6);
        assert_eq!(dst, vec![0.0; 6]);
    }
}
