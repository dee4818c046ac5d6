//! Loading the data set a spec names, and partitioning it.

use std::path::{Path, PathBuf};

use super::fed::{Augment, FedData};
use super::{cifar, cifar100, idx, leaf, partition, shakespeare, synthetic};
use crate::config::{Dataset, Spec};
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};

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
        Dataset::Cifar100 => {
            let (train, test) = cifar100::load_dir(&path, d.cifar100_labels)?;
            let classes = cifar100::classes(d.cifar100_labels);
            let clients = partition::partition(spec, &train.y, classes, &mut part_rng)?;
            FedData {
                name: format!("cifar100 ({} labels)", d.cifar100_labels),
                train,
                test,
                clients,
                num_classes: classes,
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
        Dataset::Idx => {
            let (train, test, classes) = idx::load_own(&path, d.mean as f32, d.std as f32)?;
            let clients = partition::partition(spec, &train.y, classes, &mut part_rng)?;
            FedData {
                name: format!("idx ({})", path.display()),
                train,
                test,
                clients,
                num_classes: classes,
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
