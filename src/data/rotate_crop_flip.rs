//! The FedACG code's training transform (`datasets/build.py`): `RandomRotation(10)` →
//! `RandomCrop(size, padding=4)` → `RandomHorizontalFlip()` → `ToTensor()` → `Normalize`, per
//! image, on the PIL image: the rotation (nearest neighbour, about the centre, corners filled
//! black) and the crop's padding (black) happen in pixel space, before normalisation, so a filled
//! pixel is black, `(0 − mean)/std` once normalised (not 0, the mean colour, as `sample` fills).
//!
//! The rotation is Pillow's `Image.rotate` as torchvision calls it, to the bit: the inverse
//! rotation's matrix as Python builds it (the angle taken modulo 360 as Python's `%` does, cos
//! and sin rounded to 15 decimals as `round(v, 15)` does), then Pillow's nearest-neighbour affine
//! map in its 16.16 fixed point (`affine_fixed` in `libImaging/Geometry.c`): each coefficient
//! `FIX(v) = floor(v·65536 + ½)`, the half-pixel centre folded into the offsets before they are
//! fixed, the source at `(a2 + x·a0 + y·a1) >> 16` (exact integer sums, as Pillow's running
//! ones), black outside. The angle is drawn as torchvision draws it, a float32.

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

/// Python's `a % 360.0`: the result takes the divisor's sign.
fn py_mod360(a: f64) -> f64 {
    let m = a % 360.0;
    if m < 0.0 { m + 360.0 } else { m }
}

/// Python's `round(v, 15)`: correctly rounded, ties to even (Rust's formatting rounds the same
/// way; `(v·1e15).round()/1e15` would round the product first).
fn py_round15(v: f64) -> f64 {
    format!("{v:.15}").parse().unwrap_or(v)
}

/// Pillow's `FIX`: 16.16 fixed point, `floor(v·65536 + ½)`.
fn fix(v: f64) -> i64 {
    (v * 65536.0 + 0.5).floor() as i64
}

/// Pillow's inverse map for a rotation by `angle` degrees about the centre of a `w × h` image,
/// in its fixed point: `(a0, a1, a2, a3, a4, a5)`, the input pixel of output (x, y) at
/// `((a0·x + a1·y + a2) >> 16, (a3·x + a4·y + a5) >> 16)`.
fn pillow_fixed(angle: f64, w: usize, h: usize) -> [i64; 6] {
    let t = -py_mod360(angle).to_radians();
    let (cos, sin, nsin) = (
        py_round15(t.cos()),
        py_round15(t.sin()),
        py_round15(-t.sin()),
    );
    let (cx, cy) = (w as f64 / 2.0, h as f64 / 2.0);
    let c = (cos * -cx + sin * -cy + 0.0) + cx;
    let f = (nsin * -cx + cos * -cy + 0.0) + cy;
    [
        fix(cos),
        fix(sin),
        fix(c + cos * 0.5 + sin * 0.5),
        fix(nsin),
        fix(cos),
        fix(f + nsin * 0.5 + cos * 0.5),
    ]
}

impl RotateCropFlip {
    pub fn draw(rng: &mut Rng) -> Self {
        // torchvision: `torch.empty(1).uniform_(-10, 10).item()`, a float32
        let angle = ((2.0 * rng.uniform() - 1.0) * DEGREES) as f32 as f64;
        RotateCropFlip {
            angle,
            crop: CropFlip::draw(rng),
        }
    }

    /// For each output pixel, row-major, the input pixel it shows; None: black (the rotation's
    /// corners, the crop's padding).
    pub fn sources(&self, h: usize, w: usize) -> Vec<Option<usize>> {
        let a = pillow_fixed(self.angle, w, h);
        let rotated = |i: isize, j: isize| -> Option<usize> {
            if i < 0 || j < 0 || i >= h as isize || j >= w as isize {
                return None;
            }
            let (x, y) = (j as i64, i as i64);
            let xin = (a[2] + x * a[0] + y * a[1]) >> 16;
            let yin = (a[5] + x * a[3] + y * a[4]) >> 16;
            let inside = xin >= 0 && yin >= 0 && xin < w as i64 && yin < h as i64;
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
