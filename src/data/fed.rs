//! A federated data set in memory: one train split, one test split, and each client's list of
//! train indices; the input of a batch on the device.

use crate::config::Deal;
use burn::tensor::{Int, Tensor};

pub use crate::config::Augmentation as Augment;

#[derive(Clone, Debug)]
pub enum Features {
    /// `n × c × h × w` floats, already normalised.
    Images {
        c: usize,
        h: usize,
        w: usize,
        data: Vec<f32>,
    },
    /// `n × c × h × w` bytes, normalised per channel as `(p/255 − mean)/std` when a batch is
    /// gathered: the large image sets (Tiny-ImageNet, CelebA) held at a quarter of the
    /// memory of floats.
    Pixels {
        c: usize,
        h: usize,
        w: usize,
        data: Vec<u8>,
        mean: Vec<f32>,
        std: Vec<f32>,
    },
    /// `n × len` token indices (Shakespeare characters).
    Tokens { len: usize, data: Vec<u8> },
}

impl Features {
    /// `(channels, height, width)` of image features; None for tokens.
    pub fn image_shape(&self) -> Option<(usize, usize, usize)> {
        match self {
            Features::Images { c, h, w, .. } | Features::Pixels { c, h, w, .. } => {
                Some((*c, *h, *w))
            }
            Features::Tokens { .. } => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Split {
    pub x: Features,
    pub y: Vec<u8>,
    /// Its copy on a GPU, made when a batch is first gathered there (`device_batch.rs`).
    pub resident: super::resident::Resident,
}

impl Split {
    pub fn len(&self) -> usize {
        self.y.len()
    }
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The first `n` samples (all of them when there are fewer).
    pub fn first(&self, n: usize) -> Split {
        let n = n.min(self.len());
        let x = match &self.x {
            Features::Images { c, h, w, data } => Features::Images {
                c: *c,
                h: *h,
                w: *w,
                data: data[..n * c * h * w].to_vec(),
            },
            Features::Pixels {
                c,
                h,
                w,
                data,
                mean,
                std,
            } => Features::Pixels {
                c: *c,
                h: *h,
                w: *w,
                data: data[..n * c * h * w].to_vec(),
                mean: mean.clone(),
                std: std.clone(),
            },
            Features::Tokens { len, data } => Features::Tokens {
                len: *len,
                data: data[..n * len].to_vec(),
            },
        };
        Split {
            x,
            y: self.y[..n].to_vec(),
            resident: Default::default(),
        }
    }
}

/// The input of one batch, on the device.
#[derive(Clone, Debug)]
pub enum Input {
    Images(Tensor<4>),
    Tokens(Tensor<2, Int>),
}

impl Input {
    /// The batches `parts` (of one kind) one after another.
    pub fn cat(parts: Vec<&Input>) -> Input {
        let one = "one data set's batches";
        match parts.first() {
            Some(Input::Images(_)) => {
                let all = parts.into_iter().map(|i| i.clone().images(one)).collect();
                Input::Images(Tensor::cat(all, 0))
            }
            _ => {
                let all = parts.into_iter().map(|i| i.clone().tokens(one)).collect();
                Input::Tokens(Tensor::cat(all, 0))
            }
        }
    }

    /// The images, which `reader` (a model) reads; a panic on characters.
    pub fn images(self, reader: &str) -> Tensor<4> {
        match self {
            Input::Images(x) => x,
            Input::Tokens(_) => panic!("{reader} reads images"),
        }
    }

    /// The character sequences, which `reader` (a model) reads; a panic on images.
    pub fn tokens(self, reader: &str) -> Tensor<2, Int> {
        match self {
            Input::Tokens(x) => x,
            Input::Images(_) => panic!("{reader} reads characters"),
        }
    }
}

/// A federated data set: the training pool, the test set, each client's indices into the pool,
/// and how a training batch is augmented.
#[derive(Clone, Debug)]
pub struct FedData {
    pub name: String,
    pub train: Split,
    pub test: Split,
    /// Train indices of each client.
    pub clients: Vec<Vec<usize>>,
    pub num_classes: usize,
    /// How a training batch is augmented (`data.augmentation`; images only): `Batch`, one crop
    /// offset and one flip decision for the whole batch (the FedNAR code); `Sample`, one per
    /// image; `None`.
    pub augment: Augment,
}

impl FedData {
    /// The bytes it holds: both splits' features as held (floats or bytes) and labels, and the
    /// clients' index lists.
    pub fn bytes(&self) -> u128 {
        let split = |s: &Split| {
            let x = match &s.x {
                Features::Images { data, .. } => data.len() * 4,
                Features::Pixels { data, .. } | Features::Tokens { data, .. } => data.len(),
            };
            (x + s.y.len()) as u128
        };
        let indices: usize = self.clients.iter().map(Vec::len).sum();
        split(&self.train) + split(&self.test) + 8 * indices as u128
    }

    pub fn client_sizes(&self) -> Vec<usize> {
        self.clients.iter().map(|c| c.len()).collect()
    }

    /// Each client's training samples when it trains: as partitioned, or with `data.deal =
    /// "round"` the split's share of one of a round's `per_round` clients (rounded up).
    pub fn round_sizes(&self, deal: Deal, per_round: usize) -> Vec<usize> {
        match deal {
            Deal::Once => self.client_sizes(),
            Deal::Round => vec![self.train.len().div_ceil(per_round.max(1)); self.clients.len()],
        }
    }

    /// Each client's training samples per class.
    pub fn class_counts(&self) -> Vec<Vec<usize>> {
        self.clients
            .iter()
            .map(|c| {
                let mut n = vec![0usize; self.num_classes];
                for &i in c {
                    n[self.train.y[i] as usize] += 1;
                }
                n
            })
            .collect()
    }

    /// One-line description for the log.
    pub fn describe(&self) -> String {
        let sizes = self.client_sizes();
        let min = sizes.iter().min().copied().unwrap_or(0);
        let max = sizes.iter().max().copied().unwrap_or(0);
        format!(
            "{}: {} train / {} test samples, {} clients ({}..{} samples each), {} classes",
            self.name,
            self.train.len(),
            self.test.len(),
            self.clients.len(),
            min,
            max,
            self.num_classes
        )
    }
}
