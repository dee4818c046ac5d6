//! The FedACG code's training transform (`datasets/build.py`): `RandomRotation(10)` →
//! `RandomCrop(size, padding=4)` → `RandomHorizontalFlip()` → `ToTensor()` → `Normalize`, per
//! image, on the PIL image: the rotation (nearest neighbour, about the centre, corners filled
//! black) and the crop's padding (black) happen in pixel space, before normalisation, so a filled
//! pixel is black, `(0 − mean)/std` once normalised (not 0, the mean colour, as `sample` fills).
//!
//! The rotation is Pillow's `Image.rotate` as torchvision calls it: output pixel (x, y) reads
//! the input at `floor(a·(x + ½) + b·(y + ½) + c)` (and likewise for the row) with the inverse
//! rotation's matrix, cos and sin rounded to 15 decimals as Pillow does, and reads black outside.

use super::augment::{CropFlip, PAD};
use crate::rng::Rng;

/// The largest rotation, in degrees (the code's `RandomRotation(10)`).
pub const DEGREES: f64 = 10.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RotateCropFlip {
    /// Counter-clockwise, in degrees, uniform in [−10, 10].
    pub angle: f64,
    pub crop: CropFlip,
}

/// Pillow's inverse map for a rotation by `angle` degrees about the centre of a `w × h` image:
/// `(a0, a1, a2, a3, a4, a5)`, input = `(a0·x + a1·y + a2, a3·x + a4·y + a5)`.
fn pillow_matrix(angle: f64, w: usize, h: usize) -> [f64; 6] {
    let round15 = |v: f64| (v * 1e15).round() / 1e15;
    let t = -(angle % 360.0).to_radians();
    let (cos, sin) = (round15(t.cos()), round15(t.sin()));
    let (cx, cy) = (w as f64 / 2.0, h as f64 / 2.0);
    let c = cos * -cx + sin * -cy + cx;
    let f = -sin * -cx + cos * -cy + cy;
    [cos, sin, c, -sin, cos, f]
}

impl RotateCropFlip {
    pub fn draw(rng: &mut Rng) -> Self {
        let angle = (2.0 * rng.uniform() - 1.0) * DEGREES;
        RotateCropFlip {
            angle,
            crop: CropFlip::draw(rng),
        }
    }

    /// For each output pixel, row-major, the input pixel it shows; None: black (the rotation's
    /// corners, the crop's padding).
    pub fn sources(&self, h: usize, w: usize) -> Vec<Option<usize>> {
        let a = pillow_matrix(self.angle, w, h);
        let rotated = |i: isize, j: isize| -> Option<usize> {
            if i < 0 || j < 0 || i >= h as isize || j >= w as isize {
                return None;
            }
            let (x, y) = (j as f64 + 0.5, i as f64 + 0.5);
            let xin = a[0] * x + a[1] * y + a[2];
            let yin = a[3] * x + a[4] * y + a[5];
            let inside = xin >= 0.0 && yin >= 0.0 && xin < w as f64 && yin < h as f64;
            inside.then(|| yin as usize * w + xin as usize)
        };
        let mut out = Vec::with_capacity(h * w);
        for i in 0..h {
            for j in 0..w {
                let jj = if self.crop.flip { w - 1 - j } else { j };
                let si = i as isize + self.crop.di as isize - PAD as isize;
                let sj = jj as isize + self.crop.dj as isize - PAD as isize;
                out.push(rotated(si, sj));
            }
        }
        out
    }

    /// The transformed `c × h × w` image of bytes `src`, normalised per channel into `dst`.
    pub fn apply_pixels(
        &self,
        src: &[u8],
        dst: &mut [f32],
        (c, h, w): (usize, usize, usize),
        mean: &[f32],
        std: &[f32],
    ) {
        let map = self.sources(h, w);
        let plane = h * w;
        for ch in 0..c {
            let (m, sd) = (mean[ch], std[ch]);
            let s = &src[ch * plane..(ch + 1) * plane];
            for (o, at) in dst[ch * plane..(ch + 1) * plane].iter_mut().zip(&map) {
                let p = at.map_or(0, |k| s[k]);
                *o = (p as f32 / 255.0 - m) / sd;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(angle: f64) -> RotateCropFlip {
        RotateCropFlip {
            angle,
            crop: CropFlip {
                di: PAD,
                dj: PAD,
                flip: false,
            },
        }
    }

    #[test]
    fn no_rotation_and_a_centred_crop_is_the_identity() {
        let map = plain(0.0).sources(5, 7);
        let want: Vec<Option<usize>> = (0..35).map(Some).collect();
        assert_eq!(map, want);
    }

    #[test]
    fn a_quarter_turn_is_pillows_counter_clockwise_rotation() {
        // Pillow: rotate(90) of a square image puts the right column on the top row
        let map = plain(90.0).sources(4, 4);
        for y in 0..4 {
            for x in 0..4 {
                assert_eq!(map[y * 4 + x], Some(x * 4 + (3 - y)), "pixel ({y}, {x})");
            }
        }
    }

    #[test]
    fn a_small_rotation_keeps_the_centre_and_blackens_corners() {
        let map = plain(10.0).sources(32, 32);
        assert_eq!(map[16 * 32 + 16], Some(16 * 32 + 16));
        assert_eq!(map[0], None, "the top-left corner rotates out of the image");
        let black = map.iter().filter(|m| m.is_none()).count();
        // four corner triangles of about ½·(16·tan 10°)·16 ≈ 23 pixels each
        assert!((40..120).contains(&black), "{black} black pixels");
    }

    #[test]
    fn padding_is_black_before_normalisation() {
        let t = RotateCropFlip {
            angle: 0.0,
            crop: CropFlip {
                di: 0,
                dj: PAD,
                flip: false,
            },
        };
        let src = vec![200u8; 3 * 8 * 8];
        let mut dst = vec![0f32; src.len()];
        let (mean, std) = ([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]);
        t.apply_pixels(&src, &mut dst, (3, 8, 8), &mean, &std);
        for ch in 0..3 {
            let black = -mean[ch] / std[ch];
            // the first PAD rows come from the padding
            assert_eq!(dst[ch * 64], black);
            assert_eq!(dst[ch * 64 + PAD * 8], (200.0 / 255.0 - mean[ch]) / std[ch]);
        }
    }
}
