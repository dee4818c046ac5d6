//! Loading the data set a spec names, and partitioning it.

use std::path::{Path, PathBuf};

use super::fed::{Augment, FedData, Split};
use super::{
    cifar, cifar100, idx, leaf, leaf_images, partition, shakespeare, synthetic, tiny_imagenet,
};
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

/// The spec as a run records it (`spec.toml`, the checkpoint): `data.path` is the `--data-dir`
/// that was given, made absolute, so that the folder says which data it read and its spec read
/// back reads the same files from any working directory; without `--data-dir`, the spec's own
/// (empty: the data set's default place). A path that is not UTF-8 stays as the spec wrote it
/// (`run.json` records every process's data folder either way).
pub fn recorded(spec: &Spec, data_dir: Option<&Path>) -> Spec {
    let mut s = spec.clone();
    let given = data_dir.map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()));
    if let Some(p) = given.as_deref().and_then(Path::to_str) {
        s.data.path = p.to_string();
    }
    s
}

/// Load the data set a spec names and partition it.
pub fn load(spec: &Spec, data_dir: Option<&Path>) -> Result<FedData> {
    let fed = read(spec, &path_of(spec, data_dir))?;
    if fed.clients.len() < spec.fl.clients_per_round {
        return Err(Error::Config(format!(
            "key `fl.clients_per_round` ({}) exceeds the {} clients of the data set",
            spec.fl.clients_per_round,
            fed.clients.len()
        )));
    }
    if fed.clients.len() < spec.fl.active_clients {
        return Err(Error::Config(format!(
            "key `fl.active_clients` ({}) exceeds the {} clients of the data set",
            spec.fl.active_clients,
            fed.clients.len()
        )));
    }
    if let Some(i) = fed.clients.iter().position(|c| c.is_empty()) {
        return Err(Error::Data(format!("client {i} has no training samples")));
    }
    if fed.test.is_empty() {
        return Err(Error::Data(format!(
            "{}: the test set is empty, so no round could be evaluated (test_acc would read 0.00 %)",
            fed.name
        )));
    }
    Ok(fed)
}

/// The data set at `path`: the data sets with users bring their clients, the others are
/// partitioned by the spec.
fn read(spec: &Spec, path: &Path) -> Result<FedData> {
    let d = &spec.data;
    let mut part_rng = Rng::derive(spec.run.seed, Stream::Partition, &[]);
    let mut split = |name: String, (train, test): (Split, Split), classes, augment| {
        let clients = partition::partition(&spec.data, &train.y, classes, &mut part_rng)?;
        Ok(FedData {
            name,
            train,
            test,
            clients,
            num_classes: classes,
            augment,
        })
    };
    match d.dataset {
        Dataset::Cifar10 => {
            let fedacg = d.augmentation == Augment::Fedacg;
            split(
                "cifar10".into(),
                cifar::load_dir(path, fedacg)?,
                10,
                d.augmentation,
            )
        }
        Dataset::Cifar100 => {
            let l = d.cifar100_labels;
            let name = format!("cifar100 ({l} labels)");
            let classes = cifar100::classes(l);
            let hold = match d.augmentation {
                Augment::Fedacg => cifar::Hold::Pixels,
                _ => cifar::Hold::Floats,
            };
            split(
                name,
                cifar100::load_dir(path, l, hold)?,
                classes,
                d.augmentation,
            )
        }
        Dataset::TinyImagenet => {
            let (train, test, classes) = tiny_imagenet::load_dir(path)?;
            split(
                "tiny-imagenet".into(),
                (train, test),
                classes,
                d.augmentation,
            )
        }
        Dataset::Mnist | Dataset::FashionMnist => {
            // normalisation of the FedExP code (§8.3): MNIST (0.1307, 0.3081), Fashion (0.5, 0.5)
            let (mean, std) = if d.dataset == Dataset::Mnist {
                (0.1307, 0.3081)
            } else {
                (0.5, 0.5)
            };
            let name = d.dataset.to_string();
            split(name, idx::load_dir(path, mean, std)?, 10, Augment::None)
        }
        Dataset::Idx => {
            let (train, test, classes) = idx::load_own(path, d.mean as f32, d.std as f32)?;
            let name = format!("idx ({})", path.display());
            split(name, (train, test), classes, Augment::None)
        }
        Dataset::Synthetic => synthetic::build(spec, &mut part_rng),
        Dataset::Shakespeare => shakespeare::from_plays(spec, path),
        Dataset::Leaf => leaf::load(spec, path),
        Dataset::Femnist => leaf_images::load_femnist(spec, path),
        Dataset::Celeba => leaf_images::load_celeba(spec, path),
    }
}
