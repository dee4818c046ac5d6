//! Helpers shared by the integration tests: temporary folders and small files in the real
//! formats.
#![allow(dead_code)]

pub mod conv_copies;
pub mod reference;
pub mod row_chain;
pub mod simd;
pub mod stacked;

use std::path::{Path, PathBuf};

use fedrun::data::cifar;
use fedrun::metrics::summary::{Status, Summary};

/// A fresh temporary folder, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("fedrun-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A mini CIFAR-10 in the binary layout: `per_file` records in each of the six files. Each
/// class has its own colour so that a model can learn it.
pub fn write_mini_cifar(dir: &Path, per_file: usize) {
    let mut state = 12345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let mut files: Vec<&str> = cifar::TRAIN_FILES.to_vec();
    files.push(cifar::TEST_FILE);
    for f in files {
        let mut labels = Vec::new();
        let mut pixels = Vec::new();
        for i in 0..per_file {
            let l = (i % 10) as u8;
            labels.push(l);
            for c in 0..3 {
                let base = (l as u32 * [23u32, 71, 137][c]) % 240;
                for _ in 0..1024 {
                    pixels.push((base + next() % 16) as u8);
                }
            }
        }
        cifar::write_file(&dir.join(f), &labels, &pixels).unwrap();
    }
}

/// A partition file in `dir` giving client c the next `sizes[c]` sample indices (from 0), and the
/// keys that read it.
pub fn partition_file(dir: &Path, sizes: &[usize]) -> Vec<String> {
    let file = dir.join("split.txt");
    let mut at = 0;
    let lists: Vec<String> = (sizes.iter().enumerate())
        .map(|(c, &n)| {
            let idx: Vec<String> = (at..at + n).map(|i| i.to_string()).collect();
            at += n;
            format!("{c}: [{}]", idx.join(", "))
        })
        .collect();
    std::fs::write(&file, format!("{{{}}}", lists.join(", "))).unwrap();
    vec![
        "data.partition=\"file\"".into(),
        format!("data.partition_file=\"{}\"", file.display()),
    ]
}

/// The spec of a small synthetic-data run.
pub fn synthetic_spec(extra: &str) -> String {
    format!(
        "[data]\ndataset = \"synthetic\"\npartition = \"iid\"\nnum_clients = 4\nsynthetic_train = 24\nsynthetic_test = 40\naugmentation = \"batch\"\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 2\nclients_per_round = 2\neval_batch_size = 64\n[local]\nsteps = 3\nbatch_size = 8\nlr = 0.05\nweight_decay = 0.01\n[run]\nname = \"t\"\ncheckpoint_every = 1\n{extra}"
    )
}

/// A rounds.csv as rows of numbers (an empty cell is NaN), without the header.
pub fn columns(path: &std::path::Path) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|v| v.parse::<f64>().unwrap_or(f64::NAN))
                .collect()
        })
        .collect()
}

/// A run folder written by hand: the synthetic spec with `sets`, a CSV whose rows are
/// (test accuracy, test loss) at rounds `first_round`, `first_round + 1`, …, and a summary of
/// `status` that records `first_round` as the CSV's convention (0: a folder written before
/// fedrun counted rounds completed).
pub fn write_run(
    dir: &Path,
    sets: &[&str],
    rows: &[(f64, f64)],
    status: fedrun::metrics::summary::Status,
    first_round: usize,
) {
    std::fs::create_dir_all(dir).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &sets).unwrap();
    std::fs::write(dir.join("spec.toml"), spec.to_toml()).unwrap();
    let mut csv = String::from(fedrun::metrics::csv::HEADER);
    csv.push('\n');
    for (i, (acc, loss)) in rows.iter().enumerate() {
        csv.push_str(&format!(
            "{},{acc},{loss},1,0.1,0,1,1,1,,,0,0,0.0\n",
            i + first_round
        ));
    }
    std::fs::write(dir.join("rounds.csv"), csv).unwrap();
    let s = fedrun::metrics::summary::Summary {
        status,
        name: "t".into(),
        rounds_from: first_round,
        ..Default::default()
    };
    s.write(dir).unwrap();
}

/// A `.tar.gz` of folder `inner` under `dir`, and its md5.
pub fn archive_of(dir: &Path, inner: &str) -> (std::path::PathBuf, String) {
    let archive = dir.join(format!("{inner}.tar.gz"));
    let st = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(dir)
        .arg(inner)
        .status()
        .unwrap();
    assert!(st.success());
    let md5 = md5_of(&archive);
    (archive, md5)
}

/// Run `scripts/<script> dest` on a local archive with the expected `md5`.
pub fn fetch_with(script: &str, dest: &Path, archive: &Path, md5: &str) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(script);
    std::process::Command::new("bash")
        .arg(&script)
        .arg(dest)
        .env("FEDRUN_FETCH_URL", archive)
        .env("FEDRUN_FETCH_MD5", md5)
        .output()
        .unwrap()
}

/// The md5 of a file, as `md5sum` prints it.
pub fn md5_of(path: &Path) -> String {
    let out = std::process::Command::new("md5sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..32].to_string()
}

/// A mini CIFAR-100 in the binary layout: `train` and `test` records, fine label `i % 100`,
/// coarse label `fine / 5`, each fine class its own colour.
pub fn write_mini_cifar100(dir: &Path, train: usize, test: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for (f, n) in [
        (fedrun::data::cifar100::TRAIN_FILE, train),
        (fedrun::data::cifar100::TEST_FILE, test),
    ] {
        let fine: Vec<u8> = (0..n).map(|i| (i % 100) as u8).collect();
        let coarse: Vec<u8> = fine.iter().map(|l| l / 5).collect();
        let pixels: Vec<u8> = fine
            .iter()
            .flat_map(|&l| (0..3072).map(move |p| l.wrapping_mul(37).wrapping_add((p % 7) as u8)))
            .collect();
        fedrun::data::cifar100::write_file(&dir.join(f), &coarse, &fine, &pixels).unwrap();
    }
}

/// Run a shipped config for one round from the command line on `data`, with `sets`.
pub fn run_config(config: &str, data: &Path, out: &Path, sets: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fedrun"));
    cmd.arg("--config")
        .arg(root.join(config))
        .arg("--data-dir")
        .arg(data)
        .arg("--out")
        .arg(out)
        .args(["--set", "fl.rounds=1"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{config}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `spec` run into `out` for its first `rounds` rounds and stopped there, as a run stops when
/// asked for fewer rounds this call: its checkpoint at round `rounds`.
pub fn stop_after(spec: &fedrun::config::Spec, out: &Path, rounds: usize) {
    let opts = fedrun::fl::engine::RunOptions {
        out: out.to_path_buf(),
        max_rounds_this_call: Some(rounds),
        ..Default::default()
    };
    let s = fedrun::fl::engine::run(spec, &opts).unwrap();
    assert_eq!(
        s.status,
        Status::Interrupted,
        "stopped after round {rounds}"
    );
}

/// `spec` run into `out` to its end (resumed from its checkpoint there, if any).
pub fn run_to_end(spec: &fedrun::config::Spec, out: &Path) -> fedrun::error::Result<Summary> {
    let opts = fedrun::fl::engine::RunOptions {
        out: out.to_path_buf(),
        ..Default::default()
    };
    fedrun::fl::engine::run(spec, &opts)
}

/// The lines of a rounds.csv without its last column (the wall time, `elapsed_s`).
pub fn without_time(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect()
}
