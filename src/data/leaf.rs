//! LEAF's JSON format: `{"users": [...], "num_samples": [...], "user_data": {user: {"x": [...],
//! "y": [...]}}}`. For Shakespeare, x holds 80-character strings and y single characters.
//! A LEAF data directory holds `train/*.json` and `test/*.json`, or JSON files whose names
//! contain `train` and `test`.

use super::FedData;
use super::shakespeare::{self, SEQ_LEN, char_index};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserData {
    pub x: Vec<String>,
    pub y: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeafFile {
    pub users: Vec<String>,
    pub num_samples: Vec<usize>,
    pub user_data: BTreeMap<String, UserData>,
}

pub fn read_file(path: &Path) -> Result<LeafFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Data(format!("cannot read LEAF file {}: {e}", path.display())))?;
    let f: LeafFile = serde_json::from_str(&text).map_err(|e| {
        Error::Data(format!(
            "{}: not a LEAF JSON file ({e}); expected {{\"users\", \"num_samples\", \"user_data\"}}",
            path.display()
        ))
    })?;
    for (i, u) in f.users.iter().enumerate() {
        let d = f.user_data.get(u).ok_or_else(|| {
            Error::Data(format!(
                "{}: user {u:?} listed but has no user_data",
                path.display()
            ))
        })?;
        if d.x.len() != d.y.len() || f.num_samples.get(i) != Some(&d.x.len()) {
            return Err(Error::Data(format!(
                "{}: user {u:?} has {} x, {} y and num_samples {:?}; they must agree",
                path.display(),
                d.x.len(),
                d.y.len(),
                f.num_samples.get(i)
            )));
        }
        if let Some(bad) = d.x.iter().find(|s| s.chars().count() != SEQ_LEN) {
            return Err(Error::Data(format!(
                "{}: user {u:?} has an x of {} characters (expected {SEQ_LEN})",
                path.display(),
                bad.chars().count()
            )));
        }
        if let Some(bad) = d.y.iter().find(|s| s.chars().count() != 1) {
            return Err(Error::Data(format!(
                "{}: user {u:?} has a y {bad:?} (expected one character)",
                path.display()
            )));
        }
    }
    Ok(f)
}

pub fn write_file(path: &Path, f: &LeafFile) -> Result<()> {
    let s = serde_json::to_string(f).expect("json");
    std::fs::write(path, s).map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

fn json_files(dir: &Path, part: &str) -> Result<Vec<PathBuf>> {
    let sub = dir.join(part);
    let (base, need_name) = if sub.is_dir() {
        (sub, false)
    } else {
        (dir.to_path_buf(), true)
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(&base)
        .map_err(|e| {
            Error::Data(format!(
                "cannot read LEAF directory {}: {e}",
                base.display()
            ))
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| !need_name || p.file_name().unwrap().to_string_lossy().contains(part))
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(Error::Data(format!(
            "{}: no {part} JSON files (expected {part}/*.json or *{part}*.json)",
            dir.display()
        )));
    }
    Ok(out)
}

/// Load a LEAF Shakespeare directory. Users are kept when they have more than
/// `min_train_samples` / `min_test_samples`; `num_clients` of them are chosen by seed and
/// cropped as for the plays.
pub fn load(spec: &Spec, dir: &Path) -> Result<FedData> {
    let mut train: BTreeMap<String, UserData> = BTreeMap::new();
    let mut test: BTreeMap<String, UserData> = BTreeMap::new();
    for p in json_files(dir, "train")? {
        train.extend(read_file(&p)?.user_data);
    }
    for p in json_files(dir, "test")? {
        test.extend(read_file(&p)?.user_data);
    }
    let d = &spec.data;
    let users: Vec<&String> = train
        .keys()
        .filter(|u| {
            test.get(*u).is_some_and(|t| t.x.len() > d.min_test_samples)
                && train[*u].x.len() > d.min_train_samples
        })
        .collect();
    if users.len() < d.num_clients {
        return Err(Error::Config(format!(
            "key `data.num_clients` ({}) is larger than the {} LEAF users in {} with more than {} train and {} test samples",
            d.num_clients,
            users.len(),
            dir.display(),
            d.min_train_samples,
            d.min_test_samples
        )));
    }
    let mut rng = Rng::derive(spec.run.seed, Stream::DataSelect, &[]);
    let pick = rng.choose_distinct(users.len(), d.num_clients);
    let (mut tx, mut ty, mut sx, mut sy) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut clients = Vec::new();
    for (c, &ui) in pick.iter().enumerate() {
        let u = users[ui];
        let mut crop_rng = Rng::derive(spec.run.seed, Stream::DataSelect, &[1 + c as u64]);
        let first = ty.len();
        for s in [
            (&train[u], d.crop_train, true),
            (&test[u], d.crop_test, false),
        ] {
            let (data, k, is_train) = s;
            for i in shakespeare::crop_window(0..data.x.len(), k, &mut crop_rng) {
                let (x, y) = if is_train {
                    (&mut tx, &mut ty)
                } else {
                    (&mut sx, &mut sy)
                };
                x.extend(data.x[i].chars().map(char_index));
                y.push(char_index(data.y[i].chars().next().unwrap()));
            }
        }
        clients.push((first..ty.len()).collect());
    }
    let fed = shakespeare::token_data("leaf-shakespeare", (tx, ty), (sx, sy), clients);
    shakespeare::print_stats(
        &fed,
        &shakespeare::Stats {
            users_total: train.len(),
            users_eligible: users.len(),
        },
    );
    Ok(fed)
}
