//! The adversarial suite: generated inputs that must each end in `Ok` or a named `Error`, never
//! a panic, an abort, or an output folder that looks complete. Each property runs a fixed
//! number of cases from a fixed seed (the same cases on every run), and the counts add up to
//! more than 10,000: spec text, spec tables with values of every type and size, `--set`, one
//! round of generated specs, the CIFAR-10, IDX, LEAF and tar readers on damaged files, the
//! checkpoint reader on damaged checkpoints (which must always be refused), the CSV resume, the
//! published split files, and whole run folders (finished and interrupted) with one file damaged
//! or taken from another run, read back by `report`, a rerun and a resume.

mod common;

use std::path::Path;

use common::{TempDir, synthetic_spec};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

use fedrun::data::{cifar, idx, leaf};
use fedrun::fl::engine::checkpoint;
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::csv::CsvWriter;
use fedrun::metrics::summary::{Status, Summary};

/// A runner of `cases` cases from a fixed seed, without failure files.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(20261123),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Every key path of the resolved default spec (`data.alpha`, `fedprox.mu`, …), with its
/// default.
fn defaults() -> Vec<(String, toml::Value)> {
    let spec = fedrun::schema::parse("", "default", &[]).unwrap();
    let mut out = Vec::new();
    fn walk(v: &toml::Value, prefix: &str, out: &mut Vec<(String, toml::Value)>) {
        if let toml::Value::Table(t) = v {
            for (k, v) in t {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                walk(v, &p, out);
            }
        } else {
            out.push((prefix.to_string(), v.clone()));
        }
    }
    walk(&toml::Value::try_from(&spec).unwrap(), "", &mut out);
    out
}

fn known_keys() -> Vec<String> {
    defaults().into_iter().map(|(k, _)| k).collect()
}

