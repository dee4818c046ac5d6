//! What fedrun knows of each data set before loading it: the input a sample gives, the
//! classes, and whether its users are the clients. The models' checks, the memory estimate and
//! the data keys read it from here.

use crate::config::{Cifar100Labels, DataSpec, Dataset};

/// The input of one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// `channels × side × side` images.
    Image { channels: usize, side: usize },
    /// Sequences of 80 characters (Shakespeare).
    Characters,
    /// Images whose shape is known once loaded (your own `idx` data).
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    pub sample: Sample,
    /// The classes (an upper bound for `idx`).
    pub classes: usize,
    /// The data set's users are its clients (`data.partition = "natural"` only).
    pub users: bool,
    /// Its samples, train and test together, where the data set fixes them (None: known once
    /// loaded, as LEAF's sampled sets, the plays and your own `idx` files).
    pub samples: Option<usize>,
}

/// The facts of `d`'s data set.
pub fn info(d: &DataSpec) -> Info {
    use Dataset::*;
    let image = |channels, side| Sample::Image { channels, side };
    let (sample, classes, users) = match d.dataset {
        Cifar10 | Synthetic => (image(3, 32), 10, false),
        Cifar100 => match d.cifar100_labels {
            Cifar100Labels::Fine => (image(3, 32), 100, false),
            Cifar100Labels::Coarse => (image(3, 32), 20, false),
        },
        TinyImagenet => (image(3, 64), 200, false),
        Mnist | FashionMnist => (image(1, 28), 10, false),
        Femnist => (image(1, 28), 62, true),
        Celeba => (image(3, 84), 2, true),
        Shakespeare | Leaf => (Sample::Characters, crate::data::shakespeare::VOCAB, true),
        Idx => (Sample::Unknown, 256, false),
    };
    // the published splits: 50,000 + 10,000 images, 100,000 + 10,000 (Tiny ImageNet's
    // validation set is its test split), 60,000 + 10,000 digits
    let samples = match d.dataset {
        Cifar10 | Cifar100 => Some(60_000),
        TinyImagenet => Some(110_000),
        Mnist | FashionMnist => Some(70_000),
        Synthetic => Some(d.num_clients * d.synthetic_train + d.synthetic_test),
        _ => None,
    };
    Info {
        sample,
        classes,
        users,
        samples,
    }
}
