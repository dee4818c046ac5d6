//! LEAF's image data sets, FEMNIST and CelebA, in the JSON that LEAF's `preprocess.sh` writes
//! (`train/*.json` and `test/*.json`, each `{"users", "num_samples", "user_data": {user: {"x",
//! "y"}}}`). Each LEAF user is a client (`natural`); `data.num_clients` of them are drawn with
//! the run's seed (all of them when it equals their number), and the test split is the test
//! samples of the drawn users (LEAF evaluates each client on its own test samples).
//!
//! - FEMNIST: x is 784 floats in [0, 1] (a 28×28 character, as LEAF wrote it), y one of 62
//!   classes; used as they are (the FedACG code: `ToTensor` only).
//! - CelebA: x is an image file name under LEAF's `raw/img_align_celeba/`, y the `Smiling`
//!   attribute (0 or 1; LEAF's script writes 0.0 and 1.0 under Python 3); each face is resized to 84×84 (bilinear, antialiased: the FedACG
//!   code's `Resize((84, 84))`) and normalised with mean and std 0.5, decoded once into an
//!   image cache beside the JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::fed::{Augment, Features, FedData, Split};
use super::image_cache::{self, Decoded, Images};
use super::jpeg::{self, Size};
use super::leaf;
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};

pub const FEMNIST_CLASSES: usize = 62;
pub const FEMNIST_PIXELS: usize = 28 * 28;
pub const CELEBA_SIDE: u32 = 84;
pub const CELEBA_CACHE: &str = "fedrun-cache-celeba.bin";

