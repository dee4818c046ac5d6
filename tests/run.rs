//! End to end: runs through the library and the `fedrun` binary, determinism, outputs,
//! resume after SIGKILL, and bad input.

mod common;

use common::{TempDir, run_to_end, stop_after, synthetic_spec, write_mini_cifar};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;
use fedrun::metrics::summary::Summary;
use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fedrun"))
}

/// The model an algorithm's end-to-end tests run: FedMLB needs ResNet-18's stages (one step of 2
/// samples a round, which keeps its runs from being most of these tests' time).
fn model_for(alg: &str) -> Vec<String> {
    if alg == "fedmlb" {
        [
            "model.kind=\"resnet18\"",
            "local.batch_size=2",
            "local.steps=1",
        ]
        .map(String::from)
        .to_vec()
    } else {
        Vec::new()
    }
}

/// Every algorithm name, and the variants chosen by a key that build another algorithm (with
/// the keys that select them).
fn variants() -> Vec<(&'static str, Vec<String>)> {
    let mut v: Vec<(&str, Vec<String>)> = fedrun::fl::algorithms::NAMES
        .iter()
        .map(|a| (*a, model_for(a)))
        .collect();
    v.push(("mime", vec!["mime.base=\"sgdm\"".into()]));
    v.push((
        "mime",
        vec!["mime.base=\"sgdm\"".into(), "mime.lite=false".into()],
    ));
    v.push((
        "mime",
        vec![
            "mime.base=\"frozen-amsgrad\"".into(),
            "mime.lite=false".into(),
        ],
    ));
    v
}

/// The CSV without the elapsed-time column.
fn csv_without_time(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n")
        .collect()
}

#[test]
fn mini_cifar_two_rounds_from_the_binary_is_deterministic() {
    let d = TempDir::new("e2e-cifar");
    let data = d.path().join("cifar");
    std::fs::create_dir_all(&data).unwrap();
    write_mini_cifar(&data, 40);
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, "[data]\ndataset = \"cifar10\"\nnum_clients = 10\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 2\nclients_per_round = 3\n[local]\nsteps = 4\nbatch_size = 10\nnar = true\n[run]\nname = \"mini\"\n").unwrap();
    let mut outs = Vec::new();
    for i in 0..2 {
        let out = d.path().join(format!("out{i}"));
        let st = bin()
            .args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--data-dir")
            .arg(&data)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        let csv = out.join("mini/rounds.csv");
        let text = std::fs::read_to_string(&csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], fedrun::metrics::csv::HEADER);
        assert_eq!(lines.len(), 3, "header and 2 rows: {text}");
        assert!(lines[1].starts_with("1,") && lines[2].starts_with("2,"));
        assert!(out.join("mini/spec.toml").exists());
        assert_eq!(
            Summary::read(&out.join("mini")).unwrap().status,
            Status::Complete
        );
        outs.push(csv_without_time(&csv));
    }
    assert_eq!(outs[0], outs[1], "same seed, same CSV");
}

