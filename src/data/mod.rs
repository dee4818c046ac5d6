//! Federated data sets held in memory: one train split, one test split, and each client's
//! list of train indices. Images are normalised once at load time; a batch is a gather (plus
//! the augmentation) into one host buffer and one tensor upload.

pub mod augment;
pub mod cifar;
pub mod idx;
pub mod leaf;
pub mod partition;
pub mod plays;
pub mod shakespeare;
pub mod synthetic;
pub mod tar;

use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::config::{Dataset, Spec};
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};
use std::path::{Path, PathBuf};

/// The input features of one split.
#[derive(Clone, Debug)]
pub enum Features {
    /// `n × c × h × w` floats, already normalised.
    Images {
        c: usize,
        h: usize,
        w: usize,
        data: Vec<f32>,
    },
    /// `n × len` token indices (Shakespeare characters).
    Tokens { len: usize, data: Vec<u8> },
}

#[derive(Clone, Debug)]
pub struct Split {
    pub x: Features,
    pub y: Vec<u8>,
}

impl Split {
    pub fn len(&self) -> usize {
        self.y.len()
    }
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

/// The input of one batch, on the device.
#[derive(Clone, Debug)]
pub enum Input {
    Images(Tensor<4>),
    Tokens(Tensor<2, Int>),
}

/// How a training batch is augmented (`data.augmentation`): `Batch`, one crop offset and one
/// flip decision for the whole batch (the FedNAR code); `Sample`, one per image; `None`.
pub use crate::config::Augmentation as Augment;

#[derive(Clone, Debug)]
pub struct FedData {
    pub name: String,
    pub train: Split,
    pub test: Split,
    /// Train indices of each client.
    pub clients: Vec<Vec<usize>>,
    pub num_classes: usize,
    /// Images only: augmentation applies.
    pub augment: Augment,
}

impl FedData {
    pub fn client_sizes(&self) -> Vec<usize> {
        self.clients.iter().map(|c| c.len()).collect()
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

/// The data path: `--data-dir`, else `data.path`, else the data set's default location
/// (`data/<dataset>`; the plays archive for Shakespeare).
pub fn path_of(spec: &Spec, data_dir: Option<&Path>) -> PathBuf {
    if let Some(d) = data_dir {
        return d.to_path_buf();
    }
    if !spec.data.path.is_empty() {
        return PathBuf::from(&spec.data.path);
    }
    match spec.data.dataset {
        Dataset::Shakespeare => PathBuf::from(shakespeare::DEFAULT_PLAYS),
        // Debian's `dataset-fashion-mnist` package
        Dataset::FashionMnist => PathBuf::from("/usr/share/datasets/fashion-mnist"),
        other => PathBuf::from("data").join(other.as_str()),
    }
}

/// Load the data set a spec names and partition it.
pub fn load(spec: &Spec, data_dir: Option<&Path>) -> Result<FedData> {
    let path = path_of(spec, data_dir);
    let d = &spec.data;
    let mut part_rng = Rng::derive(spec.run.seed, Stream::Partition, &[]);
    let fed = match d.dataset {
        Dataset::Cifar10 => {
            let (train, test) = cifar::load_dir(&path)?;
            let clients = partition::partition(spec, &train.y, 10, &mut part_rng)?;
            FedData {
                name: "cifar10".into(),
                train,
                test,
                clients,
                num_classes: 10,
                augment: d.augmentation,
            }
        }
        Dataset::Mnist | Dataset::FashionMnist => {
            // normalisation of the FedExP code (§8.3): MNIST (0.1307, 0.3081), Fashion (0.5, 0.5)
            let (mean, std) = if d.dataset == Dataset::Mnist {
                (0.1307, 0.3081)
            } else {
                (0.5, 0.5)
            };
            let (train, test) = idx::load_dir(&path, mean, std)?;
            let clients = partition::partition(spec, &train.y, 10, &mut part_rng)?;
            FedData {
                name: d.dataset.to_string(),
                train,
                test,
                clients,
                num_classes: 10,
                augment: Augment::None,
            }
        }
        Dataset::Synthetic => synthetic::build(spec, &mut part_rng)?,
        Dataset::Shakespeare => shakespeare::from_plays(spec, &path)?,
        Dataset::Leaf => leaf::load(spec, &path)?,
    };
    if fed.clients.len() < spec.fl.clients_per_round {
        return Err(Error::Config(format!(
            "key `fl.clients_per_round` ({}) exceeds the {} clients of the data set",
            spec.fl.clients_per_round,
            fed.clients.len()
        )));
    }
    if let Some(i) = fed.clients.iter().position(|c| c.is_empty()) {
        return Err(Error::Data(format!("client {i} has no training samples")));
    }
    Ok(fed)
}