/// A LEAF label: an integer (FEMNIST's class), a float with an integer value (CelebA's
/// attribute, `(a + 1) / 2` under Python 3: 0.0 or 1.0) or a boolean.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(untagged)]
enum Label {
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// Each user's samples (x, label).
type Users<X> = BTreeMap<String, (Vec<X>, Vec<u8>)>;

/// The users of the `part` files (`train`, `test`), labels checked against `classes` and each
/// x by `check_x` (which says what is wrong).
fn read_part<X: DeserializeOwned>(
    dir: &Path,
    part: &str,
    classes: usize,
    check_x: impl Fn(&X) -> Option<String>,
) -> Result<Users<X>> {
    let mut users = Users::new();
    for path in leaf::json_files(dir, part)? {
        let f: leaf::LeafFile<X, Label> = leaf::read_json(&path)?;
        for (u, d) in f.user_data {
            let bad = |what: String| Error::Data(format!("{}: user {u:?}: {what}", path.display()));
            if let Some(why) = d.x.iter().find_map(&check_x) {
                return Err(bad(why));
            }
            let mut y = Vec::with_capacity(d.y.len());
            for l in d.y {
                match l {
                    Label::Int(v) if (0..classes as i64).contains(&v) => y.push(v as u8),
                    Label::Float(v) if v.fract() == 0.0 && (0.0..classes as f64).contains(&v) => {
                        y.push(v as u8)
                    }
                    Label::Bool(b) if classes == 2 => y.push(b as u8),
                    other => {
                        return Err(bad(format!(
                            "label {other:?} is not a class in 0..{classes}"
                        )));
                    }
                }
            }
            users.insert(u, (d.x, y));
        }
    }
    Ok(users)
}

/// The users that become clients: `data.num_clients` of the users with training samples,
/// drawn with the run's seed (all of them, in name order, when it equals their number).
fn clients_of<X>(spec: &Spec, train: &Users<X>, dir: &Path) -> Result<Vec<String>> {
    let names: Vec<&String> = train
        .iter()
        .filter(|(_, d)| !d.1.is_empty())
        .map(|(u, _)| u)
        .collect();
    let k = spec.data.num_clients;
    if k > names.len() {
        return Err(Error::Config(format!(
            "key `data.num_clients` ({k}) is larger than the {} LEAF users with training samples in {}",
            names.len(),
            dir.display()
        )));
    }
    if k == names.len() {
        return Ok(names.into_iter().cloned().collect());
    }
    let mut rng = Rng::derive(spec.run.seed, Stream::DataSelect, &[]);
    Ok(rng
        .choose_distinct(names.len(), k)
        .into_iter()
        .map(|i| names[i].clone())
        .collect())
}

/// Where the samples of a federated LEAF set lie: every user's training samples in name
/// order, each chosen client's index range into them, and the chosen clients' test samples
/// (indices into the test part's flat order).
struct Layout {
    clients: Vec<Vec<usize>>,
    test: Vec<usize>,
}

fn layout<X>(train: &Users<X>, test: &Users<X>, chosen: &[String]) -> Layout {
    let mut start = BTreeMap::new();
    let mut n = 0;
    for (u, d) in train {
        start.insert(u.clone(), n);
        n += d.1.len();
    }
    let mut tstart = BTreeMap::new();
    let mut m = 0;
    for (u, d) in test {
        tstart.insert(u.clone(), m);
        m += d.1.len();
    }
    let clients = chosen
        .iter()
        .map(|u| (start[u]..start[u] + train[u].1.len()).collect())
        .collect();
    let test = chosen
        .iter()
        .filter_map(|u| test.get(u).map(|d| (tstart[u], d.1.len())))
        .flat_map(|(a, len)| a..a + len)
        .collect();
    Layout { clients, test }
}

fn flat_labels<X>(users: &Users<X>) -> Vec<u8> {
    users.values().flat_map(|d| d.1.iter().copied()).collect()
}

/// LEAF FEMNIST: the users of a `data/femnist/data` directory (train/ and test/ JSON).
pub fn load_femnist(spec: &Spec, dir: &Path) -> Result<FedData> {
    let check = |x: &Vec<f32>| {
        (x.len() != FEMNIST_PIXELS || x.iter().any(|v| !v.is_finite())).then(|| {
            format!(
                "an x of {} values (expected {FEMNIST_PIXELS} finite floats, a 28×28 image)",
                x.len()
            )
        })
    };
    let train = read_part(dir, "train", FEMNIST_CLASSES, check)?;
    let test = read_part(dir, "test", FEMNIST_CLASSES, check)?;
    let chosen = clients_of(spec, &train, dir)?;
    let l = layout(&train, &test, &chosen);
    let pixels = |u: &Users<Vec<f32>>| -> Vec<f32> {
        u.values()
            .flat_map(|d| d.0.iter().flatten().copied())
            .collect()
    };
    let (test_x, test_y) = (pixels(&test), flat_labels(&test));
    let image = |data| Features::Images {
        c: 1,
        h: 28,
        w: 28,
        data,
    };
    let per = FEMNIST_PIXELS;
    let test = Split {
        x: image(
            l.test
                .iter()
                .flat_map(|&i| test_x[i * per..(i + 1) * per].iter().copied())
                .collect(),
        ),
        y: l.test.iter().map(|&i| test_y[i]).collect(),
        resident: Default::default(),
    };
    Ok(FedData {
        name: "femnist".into(),
        train: Split {
            x: image(pixels(&train)),
            y: flat_labels(&train),
            resident: Default::default(),
        },
        test,
        clients: l.clients,
        num_classes: FEMNIST_CLASSES,
        augment: Augment::None,
    })
}

/// CelebA's image folder: `raw/img_align_celeba` in the LEAF data directory (LEAF's layout),
/// or `img_align_celeba` in it or beside it.
fn celeba_images(dir: &Path) -> Result<PathBuf> {
    let candidates = [
        dir.join("raw").join("img_align_celeba"),
        dir.join("img_align_celeba"),
        dir.join("..").join("raw").join("img_align_celeba"),
    ];
    candidates.iter().find(|p| p.is_dir()).cloned().ok_or_else(|| {
        Error::Data(format!(
            "{}: no CelebA image folder (looked for raw/img_align_celeba and img_align_celeba, as LEAF's preprocess leaves them)",
            dir.display()
        ))
    })
}

/// LEAF CelebA: the users of a `data/celeba/data` directory, their faces decoded (once, then
/// cached) at 84×84.
pub fn load_celeba(spec: &Spec, dir: &Path) -> Result<FedData> {
    let check =
        |x: &String| (x.is_empty() || x.contains("..")).then(|| format!("image name {x:?}"));
    let train = read_part(dir, "train", 2, check)?;
    let test = read_part(dir, "test", 2, check)?;
    let images = celeba_images(dir)?;
    let files = |u: &Users<String>| -> Vec<PathBuf> {
        u.values()
            .flat_map(|d| d.0.iter().map(|x| images.join(x)))
            .collect()
    };
    let (train_files, test_files) = (files(&train), files(&test));
    let all: Vec<PathBuf> = train_files.iter().chain(&test_files).cloned().collect();
    let labels: Vec<u8> = [flat_labels(&train), flat_labels(&test)].concat();
    let settings = format!("celeba {CELEBA_SIDE}");
    let fp = image_cache::fingerprint(&settings, &images, &all, &labels)?;
    let size = Size::Resize(CELEBA_SIDE);
    let d: Decoded = image_cache::load(&dir.join(CELEBA_CACHE), fp, || {
        Ok(Decoded {
            side: CELEBA_SIDE as usize,
            train: Images {
                labels: flat_labels(&train),
                pixels: jpeg::decode_all(&train_files, size)?,
            },
            test: Images {
                labels: flat_labels(&test),
                pixels: jpeg::decode_all(&test_files, size)?,
            },
        })
    })?;
    let chosen = clients_of(spec, &train, dir)?;
    let l = layout(&train, &test, &chosen);
    let per = 3 * d.side * d.side;
    let test = Images {
        labels: l.test.iter().map(|&i| d.test.labels[i]).collect(),
        pixels: l
            .test
            .iter()
            .flat_map(|&i| d.test.pixels[i * per..(i + 1) * per].iter().copied())
            .collect(),
    };
    let half = [0.5; 3];
    Ok(FedData {
        name: "celeba".into(),
        train: d.train.into_split(d.side, half, half),
        test: test.into_split(d.side, half, half),
        clients: l.clients,
        num_classes: 2,
        augment: Augment::None,
    })
}