/// `spec.toml` records the data path used: the `--data-dir` given (relative here), made
/// absolute, so that the folder says which files it read; the run extended with the data
/// copied elsewhere (another node's disk) is the same run, and records the new place.
#[test]
fn spec_toml_records_the_data_dir_used_and_a_copy_elsewhere_continues_the_run() {
    let d = TempDir::new("data-path");
    for name in ["cifar", "copy"] {
        std::fs::create_dir_all(d.path().join(name)).unwrap();
        write_mini_cifar(&d.path().join(name), 40);
    }
    std::fs::write(d.path().join("spec.toml"), "[data]\ndataset = \"cifar10\"\nnum_clients = 10\n[model]\nkind = \"tiny-cnn\"\n[fl]\nclients_per_round = 3\n[local]\nsteps = 2\nbatch_size = 10\n[run]\nname = \"mini\"\n").unwrap();
    let recorded = |data: &str, rounds: usize| {
        let o = bin()
            .current_dir(d.path())
            .args([
                "--quiet",
                "--config",
                "spec.toml",
                "--out",
                "out",
                "--data-dir",
                data,
            ])
            .args(["--set", &format!("fl.rounds={rounds}")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let s = Summary::read(&d.path().join("out/mini")).unwrap();
        assert_eq!((s.status, s.rounds), (Status::Complete, rounds), "{s:?}");
        let text = std::fs::read_to_string(d.path().join("out/mini/spec.toml")).unwrap();
        let spec: toml::Value = toml::from_str(&text).unwrap();
        spec["data"]["path"].as_str().unwrap().to_string()
    };
    let abs = |name: &str| std::path::absolute(d.path().join(name)).unwrap();
    assert_eq!(recorded("cifar", 1), abs("cifar").display().to_string());
    assert_eq!(recorded("copy", 2), abs("copy").display().to_string());
}

/// A run resumed on other data is refused, before it writes anything: the checkpoint keeps the
/// loaded data's CRC-32. Two CIFAR batch files exchanged (the same images, another order and so
/// other clients' data) are refused naming the checkpoint; put back, the run resumes to its end.
#[test]
fn a_resume_on_other_data_is_refused() {
    let d = TempDir::new("other-data");
    let data = d.path().join("cifar");
    std::fs::create_dir_all(&data).unwrap();
    write_mini_cifar(&data, 40);
    let text = "[data]\ndataset = \"cifar10\"\nnum_clients = 10\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 4\nclients_per_round = 3\n[local]\nsteps = 2\nbatch_size = 10\n[run]\nname = \"mini\"\n";
    let spec = fedrun::schema::parse(text, "t", &[]).unwrap();
    let opts = |max: Option<usize>| RunOptions {
        out: d.path().join("out"),
        data_dir: Some(data.clone()),
        max_rounds_this_call: max,
        ..Default::default()
    };
    assert_eq!(
        run(&spec, &opts(Some(2))).unwrap().status,
        Status::Interrupted
    );
    let csv_p = d.path().join("out/mini/rounds.csv");
    let csv = std::fs::read(&csv_p).unwrap();
    let [a, b] = [0, 1].map(|i| data.join(fedrun::data::cifar::TRAIN_FILES[i]));
    let swap = || {
        let tmp = data.join("swap.bin");
        std::fs::rename(&a, &tmp).unwrap();
        std::fs::rename(&b, &a).unwrap();
        std::fs::rename(&tmp, &b).unwrap();
    };
    swap();
    let e = run(&spec, &opts(None)).expect_err("refused").to_string();
    assert!(
        e.contains("checkpoint.bin") && e.contains("other data") && e.contains("--force"),
        "{e}"
    );
    assert_eq!(std::fs::read(&csv_p).unwrap(), csv, "rounds.csv untouched");
    swap();
    let s = run(&spec, &opts(None)).unwrap();
    assert_eq!((s.status, s.rounds), (Status::Complete, 4), "{s:?}");
}

/// The summary line's pace is the whole run's; a resumed run whose last call went at another
/// pace says that one too (the "46.4 s (18.01 s/round)" for 3 rounds read as a sum that
/// did not add up).
#[test]
fn the_summary_line_gives_the_whole_runs_pace_and_the_last_calls() {
    let mut s = Summary {
        name: "t".into(),
        rounds: 3,
        elapsed_s: 46.4,
        seconds_per_round: 18.01,
        ..Default::default()
    };
    let line = s.line();
    assert!(
        line.contains("46.4 s (15.47 s/round; its last call 18.01 s/round)"),
        "{line}"
    );
    s.seconds_per_round = 15.4;
    let line = s.line();
    assert!(line.ends_with("46.4 s (15.47 s/round)"), "{line}");
}

#[test]
fn every_algorithm_with_and_without_nar_runs_and_is_deterministic() {
    for (alg, keys) in variants() {
        for nar in [false, true] {
            let text = synthetic_spec("");
            let mut set = vec![
                format!("fl.algorithm=\"{alg}\""),
                format!("local.nar={nar}"),
                "fl.global_lr=1.0".into(),
            ];
            set.extend(keys.iter().cloned());
            let spec = fedrun::schema::parse(&text, "t", &set).unwrap();
            let d = TempDir::new("alg");
            let mut csvs = Vec::new();
            for i in 0..2 {
                let opts = RunOptions {
                    out: d.path().join(format!("o{i}")),
                    ..Default::default()
                };
                let s = run(&spec, &opts).unwrap();
                assert_eq!(
                    s.status,
                    Status::Complete,
                    "{alg} {keys:?} nar={nar}: {}",
                    s.message
                );
                assert_eq!(s.rounds, 2);
                csvs.push(csv_without_time(&opts.out.join("t/rounds.csv")));
            }
            assert_eq!(csvs[0], csvs[1], "{alg} nar={nar} is deterministic");
            assert_eq!(csvs[0].lines().count(), 3);
        }
    }
}

#[test]
fn learning_happens_on_small_real_format_data() {
    let d = TempDir::new("learn");
    let data = d.path().join("cifar");
    std::fs::create_dir_all(&data).unwrap();
    write_mini_cifar(&data, 60);
    let text = "[data]\ndataset = \"cifar10\"\npartition = \"iid\"\nnum_clients = 6\naugmentation = \"none\"\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 10\nclients_per_round = 6\neval_every = 10\n[local]\nsteps = 5\nbatch_size = 10\nlr = 0.1\nweight_decay = 0.001\n[run]\nname = \"l\"\n";
    let spec = fedrun::schema::parse(text, "t", &[]).unwrap();
    let opts = RunOptions {
        out: d.path().join("o"),
        data_dir: Some(data),
        ..Default::default()
    };
    let s = run(&spec, &opts).unwrap();
    assert!(
        s.final_test_acc.unwrap() > 50.0,
        "10 colour classes are learnable: {:?}",
        s.final_test_acc
    );
}

#[test]
fn quickstart_runs_two_rounds_on_the_embedded_plays() {
    let d = TempDir::new("qs");
    let spec = fedrun::schema::parse(
        fedrun::config::QUICKSTART,
        "quickstart",
        &[
            "fl.rounds=2".into(),
            "fl.eval_every=1".into(),
            "local.steps=2".into(),
        ],
    )
    .unwrap();
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete);
    let text = std::fs::read_to_string(d.path().join("quickstart/rounds.csv")).unwrap();
    assert_eq!(text.lines().count(), 3);
}

#[test]
fn parameter_counts_of_the_models() {
    use fedrun::model::{Model, Shape};
    let img = Shape {
        channels: 3,
        side: 32,
        classes: 10,
    };
    let chars = Shape {
        channels: 0,
        side: 0,
        classes: 80,
    };
    // each model with a data set whose input it takes (the spec refuses the others)
    let spec = |kind: &str| {
        let data = match kind {
            "transformer" | "lstm" | "lstm-small" => "shakespeare",
            "mlp" | "mnist-cnn" => "mnist",
            _ => "cifar10",
        };
        let sets = [
            format!("model.kind=\"{kind}\""),
            format!("data.dataset=\"{data}\""),
        ];
        fedrun::schema::parse("", "t", &sets).unwrap().model
    };
    let count = |kind: &str, shape| {
        Model::build(&spec(kind), shape, Default::default())
            .unwrap()
            .layout()
            .total
    };
    assert_eq!(count("cnn", img), 744_330);
    assert_eq!(count("resnet18", img), 11_173_962);
    assert_eq!(count("transformer", chars), 1_220_432);
    assert_eq!(count("lstm", chars), 819_920);
    assert_eq!(count("lstm-small", chars), 133_520);
    assert_eq!(
        count(
            "mlp",
            Shape {
                channels: 1,
                side: 28,
                classes: 10
            }
        ),
        159_010
    );
    let mnist = Shape {
        channels: 1,
        side: 28,
        classes: 10,
    };
    assert_eq!(count("mnist-cnn", mnist), 21_840);
    // MOON's projection head (512 → 512 → 256, classifier 256 → 10) on ResNet-18
    let proj = fedrun::schema::parse(
        "",
        "t",
        &[
            "model.kind=\"resnet18\"".into(),
            "model.projection=256".into(),
        ],
    )
    .unwrap()
    .model;
    assert_eq!(
        Model::build(&proj, img, Default::default())
            .unwrap()
            .layout()
            .total,
        11_173_962 - 5130 + (512 * 512 + 512) + (512 * 256 + 256) + (256 * 10 + 10)
    );
}

#[test]
fn init_seed_fixes_the_initial_model_across_seeds() {
    use fedrun::fl::engine::Experiment;
    let initial = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let spec = fedrun::schema::parse(&common::synthetic_spec(""), "t", &sets).unwrap();
        let data = fedrun::data::load(&spec, None).unwrap();
        Experiment::new(&spec, data).unwrap().global
    };
    // by default the initial model follows run.seed
    assert_ne!(initial(&["run.seed=0"]), initial(&["run.seed=1"]));
    assert_eq!(
        initial(&["run.seed=1"]),
        initial(&["run.seed=1", "run.init_seed=1"])
    );
    // a fixed run.init_seed: the same initial model whatever run.seed
    let a = initial(&["run.seed=0", "run.init_seed=7"]);
    assert_eq!(a, initial(&["run.seed=1", "run.init_seed=7"]));
    assert_ne!(a, initial(&["run.seed=7", "run.init_seed=0"]));
    let e = fedrun::schema::parse("", "t", &["run.init_seed=-2".into()]).unwrap_err();
    assert!(e.to_string().contains("run.init_seed"), "{e}");
}

