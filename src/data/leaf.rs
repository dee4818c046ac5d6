//! LEAF's JSON format: `{"users": [...], "num_samples": [...], "user_data": {user: {"x": [...],
//! "y": [...]}}}`. For Shakespeare, x holds 80-character strings and y single characters.
//! A LEAF data directory holds `train/*.json` and `test/*.json`, or JSON files whose names
//! contain `train` and `test`.

use super::fed::FedData;
use super::shakespeare::{self, SEQ_LEN, char_index};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One user's samples. Shakespeare: x holds 80-character strings and y single characters;
/// FEMNIST: x holds 784 floats and y a class; CelebA: x holds an image file name and y a class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserData<X = String, Y = String> {
    pub x: Vec<X>,
    pub y: Vec<Y>,
}

/// One LEAF JSON file as LEAF's scripts write it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeafFile<X = String, Y = String> {
    pub users: Vec<String>,
    pub num_samples: Vec<usize>,
    pub user_data: BTreeMap<String, UserData<X, Y>>,
}

impl<X, Y> LeafFile<X, Y> {
    /// Users whose `num_samples` entry differs from the length of their arrays, and the sum of
    /// `num_samples − len(x)` over them. LEAF's `split_data.py` records a Shakespeare user's
    /// test count before dropping the first `80 − 1` windows (they overlap the training
    /// windows), so every test file it writes has `num_samples = len(x) + 79`: fedrun takes the
    /// arrays as the truth and reports the difference once.
    pub fn stale_counts(&self) -> (usize, i64) {
        let mut users = 0;
        let mut diff = 0i64;
        for (i, u) in self.users.iter().enumerate() {
            let len = self.user_data.get(u).map_or(0, |d| d.x.len());
            let listed = self.num_samples.get(i).copied();
            if listed != Some(len) {
                users += 1;
                diff += listed.unwrap_or(0) as i64 - len as i64;
            }
        }
        (users, diff)
    }
}

/// Read one LEAF JSON file of any kind and check its structure: every listed user has data,
/// and x and y agree in length. `num_samples` is not checked against the arrays
/// ([`LeafFile::stale_counts`]).
pub fn read_json<X, Y>(path: &Path) -> Result<LeafFile<X, Y>>
where
    X: serde::de::DeserializeOwned,
    Y: serde::de::DeserializeOwned,
{
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Data(format!("cannot read LEAF file {}: {e}", path.display())))?;
    let f: LeafFile<X, Y> = serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| {
        Error::Data(format!(
            "{}: not a LEAF JSON file of this data set ({e}); expected {{\"users\", \"num_samples\", \"user_data\": {{user: {{\"x\", \"y\"}}}}}}",
            path.display()
        ))
    })?;
    for u in &f.users {
        let d = f.user_data.get(u).ok_or_else(|| {
            Error::Data(format!(
                "{}: user {u:?} listed but has no user_data",
                path.display()
            ))
        })?;
        // `num_samples` may disagree with the arrays (see `LeafFile::stale_counts`); x and y
        // are the data and must agree with each other.
        if d.x.len() != d.y.len() {
            return Err(Error::Data(format!(
                "{}: user {u:?} has {} x and {} y; they must agree",
                path.display(),
                d.x.len(),
                d.y.len()
            )));
        }
    }
    Ok(f)
}

/// Read and check one LEAF Shakespeare JSON file ([`read_json`]): x holds 80-character
/// strings and y single characters.
pub fn read_file(path: &Path) -> Result<LeafFile> {
    let f: LeafFile = read_json(path)?;
    for (u, d) in &f.user_data {
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

pub fn write_file<X: Serialize, Y: Serialize>(path: &Path, f: &LeafFile<X, Y>) -> Result<()> {
    let s = serde_json::to_string(f).expect("json");
    std::fs::write(path, s).map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

pub fn json_files(dir: &Path, part: &str) -> Result<Vec<PathBuf>> {
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
    let (mut stale_users, mut stale_diff, mut users_read) = (0, 0i64, 0);
    for (part, map) in [("train", &mut train), ("test", &mut test)] {
        for p in json_files(dir, part)? {
            let f = read_file(&p)?;
            let (u, d) = f.stale_counts();
            stale_users += u;
            stale_diff += d;
            users_read += f.users.len();
            map.extend(f.user_data);
        }
    }
    if stale_users > 0 {
        eprintln!(
            "note: {stale_users} of {users_read} LEAF user entries in {} list a num_samples that differs from their x/y arrays (by {stale_diff:+} samples in all; LEAF's split_data.py counts test windows before dropping the ones that overlap training); fedrun uses the arrays",
            dir.display()
        );
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
