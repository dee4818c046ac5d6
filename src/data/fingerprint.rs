//! A data set's fingerprint: a CRC-32 of everything a run reads of it once loaded (both splits'
//! features and labels, each client's training indices, the classes), so that a run resumed
//! from its checkpoint can tell that it was given the data it ran on. Two loads of the same
//! files under the same spec give the same value; a file exchanged, edited or partitioned
//! otherwise gives another (to CRC-32's odds, 1 in 4·10⁹).

use super::fed::{Features, FedData, Split};

/// The fingerprint of `d`.
pub fn fingerprint(d: &FedData) -> u32 {
    let mut h = crc32fast::Hasher::new();
    let mut n = |h: &mut crc32fast::Hasher, v: usize| h.update(&(v as u64).to_le_bytes());
    for s in [&d.train, &d.test] {
        split(&mut h, s, &mut n);
    }
    n(&mut h, d.clients.len());
    for c in &d.clients {
        let idx: Vec<u64> = c.iter().map(|&i| i as u64).collect();
        n(&mut h, idx.len());
        h.update(bytemuck::cast_slice(&idx));
    }
    n(&mut h, d.num_classes);
    h.finalize()
}

fn split(h: &mut crc32fast::Hasher, s: &Split, n: &mut impl FnMut(&mut crc32fast::Hasher, usize)) {
    match &s.x {
        Features::Images { c, h: hh, w, data } => {
            [0, *c, *hh, *w].iter().for_each(|&v| n(h, v));
            h.update(bytemuck::cast_slice(data));
        }
        Features::Pixels {
            c,
            h: hh,
            w,
            data,
            mean,
            std,
        } => {
            [1, *c, *hh, *w].iter().for_each(|&v| n(h, v));
            h.update(data);
            h.update(bytemuck::cast_slice(mean));
            h.update(bytemuck::cast_slice(std));
        }
        Features::Tokens { len, data } => {
            [2, *len].iter().for_each(|&v| n(h, v));
            h.update(data);
        }
    }
    n(h, s.y.len());
    h.update(&s.y);
}