#[test]
fn transformer_layers_start_identical_when_asked() {
    use fedrun::config::Init;
    use fedrun::model::{Model, Shape, init};
    let spec = fedrun::schema::parse(
        "",
        "t",
        &[
            "model.kind=\"transformer\"".into(),
            "data.dataset=\"shakespeare\"".into(),
            "model.layers=2".into(),
        ],
    )
    .unwrap()
    .model;
    let m = Model::build(
        &spec,
        Shape {
            channels: 0,
            side: 0,
            classes: 80,
        },
        Default::default(),
    )
    .unwrap();
    let layout = m.layout().clone();
    let layer = |x: &[f32], i: usize| -> Vec<f32> {
        layout
            .tensors
            .iter()
            .filter(|t| t.path().contains(&format!("layers.{i}.")))
            .flat_map(|t| x[t.range()].to_vec())
            .collect()
    };
    let same = init::init_flat(
        &layout,
        &mut fedrun::rng::Rng::from_seed(0),
        true,
        Init::Pytorch,
    );
    assert_eq!(layer(&same, 0), layer(&same, 1));
    let diff = init::init_flat(
        &layout,
        &mut fedrun::rng::Rng::from_seed(0),
        false,
        Init::Pytorch,
    );
    assert_ne!(layer(&diff, 0), layer(&diff, 1));
}

/// `model.init = "leaf"`: TensorFlow's defaults as LEAF's FEMNIST CNN gets them: zero biases,
/// every weight inside its Glorot bound √(6/(fan_in + fan_out)) and filling it (the first
/// convolution 1 → 32 channels of 5 × 5: √(6/(25 + 800)) ≈ 0.0853; the dense layer 3136 → 2048:
/// √(6/5184) ≈ 0.0340).
#[test]
fn leaf_init_is_glorot_uniform_with_zero_biases() {
    use fedrun::config::Init;
    use fedrun::model::{Model, Shape, init};
    let sets = [
        "model.kind=\"femnist-cnn\"".into(),
        "data.dataset=\"femnist\"".into(),
    ];
    let spec = fedrun::schema::parse("", "t", &sets).unwrap().model;
    let shape = Shape {
        channels: 1,
        side: 28,
        classes: 62,
    };
    let m = Model::build(&spec, shape, Default::default()).unwrap();
    let layout = m.layout().clone();
    let x = init::init_flat(
        &layout,
        &mut fedrun::rng::Rng::from_seed(0),
        false,
        Init::Leaf,
    );
    let mut bounds = Vec::new();
    for t in &layout.tensors {
        let v = &x[t.range()];
        let max = v.iter().fold(0f32, |m, w| m.max(w.abs())) as f64;
        if t.name() == "bias" {
            assert_eq!(max, 0.0, "{}", t.path());
            continue;
        }
        let (fi, fo) = match t.shape.len() {
            2 => (t.shape[0], t.shape[1]),
            _ => {
                let k: usize = t.shape[2..].iter().product();
                (t.shape[1] * k, t.shape[0] * k)
            }
        };
        let bound = (6.0 / (fi + fo) as f64).sqrt();
        assert!(
            max <= bound && max > 0.95 * bound,
            "{}: {max} against {bound}",
            t.path()
        );
        bounds.push(bound);
    }
    assert!(
        (bounds[0] - (6.0f64 / 825.0).sqrt()).abs() < 1e-12,
        "{bounds:?}"
    );
    assert!(
        bounds
            .iter()
            .any(|b| (b - (6.0f64 / 5184.0).sqrt()).abs() < 1e-12),
        "{bounds:?}"
    );
    // the default stays PyTorch's: the first convolution's U(±1/√25)
    let p = init::init_flat(
        &layout,
        &mut fedrun::rng::Rng::from_seed(0),
        false,
        Init::Pytorch,
    );
    let conv1 = layout
        .tensors
        .iter()
        .find(|t| t.name() == "weight")
        .unwrap();
    let first = &p[conv1.range()];
    assert!(first.iter().fold(0f32, |m, w| m.max(w.abs())) > 0.18);
}