/// Values of every TOML type, with sizes and specials a spec should refuse or survive.
fn value() -> impl Strategy<Value = toml::Value> {
    let int = prop_oneof![
        Just(0i64),
        Just(1),
        Just(-1),
        Just(i64::MAX),
        Just(i64::MIN),
        Just(1 << 40),
        0i64..64,
        any::<i64>()
    ];
    let float = prop_oneof![
        Just(0.0f64),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-f64::INFINITY),
        Just(1e-300),
        Just(1e300),
        -2.0f64..2.0,
        any::<f64>()
    ];
    let names = [
        "iid",
        "dirichlet",
        "shards",
        "natural",
        "file",
        "synthetic",
        "cifar10",
        "leaf",
        "cnn",
        "mlp",
        "linear",
        "transformer",
        "lstm",
        "fedavg",
        "fedlamb",
        "mime",
        "sgdm",
        "epoch",
        "",
    ];
    let string = prop_oneof![
        proptest::sample::select(names.to_vec()).prop_map(String::from),
        "[a-z0-9_./-]{0,12}",
    ];
    let leaf = prop_oneof![
        int.prop_map(toml::Value::Integer),
        float.prop_map(toml::Value::Float),
        any::<bool>().prop_map(toml::Value::Boolean),
        string.prop_map(toml::Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(toml::Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
}

/// A spec as TOML text: random known (and some unknown) keys set to random values.
fn spec_text(keys: Vec<String>) -> impl Strategy<Value = String> {
    let key = prop_oneof![
        9 => proptest::sample::select(keys),
        1 => "[a-z_]{1,8}\\\\.[a-z_]{1,8}",
    ];
    prop::collection::vec((key, value()), 0..8).prop_map(|pairs| {
        let mut root = toml::Table::new();
        for (k, v) in pairs {
            let (section, name) = k.split_once('.').unwrap_or(("run", &k));
            let t = root
                .entry(section.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(t) = t {
                t.insert(name.to_string(), v);
            }
        }
        toml::to_string(&root).unwrap_or_default()
    })
}

/// Parse, and for a spec that parses, check its sizes against a small budget.
fn parse_and_size(text: &str, sets: &[String]) {
    if let Ok(spec) = fedrun::schema::parse(text, "generated", sets) {
        let _ = fedrun::fl::engine::resources::check_spec(&spec, 1 << 28);
    }
}

#[test]
fn spec_text_never_panics() {
    runner(3000)
        .run(
            &"(\\[[a-z_.]{0,12}\\]|[a-z_.]{1,12} ?= ?[-0-9a-z\".e+\\[\\], ]{0,16}|\n){0,12}",
            |text| {
                parse_and_size(&text, &[]);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn spec_tables_never_panic() {
    runner(3000)
        .run(&spec_text(known_keys()), |text| {
            parse_and_size(&text, &[]);
            Ok(())
        })
        .unwrap();
}

#[test]
fn set_overrides_never_panic() {
    let keys = known_keys();
    // mostly a value of the key's own type (sizes and specials included), else any value or
    // raw characters
    let typed = proptest::sample::select(defaults()).prop_flat_map(|(k, d)| {
        let v: BoxedStrategy<toml::Value> = match d {
            toml::Value::Integer(_) => {
                prop_oneof![0i64..16, Just(i64::MAX), Just(1 << 40), Just(-1)]
                    .prop_map(toml::Value::Integer)
                    .boxed()
            }
            toml::Value::Float(_) => {
                prop_oneof![-1.0f64..2.0, Just(f64::NAN), Just(1e300), Just(1e-300)]
                    .prop_map(toml::Value::Float)
                    .boxed()
            }
            toml::Value::Boolean(_) => any::<bool>().prop_map(toml::Value::Boolean).boxed(),
            _ => value().boxed(),
        };
        (Just(k), v).prop_map(|(k, v)| format!("{k}={v}"))
    });
    let raw = (
        proptest::sample::select(keys),
        prop_oneof![
            value().prop_map(|v| v.to_string()),
            "[-0-9a-z\".e+\\[\\]{}=, ]{0,20}"
        ],
    )
        .prop_map(|(k, v)| format!("{k}={v}"));
    let set = prop_oneof![3 => typed, 1 => raw];
    runner(2000)
        .run(&prop::collection::vec(set, 1..4), |sets| {
            parse_and_size(&synthetic_spec(""), &sets);
            Ok(())
        })
        .unwrap();
}

/// Keys a one-round synthetic run reads, with values from small to absurd (but few local
/// steps: a huge step count is a long run the user asked for, not a fault).
fn run_sets() -> impl Strategy<Value = Vec<String>> {
    // mostly values a run accepts, so that most cases train; now and then the extremes
    let small = prop_oneof![
        8 => 1i64..8,
        1 => Just(0i64),
        1 => Just(1 << 40),
    ];
    let frac = prop_oneof![
        6 => Just(0.3f64),
        2 => Just(1e-3),
        1 => Just(1e-300),
        1 => Just(1e300),
    ];
    let kinds = proptest::sample::select(vec!["tiny-cnn", "mlp", "linear", "cnn"]);
    let parts = proptest::sample::select(vec!["iid", "dirichlet", "shards"]);
    let variants = proptest::sample::select(vec!["fedexp-equal", "fedacg-balanced"]);
    let algs = proptest::sample::select(fedrun::fl::algorithms::NAMES.to_vec());
    (
        (kinds, parts, variants, algs),
        (small.clone(), small.clone(), small.clone(), small.clone()),
        (
            prop_oneof![9 => 1i64..4, 1 => Just(0i64)],
            small,
            frac.clone(),
            frac,
        ),
    )
        .prop_map(
            |((k, p, v, alg), (clients, per, shards, train), (steps, batch, alpha, lr))| {
                vec![
                    format!("model.kind=\"{k}\""),
                    format!("data.partition=\"{p}\""),
                    format!("data.variant=\"{v}\""),
                    format!("fl.algorithm=\"{alg}\""),
                    format!("data.num_clients={clients}"),
                    // usually no more per round than there are clients
                    format!(
                        "fl.clients_per_round={}",
                        if per % 4 == 0 {
                            per
                        } else {
                            per.min(clients.max(1))
                        }
                    ),
                    format!("data.shards_per_client={shards}"),
                    format!("data.synthetic_train={train}"),
                    format!("local.steps={steps}"),
                    format!("local.batch_size={batch}"),
                    format!("data.alpha={alpha:e}"),
                    format!("local.lr={lr:e}"),
                    "fl.rounds=1".into(),
                    "model.mlp_hidden=8".into(),
                ]
            },
        )
}

/// Whether an error message names what is at fault: a key or value in backticks, a key of a
/// section by its dotted name, or a file.
fn names_something(msg: &str) -> bool {
    let key = ["data.", "model.", "fl.", "local.", "run."]
        .iter()
        .any(|s| msg.contains(s));
    key || msg.contains('`') || msg.contains('/')
}

#[test]
fn generated_runs_end_in_ok_or_a_named_error() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let d = TempDir::new("adversarial-runs");
    // specs that parsed (and so reached a run), and runs that completed
    let (reached, complete) = (AtomicUsize::new(0), AtomicUsize::new(0));
    runner(300)
        .run(&run_sets(), |sets| {
            let spec = match fedrun::schema::parse(&synthetic_spec(""), "generated", &sets) {
                Ok(spec) => spec,
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(names_something(&msg), "{sets:?}: {msg}");
                    return Ok(());
                }
            };
            reached.fetch_add(1, Ordering::Relaxed);
            let _ = std::fs::remove_dir_all(d.path().join("t"));
            let opts = RunOptions {
                out: d.path().to_path_buf(),
                force: true,
                memory_budget: Some(1 << 28),
                ..Default::default()
            };
            match run(&spec, &opts) {
                Ok(s) if s.status == Status::Complete => {
                    complete.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Ok(_) => {}
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(names_something(&msg), "{sets:?}: {msg}");
                }
            }
            // an error, a divergence or an early stop never leaves a folder that looks complete
            let status = Summary::read(&d.path().join("t")).map(|s| s.status);
            prop_assert!(status.map_or(true, |s| s != Status::Complete), "{sets:?}");
            Ok(())
        })
        .unwrap();
    // the generator is meant to reach runs mostly: a change that made every spec fail to parse
    // (or every run fail) would otherwise pass having tested nothing
    let (reached, complete) = (reached.into_inner(), complete.into_inner());
    assert!(
        reached >= 150,
        "only {reached} of 300 generated specs reached a run"
    );
    assert!(
        complete >= 50,
        "only {complete} of {reached} runs completed"
    );
}

/// A damaged copy of `good`: bytes flipped, cut, or garbage appended.
fn damage(good: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let n = good.len().max(1);
    prop_oneof![
        (0..n, 1u8..=255).prop_map({
            let g = good.clone();
            move |(i, x)| {
                let mut b = g.clone();
                let len = b.len();
                if len > 0 {
                    b[i % len] ^= x;
                }
                b
            }
        }),
        (0..n).prop_map({
            let g = good.clone();
            move |k| g[..k].to_vec()
        }),
        prop::collection::vec(any::<u8>(), 1..64)
            .prop_map(move |tail| [good.clone(), tail].concat()),
    ]
}

/// A valid checkpoint of a small run, as bytes.
fn a_checkpoint(d: &Path) -> Vec<u8> {
    let spec = fedrun::schema::parse(
        &synthetic_spec(""),
        "t",
        &["fl.algorithm=\"scaffold\"".into()],
    )
    .unwrap();
    let opts = RunOptions {
        out: d.to_path_buf(),
        ..Default::default()
    };
    run(&spec, &opts).unwrap();
    std::fs::read(d.join("t/checkpoint.bin")).unwrap()
}

#[test]
fn every_damaged_checkpoint_is_refused() {
    let d = TempDir::new("adversarial-ckpt");
    let good = a_checkpoint(d.path());
    let path = d.path().join("probe.bin");
    runner(2000)
        .run(&damage(good.clone()), |bytes| {
            std::fs::write(&path, &bytes).unwrap();
            let read = checkpoint::read(&path);
            prop_assert!(
                read.is_err() || bytes == good,
                "a damaged checkpoint was accepted"
            );
            Ok(())
        })
        .unwrap();
}

/// A small valid CIFAR-10 binary folder's file, and the folder.
fn cifar_dir(d: &Path) -> Vec<u8> {
    common::write_mini_cifar(d, 3);
    std::fs::read(d.join(cifar::TEST_FILE)).unwrap()
}

#[test]
fn the_cifar_reader_never_panics_on_damaged_files() {
    let d = TempDir::new("adversarial-cifar");
    let good = cifar_dir(d.path());
    runner(500)
        .run(&damage(good), |bytes| {
            std::fs::write(d.path().join(cifar::TEST_FILE), &bytes).unwrap();
            let _ = cifar::load_dir(d.path(), false);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_idx_reader_never_panics_on_damaged_files() {
    let d = TempDir::new("adversarial-idx");
    let images: Vec<u8> = (0..2 * 28 * 28).map(|i| (i % 251) as u8).collect();
    for (name, shape, body) in [
        (idx::TRAIN_IMAGES, vec![2, 28, 28], images.clone()),
        (idx::TRAIN_LABELS, vec![2], vec![3, 7]),
        (idx::TEST_IMAGES, vec![2, 28, 28], images),
        (idx::TEST_LABELS, vec![2], vec![1, 9]),
    ] {
        idx::write(&d.path().join(name), &shape, &body).unwrap();
    }
    let good = std::fs::read(d.path().join(idx::TEST_IMAGES)).unwrap();
    runner(1000)
        .run(&damage(good), |bytes| {
            std::fs::write(d.path().join(idx::TEST_IMAGES), &bytes).unwrap();
            let _ = idx::load_dir(d.path(), 0.5, 0.5);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_leaf_reader_never_panics_on_damaged_files() {
    let d = TempDir::new("adversarial-leaf");
    let f: leaf::LeafFile = leaf::LeafFile {
        users: vec!["a".into(), "b".into()],
        num_samples: vec![2, 1],
        user_data: [
            (
                "a".to_string(),
                leaf::UserData {
                    x: vec!["to be or not to be".into(); 2],
                    y: vec!["x".into(); 2],
                },
            ),
            (
                "b".to_string(),
                leaf::UserData {
                    x: vec!["that is the question".into()],
                    y: vec!["y".into()],
                },
            ),
        ]
        .into_iter()
        .collect(),
    };
    let path = d.path().join("train.json");
    leaf::write_file(&path, &f).unwrap();
    let good = std::fs::read(&path).unwrap();
    runner(500)
        .run(&damage(good), |bytes| {
            std::fs::write(&path, &bytes).unwrap();
            let _ = leaf::read_file(&path);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_plays_archive_reader_never_panics_on_damaged_archives() {
    let good =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/shakespeare/plays.tar.gz"))
            .unwrap();
    let good = good[..good.len().min(20_000)].to_vec();
    runner(500)
        .run(&damage(good), |bytes| {
            if let Ok(files) = fedrun::data::tar::read_archive_bytes(&bytes, "generated") {
                let _ = fedrun::data::plays::parse_collection(&files);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_csv_resume_never_panics() {
    let d = TempDir::new("adversarial-csv");
    let path = d.path().join("rounds.csv");
    let strategy = (prop::collection::vec(any::<u8>(), 0..300), 0u64..400);
    runner(1000)
        .run(&strategy, |(bytes, len)| {
            std::fs::write(&path, &bytes).unwrap();
            if let Ok(mut w) = CsvWriter::resume(&path, len) {
                let _ = w.sync();
            }
            let _ = fedrun::metrics::csv::read(&path);
            Ok(())
        })
        .unwrap();
}

/// The files of a run folder that fedrun reads back, in a fixed order.
const FOLDER_FILES: [&str; 5] = [
    "rounds.csv",
    "spec.toml",
    "summary.json",
    "run.json",
    "checkpoint.bin",
];

/// The files of folder `dir` (those of [`FOLDER_FILES`] it has).
fn snapshot(dir: &Path) -> Vec<(usize, Vec<u8>)> {
    FOLDER_FILES
        .iter()
        .enumerate()
        .filter_map(|(i, f)| std::fs::read(dir.join(f)).ok().map(|b| (i, b)))
        .collect()
}

/// Write `files` into a fresh `dir`.
fn restore(dir: &Path, files: &[(usize, Vec<u8>)]) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    for (i, b) in files {
        std::fs::write(dir.join(FOLDER_FILES[*i]), b).unwrap();
    }
}

/// A text file with a line given twice (a duplicated key in `spec.toml` or `summary.json`, a
/// duplicated row in `rounds.csv`), or one comma-separated cell replaced by `NaN`, `inf` or
/// `-inf` (a CSV cell; elsewhere, a value that is not one).
fn edited_text(good: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let text = String::from_utf8_lossy(&good).into_owned();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len().max(1);
    let twice = {
        let lines = lines.clone();
        (0..n).prop_map(move |k| {
            let mut l = lines.clone();
            if let Some(line) = l.get(k).cloned() {
                l.insert(k, line);
            }
            (l.join("\n") + "\n").into_bytes()
        })
    };
    let special = prop::sample::select(vec!["NaN", "inf", "-inf"]);
    let cell = (0..n, 0usize..16, special).prop_map(move |(k, c, v)| {
        let mut l = lines.clone();
        if let Some(line) = l.get_mut(k) {
            let mut cells: Vec<&str> = line.split(',').collect();
            let c = c % cells.len();
            cells[c] = v;
            *line = cells.join(",");
        }
        (l.join("\n") + "\n").into_bytes()
    });
    prop_oneof![twice, cell]
}

/// One file of `good` damaged (a byte flipped, cut, garbage appended, a line twice, a cell
/// `NaN` or infinite) or replaced by the same file of `other` (another run's folder): (which
/// file, its new bytes).
fn damaged_folder(
    good: &[(usize, Vec<u8>)],
    other: &[(usize, Vec<u8>)],
) -> impl Strategy<Value = (usize, Vec<u8>)> + use<> {
    let mut ways: Vec<BoxedStrategy<(usize, Vec<u8>)>> = Vec::new();
    for (i, b) in good {
        let i = *i;
        ways.push(damage(b.clone()).prop_map(move |b| (i, b)).boxed());
        if FOLDER_FILES[i] != "checkpoint.bin" {
            ways.push(edited_text(b.clone()).prop_map(move |b| (i, b)).boxed());
        }
        if let Some((_, o)) = other.iter().find(|(j, _)| *j == i) {
            ways.push(Just((i, o.clone())).boxed());
        }
    }
    proptest::strategy::Union::new(ways)
}

/// A small run of `rounds` rounds with `seed` in `out`/t, stopped after `stop_after` rounds
/// when given; its spec.
fn small_run(
    out: &Path,
    seed: u64,
    rounds: usize,
    stop_after: Option<usize>,
) -> fedrun::config::Spec {
    let sets = [
        format!("run.seed={seed}"),
        format!("fl.rounds={rounds}"),
        "fl.algorithm=\"scaffold\"".into(),
    ];
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &sets).unwrap();
    let opts = RunOptions {
        out: out.to_path_buf(),
        max_rounds_this_call: stop_after,
        ..Default::default()
    };
    run(&spec, &opts).unwrap();
    spec
}

/// `fedrun report`'s view of a finished folder with one file damaged or taken from another
/// run: refused, flagged (`damaged`, or not complete), or exactly the rows and spec the run
/// wrote; never another run's numbers or a cut file reported as complete.
#[test]
fn a_damaged_finished_folder_is_flagged_or_reads_as_written() {
    let d = TempDir::new("adversarial-finished");
    small_run(&d.path().join("a"), 1, 2, None);
    small_run(&d.path().join("b"), 2, 2, None);
    let dir = d.path().join("a/t");
    let good = snapshot(&dir);
    let other = snapshot(&d.path().join("b/t"));
    let truth = fedrun::analysis::runs::Run::load(&dir).unwrap();
    assert_eq!(truth.status, Status::Complete);
    runner(2000)
        .run(&damaged_folder(&good, &other), |(i, bytes)| {
            restore(&dir, &good);
            std::fs::write(dir.join(FOLDER_FILES[i]), &bytes).unwrap();
            if let Ok(r) = fedrun::analysis::runs::Run::load(&dir)
                && r.status == Status::Complete
            {
                prop_assert!(
                    r.rows == truth.rows && r.keys == truth.keys,
                    "{} damaged, and the folder reads as complete with other values",
                    FOLDER_FILES[i]
                );
            }
            Ok(())
        })
        .unwrap();
    // the positive control: the undamaged folder reads as complete with the run's own rows
    restore(&dir, &good);
    let r = fedrun::analysis::runs::Run::load(&dir).unwrap();
    assert!(r.status == Status::Complete && r.rows == truth.rows && r.keys == truth.keys);
}

/// 300 cases: folder `t` of a 3-round run (seed 1) stopped after `stop_after` rounds (all of
/// them when None), one file damaged or taken from the same run with seed 2, then the same
/// command run again: refused with a named error, or it ends with exactly the CSV of the
/// uninterrupted run.
fn rerun_ends_whole_or_is_refused(tag: &str, stop_after: Option<usize>) {
    let d = TempDir::new(tag);
    let spec = small_run(&d.path().join("full"), 1, 3, None);
    let truth = common::without_time(&d.path().join("full/t/rounds.csv"));
    small_run(&d.path().join("a"), 1, 3, stop_after);
    small_run(&d.path().join("b"), 2, 3, stop_after);
    let dir = d.path().join("a/t");
    let (good, other) = (snapshot(&dir), snapshot(&d.path().join("b/t")));
    let opts = RunOptions {
        out: d.path().join("a"),
        ..Default::default()
    };
    runner(300)
        .run(&damaged_folder(&good, &other), |(i, bytes)| {
            restore(&dir, &good);
            std::fs::write(dir.join(FOLDER_FILES[i]), &bytes).unwrap();
            if let Ok(s) = run(&spec, &opts) {
                prop_assert_eq!(s.status, Status::Complete);
                prop_assert!(
                    common::without_time(&dir.join("rounds.csv")) == truth,
                    "{} damaged, and the rerun ended with another rounds.csv",
                    FOLDER_FILES[i]
                );
            }
            Ok(())
        })
        .unwrap();
    // the positive control: the undamaged folder is run on (or kept) to the reference CSV, so a
    // rerun that refused every folder would fail here
    restore(&dir, &good);
    let s = run(&spec, &opts).expect("the undamaged folder is accepted");
    assert_eq!(s.status, Status::Complete);
    assert_eq!(common::without_time(&dir.join("rounds.csv")), truth);
}

/// A rerun of a finished folder with one file damaged or taken from another run: refused with
/// a named error, or it leaves (or rebuilds) exactly the CSV the run wrote.
#[test]
fn a_damaged_finished_folder_is_refused_or_kept_by_a_rerun() {
    rerun_ends_whole_or_is_refused("adversarial-rerun", None);
}

/// The resume of an interrupted folder with one file damaged or taken from another run:
/// refused with a named error, or it ends with exactly the CSV of the uninterrupted run; never
/// two runs spliced into one file.
#[test]
fn a_damaged_interrupted_folder_resumes_whole_or_is_refused() {
    rerun_ends_whole_or_is_refused("adversarial-resume", Some(1));
}

/// A published split file damaged: refused, or a valid partition (client ids 0..K−1 once each,
/// indices in range and disjoint); never a panic.
#[test]
fn a_damaged_partition_file_is_refused_or_valid() {
    let d = TempDir::new("adversarial-partition");
    let path = d.path().join("split.txt");
    let good = b"{0: [0, 3, 5], 1: [1, 2], 2: {4, 6}, 3: set()}".to_vec();
    // the positive control: the undamaged file is read as the partition it writes, so a reader
    // that refused every file would fail here
    std::fs::write(&path, &good).unwrap();
    let read = fedrun::data::partition::read_index_file(&path, 8).unwrap();
    let want: Vec<Vec<usize>> = vec![vec![0, 3, 5], vec![1, 2], vec![4, 6], vec![]];
    let mut sorted = read.clone();
    sorted.iter_mut().for_each(|c| c.sort_unstable());
    assert_eq!(sorted, want);
    runner(2000)
        .run(&damage(good), |bytes| {
            std::fs::write(&path, &bytes).unwrap();
            if let Ok(clients) = fedrun::data::partition::read_index_file(&path, 8) {
                let mut seen = [false; 8];
                for &i in clients.iter().flatten() {
                    prop_assert!(i < 8 && !seen[i], "index {i} out of range or repeated");
                    seen[i] = true;
                }
            }
            Ok(())
        })
        .unwrap();
}