#[test]
fn killed_run_resumes_to_the_same_csv() {
    let d = TempDir::new("kill");
    let cfg = d.path().join("spec.toml");
    std::fs::write(
        &cfg,
        synthetic_spec("").replace("rounds = 2", "rounds = 12"),
    )
    .unwrap();
    let go = |out: &Path, more: &[&str]| {
        bin()
            .args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(out)
            .args(more)
            .output()
            .unwrap()
    };
    let full = d.path().join("full");
    let st = go(&full, &[]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    // start, kill with SIGKILL once a few rounds are done, resume
    let part = d.path().join("part");
    let mut child = bin()
        .args(["--quiet", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&part)
        .spawn()
        .unwrap();
    let csv = part.join("t/rounds.csv");
    let t0 = std::time::Instant::now();
    loop {
        let rows = std::fs::read_to_string(&csv)
            .map(|s| s.lines().count())
            .unwrap_or(0);
        if rows >= 5 || t0.elapsed().as_secs() > 120 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let s = Summary::read(&part.join("t")).unwrap();
    assert_eq!(
        s.status,
        Status::Interrupted,
        "a killed run never looks complete"
    );
    let st = go(&part, &[]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(
        csv_without_time(&full.join("t/rounds.csv")),
        csv_without_time(&csv)
    );
    assert_eq!(
        Summary::read(&part.join("t")).unwrap().status,
        Status::Complete
    );
    // a changed spec is refused, naming the key
    let st = go(&part, &["--set", "local.lr=0.5"]);
    assert!(!st.status.success());
    assert!(String::from_utf8_lossy(&st.stderr).contains("local.lr"));
}

#[test]
fn divergence_is_reported_with_its_round() {
    let d = TempDir::new("div");
    let spec = fedrun::schema::parse(
        &synthetic_spec(""),
        "t",
        &[
            "local.lr=1e30".into(),
            "local.max_norm=0".into(),
            "fl.rounds=5".into(),
        ],
    )
    .unwrap();
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Diverged);
    assert!(s.diverged_round.unwrap() <= 1, "{s:?}");
    let csv = std::fs::read_to_string(d.path().join("t/rounds.csv")).unwrap();
    assert!(!csv.contains("NaN") && !csv.contains("inf"), "{csv}");
    assert_eq!(
        Summary::read(&d.path().join("t")).unwrap().status,
        Status::Diverged
    );
}

/// Keys in the wrong place, with where they belong: (what, spec text, extra arguments, the
/// hint the error must give).
fn misplaced_key_cases(base: &str) -> Vec<(&'static str, String, Vec<&'static str>, &'static str)> {
    vec![
        (
            "extends after a table",
            format!("{base}\nextends = \"other.toml\"\n"),
            vec![],
            "`extends` belongs at the top of the file",
        ),
        (
            "a key without its table",
            base.to_string(),
            vec!["--set", "weight_decay=0.1"],
            "did you mean `local.weight_decay`",
        ),
    ]
}

/// Each bad input: a clear message, and no output folder.
/// Bad inputs: (what, spec text, extra arguments, what the error must name).
fn bad_cases(base: &str) -> Vec<(&'static str, String, Vec<&'static str>, &'static str)> {
    vec![
        ("malformed", "[data\nx = 1".into(), vec![], "line 1"),
        (
            "unknown key",
            base.replace("[local]\n", "[local]\nweight_decy = 0.1\n"),
            vec![],
            "did you mean `local.weight_decay`",
        ),
        (
            "wrong type",
            base.to_string(),
            vec!["--set", "local.lr=\"fast\""],
            "`local.lr` expects a number",
        ),
        (
            "alpha",
            base.to_string(),
            vec!["--set", "data.alpha=0"],
            "data.alpha",
        ),
        (
            "a float out of range",
            base.to_string(),
            vec!["--set", "local.lr=1e400"],
            "`local.lr` = 1e400 is outside the range of a 64-bit float",
        ),
        (
            "std 0",
            base.to_string(),
            vec!["--set", "data.std=0"],
            "`data.std` must be a positive number",
        ),
        (
            "a negative milestone",
            base.to_string(),
            vec!["--set", "local.lr_milestones=[5,-1]"],
            "`local.lr_milestones` must hold non-negative integers, got -1",
        ),
        (
            "too many per round",
            base.to_string(),
            vec!["--set", "fl.clients_per_round=11"],
            "exceeds",
        ),
        (
            "too many clients",
            base.to_string(),
            vec!["--set", "data.num_clients=1000"],
            "num_clients",
        ),
        (
            "batch 0",
            base.to_string(),
            vec!["--set", "local.batch_size=0"],
            "local.batch_size",
        ),
        (
            "unknown algorithm",
            base.to_string(),
            vec!["--set", "fl.algorithm=\"fedfoo\""],
            "scaffold",
        ),
        (
            "unknown model",
            base.to_string(),
            vec!["--set", "model.kind=\"vgg\""],
            "resnet18",
        ),
        (
            "missing data",
            base.to_string(),
            vec!["--data-dir", "/nonexistent/cifar"],
            "/nonexistent/cifar",
        ),
    ]
}

#[test]
fn bad_inputs_give_named_errors_and_write_nothing() {
    let d = TempDir::new("bad");
    let cifar = d.path().join("cifar");
    std::fs::create_dir_all(&cifar).unwrap();
    write_mini_cifar(&cifar, 20);
    let base = "[data]\ndataset = \"cifar10\"\nnum_clients = 10\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 1\nclients_per_round = 2\n[local]\nsteps = 1\nbatch_size = 4\n[run]\nname = \"bad\"\n";
    for (what, text, extra, needle) in bad_cases(base).into_iter().chain(misplaced_key_cases(base))
    {
        let cfg = d.path().join("spec.toml");
        std::fs::write(&cfg, &text).unwrap();
        let out = d.path().join("out");
        let mut cmd = bin();
        cmd.args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out);
        if !extra.contains(&"--data-dir") {
            cmd.arg("--data-dir").arg(&cifar);
        }
        let o = cmd.args(&extra).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{what}: should fail");
        assert!(
            err.contains(needle),
            "{what}: message {err:?} lacks {needle:?}"
        );
        assert!(!out.exists(), "{what}: an output folder was created");
    }
}

#[test]
fn damaged_data_and_an_unwritable_folder_give_named_errors() {
    let d = TempDir::new("damaged");
    let cifar = d.path().join("cifar");
    std::fs::create_dir_all(&cifar).unwrap();
    write_mini_cifar(&cifar, 20);
    let base = "[data]\ndataset = \"cifar10\"\nnum_clients = 10\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 1\nclients_per_round = 2\n[local]\nsteps = 1\nbatch_size = 4\n[run]\nname = \"bad\"\n";
    // a truncated CIFAR file, and a corrupt LEAF JSON
    let p = cifar.join("data_batch_2.bin");
    std::fs::write(&p, [1u8; 100]).unwrap();
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, base).unwrap();
    let o = bin()
        .args(["--quiet", "--config"])
        .arg(&cfg)
        .arg("--data-dir")
        .arg(&cifar)
        .arg("--out")
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("data_batch_2.bin"));
    assert!(!d.path().join("out").exists());
    let leaf = d.path().join("leaf");
    std::fs::create_dir_all(&leaf).unwrap();
    std::fs::write(leaf.join("train.json"), "{not json").unwrap();
    std::fs::write(leaf.join("test.json"), "{}").unwrap();
    let o = bin()
        .args([
            "--quiet",
            "--set",
            "data.dataset=\"leaf\"",
            "--set",
            "data.partition=\"natural\"",
            "--data-dir",
        ])
        .arg(&leaf)
        .arg("--out")
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("train.json") && err.contains("LEAF"), "{err}");
    assert!(!d.path().join("out").exists());
    // an output folder that is not writable
    let good = d.path().join("cifar-good");
    std::fs::create_dir_all(&good).unwrap();
    write_mini_cifar(&good, 20);
    let ro = d.path().join("ro");
    std::fs::write(&ro, "a file, not a folder").unwrap();
    let o = bin()
        .args(["--quiet", "--config"])
        .arg(&cfg)
        .arg("--data-dir")
        .arg(&good)
        .arg("--out")
        .arg(&ro)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("cannot create output folder") && err.contains("ro"),
        "{err}"
    );
}

#[test]
fn check_prints_the_resolved_spec() {
    let o = bin()
        .args(["check", "--set", "local.weight_decay=0.05"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let spec = fedrun::schema::parse(&text, "printed", &[]).unwrap();
    assert_eq!(spec.local.weight_decay, 0.05);
    assert!(text.contains("max_norm") && text.contains("[run]"));
}

#[test]
fn same_csv_with_one_or_two_threads() {
    let d = TempDir::new("threads");
    let cfg = d.path().join("spec.toml");
    std::fs::write(
        &cfg,
        synthetic_spec("").replace("kind = \"tiny-cnn\"", "kind = \"cnn\""),
    )
    .unwrap();
    let mut csvs = Vec::new();
    for threads in ["1", "2"] {
        let out = d.path().join(format!("o{threads}"));
        let st = bin()
            .env("RAYON_NUM_THREADS", threads)
            .args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        csvs.push(csv_without_time(&out.join("t/rounds.csv")));
    }
    assert_eq!(csvs[0], csvs[1]);
}

#[test]
fn every_shipped_config_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut n = 0;
    for dir in [
        root.clone(),
        root.join("paper"),
        root.join("fedacg"),
        root.join("fedlamb"),
    ] {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "toml") {
                fedrun::schema::load(&e.path(), &[])
                    .unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
                n += 1;
            }
        }
    }
    assert!(n >= 40, "{n} configs");
}

#[test]
fn client_parallel_training_gives_the_sequential_csv() {
    let d = TempDir::new("workers");
    let mut csvs = Vec::new();
    for w in [1, 2] {
        let spec = fedrun::schema::parse(
            &synthetic_spec(""),
            "t",
            &[
                format!("run.client_workers={w}"),
                "fl.algorithm=\"scaffold\"".into(),
                "local.nar=true".into(),
            ],
        )
        .unwrap();
        let opts = RunOptions {
            out: d.path().join(format!("w{w}")),
            ..Default::default()
        };
        assert_eq!(run(&spec, &opts).unwrap().status, Status::Complete);
        csvs.push(csv_without_time(&opts.out.join("t/rounds.csv")));
    }
    assert_eq!(csvs[0], csvs[1]);
}

#[test]
fn quickstart_runs_from_any_directory_with_the_embedded_plays() {
    let d = TempDir::new("anywhere");
    let o = bin()
        .current_dir(d.path())
        .args(["--quiet", "--set", "fl.rounds=1", "--set", "local.steps=1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.path().join("results/quickstart/rounds.csv").exists());
    // it ends with a picture of its accuracy curve beside the CSV, and says where
    let png = d.path().join("results/quickstart/accuracy.png");
    let bytes = std::fs::read(&png).expect("accuracy.png");
    assert_eq!(&bytes[1..4], b"PNG");
    assert!(String::from_utf8_lossy(&o.stdout).contains("accuracy.png"));
}

#[test]
fn fedrun_kernels_and_burn_ops_learn_alike() {
    // 3 rounds of the FedExP CNN with fedrun's kernels and with burn's reference ops: the
    // same run up to float rounding, so the test accuracies agree within 0.5 points.
    let d = TempDir::new("kernels");
    let cfg = d.path().join("spec.toml");
    std::fs::write(
        &cfg,
        synthetic_spec("")
            .replace("kind = \"tiny-cnn\"", "kind = \"cnn\"")
            .replace("rounds = 2", "rounds = 3")
            .replace("synthetic_train = 24", "synthetic_train = 200")
            .replace("synthetic_test = 40", "synthetic_test = 1000")
            .replace("steps = 3", "steps = 10")
            .replace("clients_per_round = 2", "clients_per_round = 4")
            .replace("augmentation = \"batch\"", "augmentation = \"none\"")
            .replace("weight_decay = 0.01", "weight_decay = 0.0"),
    )
    .unwrap();
    let mut acc = Vec::new();
    for kernels in ["fedrun", "burn"] {
        let out = d.path().join(kernels);
        let st = bin()
            .args(["--quiet", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .args(["--set", &format!("run.kernels=\"{kernels}\"")])
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        let csv = std::fs::read_to_string(out.join("t/rounds.csv")).unwrap();
        let last = csv.lines().last().unwrap().to_string();
        acc.push(last.split(',').nth(1).unwrap().parse::<f64>().unwrap());
    }
    assert!(
        acc[0] > 20.0,
        "the CNN must learn the synthetic classes: {acc:?}"
    );
    assert!((acc[0] - acc[1]).abs() <= 0.5, "test accuracy {acc:?}");
}

#[test]
fn every_algorithm_resumes_with_its_state_to_the_same_csv() {
    for (alg, keys) in variants() {
        let nar = alg.len() % 2 == 0; // half of them with FedNAR
        let text = synthetic_spec("").replace("rounds = 2", "rounds = 4");
        let mut set = vec![
            format!("fl.algorithm=\"{alg}\""),
            format!("local.nar={nar}"),
        ];
        set.extend(keys.iter().cloned());
        let spec = fedrun::schema::parse(&text, "t", &set).unwrap();
        let d = TempDir::new("resume-alg");
        let (full, part) = (d.path().join("full"), d.path().join("part"));
        run_to_end(&spec, &full).unwrap();
        stop_after(&spec, &part, 2);
        assert_eq!(run_to_end(&spec, &part).unwrap().status, Status::Complete);
        assert_eq!(
            csv_without_time(&full.join("t/rounds.csv")),
            csv_without_time(&part.join("t/rounds.csv")),
            "{alg} {keys:?} (nar={nar}) resumed from round 2"
        );
    }
}

#[test]
fn a_run_asked_for_more_or_fewer_rounds_continues_from_its_checkpoint() {
    // A complete 2-round run asked for 4 is extended; the CSV equals a 4-round run's. A run
    // checkpointed at round 2 of 4 and asked for 2 finishes there, as a 2-round run would.
    let spec = |rounds: usize| {
        fedrun::schema::parse(
            &synthetic_spec(""),
            "t",
            &[
                format!("fl.rounds={rounds}"),
                "fl.algorithm=\"fedavgm\"".into(),
            ],
        )
        .unwrap()
    };
    let d = TempDir::new("extend");
    let opts = |dir: &str, max| RunOptions {
        out: d.path().join(dir),
        max_rounds_this_call: max,
        ..Default::default()
    };
    run(&spec(4), &opts("four", None)).unwrap();
    run(&spec(2), &opts("two", None)).unwrap();

    assert_eq!(run(&spec(2), &opts("ext", None)).unwrap().rounds, 2);
    let s = run(&spec(4), &opts("ext", None)).unwrap();
    assert_eq!((s.status.as_str(), s.rounds), ("complete", 4));
    let csv = |dir: &str| csv_without_time(&d.path().join(dir).join("t/rounds.csv"));
    assert_eq!(csv("ext"), csv("four"), "extended from 2 to 4 rounds");
    let spec_file = std::fs::read_to_string(d.path().join("ext/t/spec.toml")).unwrap();
    assert!(spec_file.contains("rounds = 4"), "{spec_file}");

    assert_eq!(
        run(&spec(4), &opts("cut", Some(2))).unwrap().status,
        Status::Interrupted
    );
    let s = run(&spec(2), &opts("cut", None)).unwrap();
    assert_eq!((s.status.as_str(), s.rounds), ("complete", 2));
    assert_eq!(csv("cut"), csv("two"), "stopped at 2 of 4, finished as 2");

    // fewer rounds than already run is refused, naming the key
    let e = run(&spec(1), &opts("ext", None)).unwrap_err().to_string();
    assert!(e.contains("fl.rounds"), "{e}");
}

/// A data set without test samples is refused before anything is written, instead of running
/// to `complete` at 0.00 %.
#[test]
fn an_empty_test_set_is_refused() {
    let d = TempDir::new("no-test");
    let spec =
        fedrun::schema::parse(&synthetic_spec(""), "t", &["data.synthetic_test=0".into()]).unwrap();
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let e = run(&spec, &opts).expect_err("refused").to_string();
    assert!(e.contains("the test set is empty"), "{e}");
    assert!(!d.path().join("t").exists(), "a run folder was made");
}

/// A name fedrun turns into a path is one plain component: a newline, a tab, another control
/// character, a separator, `.` and `..` are refused by name (a sweep point's name is its
/// `run.name`, so the same rule holds there), and the error shows the character escaped.
#[test]
fn names_that_become_paths_are_plain_components() {
    for bad in ["a\nb", "a\tb", "a\u{1b}b", "a/b", "a\\b", ".", "..", ""] {
        let e = fedrun::schema::parse(
            &common::synthetic_spec(""),
            "t",
            &[format!("run.name={}", toml::Value::String(bad.into()))],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("key `run.name` must be a plain folder name") && !e.contains('\n'),
            "{bad:?}: {e}"
        );
    }
    for good in ["fednar_cnn", "a.b-c+d", "wd=0.05"] {
        fedrun::schema::parse(
            &common::synthetic_spec(""),
            "t",
            &[format!("run.name={}", toml::Value::String(good.into()))],
        )
        .unwrap();
    }
}

/// `fedrun tune` refuses flex, naming `run.backend`; a build without the kernel cache refuses
/// `--import`, naming the feature, and one with it refuses a file that is no bundle, naming it.
#[test]
fn tune_refuses_what_it_cannot_do_and_says_why() {
    let out = bin().args(["tune"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run.backend") && err.contains("flex"), "{err}");
    let d = TempDir::new("tune-import");
    let f = d.path().join("not-a-bundle.db");
    std::fs::write(&f, b"plain text, not a bundle").unwrap();
    let out = bin().arg("tune").arg("--import").arg(&f).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "kernel-cache") {
        assert!(err.contains("not-a-bundle.db"), "{err}");
    } else {
        assert!(err.contains("--features gpu"), "{err}");
    }
}

/// `--resume` keeps a run's folder and `--force` discards it: given both, fedrun refuses and
/// names them, rather than rerunning a finished run from scratch.
#[test]
fn resume_and_force_conflict() {
    let o = bin().args(["--resume", "--force"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--resume") && err.contains("--force"), "{err}");
}

/// `check`'s data probe finds LEAF's JSON files where the readers do: in `train/` and `test/`,
/// or side by side as LEAF's scripts write them (`all_data_*_train_*.json` beside
/// `all_data_*_test_*.json`, the pair it refused); a folder with neither is refused.
#[test]
fn check_finds_leafs_flat_json_pair_as_the_run_does() {
    let d = TempDir::new("leaf-flat");
    let check = |dir: &Path| {
        bin()
            .args(["check", "--set", "data.dataset=\"leaf\"", "--data-dir"])
            .arg(dir)
            .output()
            .unwrap()
    };
    let flat = d.path().join("flat");
    std::fs::create_dir_all(&flat).unwrap();
    for f in [
        "all_data_0_niid_0_keep_0_train_9.json",
        "all_data_0_niid_0_keep_0_test_9.json",
    ] {
        std::fs::write(flat.join(f), "{}").unwrap();
    }
    let o = check(&flat);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("1 train, 1 test"), "{out}");
    let nested = d.path().join("nested");
    for part in ["train", "test"] {
        std::fs::create_dir_all(nested.join(part)).unwrap();
        std::fs::write(nested.join(part).join("a.json"), "{}").unwrap();
    }
    assert!(check(&nested).status.success());
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = check(&empty);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no train JSON files"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `check --data-dir` finds the Shakespeare plays where the run does, through the reader's own
/// path-finding: a folder of `.txt` plays passes (and trains), so does a folder holding
/// `plays.tar.gz`, and a folder without either fails in both with the same reason, naming the
/// folder.
#[test]
fn check_probes_the_shakespeare_plays_where_the_run_reads_them() {
    let d = TempDir::new("plays-probe");
    let plays = d.path().join("plays");
    std::fs::create_dir_all(&plays).unwrap();
    let check = |dir: &Path| {
        bin()
            .args(["check", "--set", "fl.rounds=1", "--data-dir"])
            .arg(dir)
            .output()
            .unwrap()
    };
    let empty = check(&plays);
    let err = String::from_utf8_lossy(&empty.stderr).to_string()
        + &String::from_utf8_lossy(&empty.stdout);
    assert!(!empty.status.success(), "{err}");
    assert!(
        err.contains("without a play") && err.contains("plays"),
        "{err}"
    );
    let run = bin()
        .args(["--quiet", "--set", "fl.rounds=1", "--data-dir"])
        .arg(&plays)
        .arg("--out")
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("without a play"));
    // the plays of the shipped archive, one .txt file each
    let tar = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/shakespeare/plays.tar.gz");
    let files = fedrun::data::tar::read_archive(&tar).unwrap();
    for (name, text) in files.iter().take(3) {
        let name = Path::new(name).file_name().unwrap();
        std::fs::write(plays.join(name).with_extension("txt"), text).unwrap();
    }
    let good = check(&plays);
    let out =
        String::from_utf8_lossy(&good.stdout).to_string() + &String::from_utf8_lossy(&good.stderr);
    assert!(good.status.success(), "{out}");
    assert!(out.contains("a folder of 3 plays"), "{out}");
    // a folder holding only plays.tar.gz (the repository's data/shakespeare) reads the archive
    let shipped = d.path().join("shipped");
    std::fs::create_dir_all(&shipped).unwrap();
    std::fs::copy(&tar, shipped.join("plays.tar.gz")).unwrap();
    let good = check(&shipped);
    let out =
        String::from_utf8_lossy(&good.stdout).to_string() + &String::from_utf8_lossy(&good.stderr);
    assert!(good.status.success(), "{out}");
    assert!(out.contains("a folder holding plays.tar.gz"), "{out}");
}

/// `check` is the run's own gate: a model no machine holds is refused by `check` as by the run,
/// naming the model's keys, and a spec that fits gets its memory estimate printed.
#[test]
fn check_refuses_what_the_run_refuses_and_prints_the_memory_estimate() {
    let o = bin()
        .args([
            "check",
            "--no-data",
            "--set",
            "model.d_model=65536",
            "--set",
            "model.d_ff=262144",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("model.d_model") && err.contains("TB"), "{err}");
    let ok = bin().args(["check", "--no-data"]).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(out.contains("# memory: about "), "{out}");
}

/// The folder's event file, asserted to be its only one.
fn event_file(dir: &Path) -> std::path::PathBuf {
    let mut events: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with(fedrun::metrics::tensorboard::PREFIX)
        })
        .collect();
    assert_eq!(events.len(), 1, "one event file: {events:?}");
    events.remove(0)
}

/// The rounds (steps) of the folder's TensorBoard scalars of `tag`, from its one event file.
fn tensorboard_steps(dir: &Path, tag: &str) -> Vec<u64> {
    let scalars = fedrun::metrics::tensorboard::read_scalars(&event_file(dir)).unwrap();
    (scalars.iter())
        .filter(|(_, t, _)| t == tag)
        .map(|(s, _, _)| *s)
        .collect()
}

/// TensorBoard shows each round once, as rounds.csv holds it: a resumed run writes its event
/// file anew from the rows it keeps (a row after the checkpoint, cut from the CSV, is not in
/// it), and a run that died before its first checkpoint (its rows, no checkpoint: kill -9)
/// says that it starts again and leaves no dead rows (the steps 1, 2, 1, 2, 3).
#[test]
fn tensorboard_shows_each_round_once_after_a_resume_and_a_restart() {
    let d = TempDir::new("tb-once");
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &["fl.rounds=4".into()]).unwrap();
    let opts = |max: Option<usize>| RunOptions {
        out: d.path().to_path_buf(),
        max_rounds_this_call: max,
        ..Default::default()
    };
    assert_eq!(
        run(&spec, &opts(Some(2))).unwrap().status,
        Status::Interrupted
    );
    let dir = d.path().join("t");
    // a row written after the checkpoint (a crash before the next one): cut on resume
    let csv_p = dir.join("rounds.csv");
    let mut csv = std::fs::read(&csv_p).unwrap();
    csv.extend_from_slice(b"3,99,1,1,0.05,0,0,0,1,,,0,0,1\n");
    std::fs::write(&csv_p, &csv).unwrap();
    assert_eq!(run(&spec, &opts(None)).unwrap().status, Status::Complete);
    assert_eq!(tensorboard_steps(&dir, "test_acc"), [1, 2, 3, 4]);
    let (_, rows) = fedrun::metrics::csv::read(&csv_p).unwrap();
    assert!(rows.iter().all(|r| r[1] != "99"), "the cut row");
    // killed before its first checkpoint: rows, no checkpoint and no finished summary
    std::fs::remove_file(dir.join("checkpoint.bin")).unwrap();
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let o = bin()
        .args(["--quiet", "--config"])
        .arg(&cfg)
        .args(["--out"])
        .arg(d.path())
        .args(["--set", "fl.rounds=3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("again from round 1") && err.contains("no checkpoint"),
        "{err}"
    );
    assert_eq!(tensorboard_steps(&dir, "test_acc"), [1, 2, 3]);
}

/// Each run writes TensorBoard's event file beside `rounds.csv`: every column of every row as a
/// scalar at its round, the records' CRCs whole (read back here without TensorBoard).
#[test]
fn a_run_writes_tensorboard_scalars_of_every_rounds_csv_column() {
    let d = TempDir::new("tensorboard");
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &["fl.rounds=3".into()]).unwrap();
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    assert_eq!(run(&spec, &opts).unwrap().status, Status::Complete);
    let dir = d.path().join("t");
    let events = [event_file(&dir)];
    let scalars = fedrun::metrics::tensorboard::read_scalars(&events[0]).unwrap();
    let (header, rows) = fedrun::metrics::csv::read(&dir.join("rounds.csv")).unwrap();
    assert_eq!(rows.len(), 3);
    let mut seen = 0;
    for row in &rows {
        let step: u64 = row[0].parse().unwrap();
        for (tag, cell) in header.iter().zip(row).skip(1) {
            let Ok(v) = cell.parse::<f64>() else {
                assert!(cell.is_empty(), "{tag}: {cell}");
                continue;
            };
            let found = scalars
                .iter()
                .find(|(s, t, _)| *s == step && t == tag)
                .unwrap_or_else(|| panic!("no scalar {tag} at round {step}"));
            assert_eq!(found.2, v as f32, "{tag} at round {step}");
            seen += 1;
        }
    }
    assert_eq!(seen, scalars.len(), "no scalar beyond the CSV's");
    // a damaged byte is caught
    let mut raw = std::fs::read(&events[0]).unwrap();
    let n = raw.len();
    raw[n - 7] ^= 1;
    std::fs::write(&events[0], raw).unwrap();
    assert!(fedrun::metrics::tensorboard::read_scalars(&events[0]).is_err());
}
