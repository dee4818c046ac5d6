//! The researcher's workflow: no setting ignored in silence, combinations that cannot run
//! refused before anything loads, algorithm aliases and "did you mean", reports that cannot
//! mislead, sweeps that say what failed.

mod common;

use common::{TempDir, synthetic_spec};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fedrun");

fn config(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(rel)
}

fn fedrun(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `fedrun check --no-data --config CFG --set ...` (the spec alone).
fn check(cfg: &Path, sets: &[&str]) -> Output {
    let mut c = Command::new(BIN);
    c.args(["check", "--no-data"]).arg("--config").arg(cfg);
    for s in sets {
        c.args(["--set", s]);
    }
    c.output().unwrap()
}

#[test]
fn a_set_key_the_run_will_not_read_is_refused_with_the_reason() {
    // the three settings of the issue, each of which took no effect in silence
    let cfg = config("fedlamb/mnist_fedsgd.toml");
    let o = check(
        &cfg,
        &["local.steps=2", "fedprox.mu=5", "local.lr_decay=0.5"],
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("`local.steps` is not read because `local.epochs = 1`")
            && e.contains("set `local.epochs = 0`"),
        "{e}"
    );
    assert!(
        e.contains("`fedprox.mu` is not read by `fl.algorithm = \"fedavg\"`"),
        "{e}"
    );
    assert!(
        e.contains("`local.lr_decay` is not read because `local.lr_schedule = \"step\"`"),
        "{e}"
    );
    // with the key that makes them read, the same overrides pass
    let ok = check(
        &cfg,
        &[
            "local.epochs=0",
            "local.steps=2",
            "fl.algorithm=\"fedprox\"",
        ],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
}

/// Keys of an algorithm's own tables that its settings leave unread are refused like any other
/// (the issue: `mime.lite` and `mime.momentum` under `mime.base = "amsgrad"`, `fedlamb.trust`
/// and `fedlamb.lambda` under Fed-AMS took no effect in silence); the algorithm says which.
#[test]
fn an_algorithms_own_keys_its_settings_leave_unread_are_refused() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "fedlamb/mnist_fedams.toml",
            &["fedlamb.trust=false"],
            "`fedlamb.trust` is not read by `fl.algorithm = \"fedams\"`",
        ),
        (
            "fedlamb/mnist_fedams.toml",
            &["fedlamb.lambda=0.01"],
            "`fedlamb.lambda` is not read by `fl.algorithm = \"fedams\"`",
        ),
        (
            "fedlamb/mnist_mime.toml",
            &["mime.lite=false"],
            "`mime.lite` is not read because `mime.base = \"amsgrad\"`",
        ),
        (
            "fedlamb/mnist_mime.toml",
            &["mime.momentum=0.5"],
            "`mime.momentum` is not read because `mime.base = \"amsgrad\"`",
        ),
        (
            "fedlamb/mnist_mimelite.toml",
            &["fedlamb.beta1=0.8"],
            "`fedlamb.beta1` is not read because `mime.base = \"sgdm\"`",
        ),
        (
            "fedlamb/mnist_fedlamb.toml",
            &["fedlamb.trust=false", "fedlamb.zero_rule=\"paper\""],
            "`fedlamb.zero_rule` is not read because `fedlamb.trust = false`",
        ),
    ];
    for (cfg, sets, why) in cases {
        let o = check(&config(cfg), sets);
        let e = stderr(&o);
        assert!(
            !o.status.success() && e.contains(why),
            "{cfg} {sets:?}: {e}"
        );
    }
    // where the setting reads them, the same keys pass
    for (cfg, sets) in [
        (
            "fedlamb/mnist_fedlamb.toml",
            &["fedlamb.trust=false", "fedlamb.lambda=0.01"][..],
        ),
        (
            "fedlamb/mnist_mimelite.toml",
            &["mime.lite=false", "mime.momentum=0.5"][..],
        ),
        ("fedlamb/mnist_mime.toml", &["fedlamb.beta1=0.8"][..]),
    ] {
        let o = check(&config(cfg), sets);
        assert!(o.status.success(), "{cfg} {sets:?}: {}", stderr(&o));
    }
}

#[test]
fn a_client_state_budget_for_an_algorithm_without_client_state_is_refused() {
    let set = ["run.client_state_mb=100"];
    let o = check(&config("cifar_fedavg.toml"), &set);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("`run.client_state_mb` is not read by `fl.algorithm = \"fedavg\"` (it keeps no per-client state)"),
        "{e}"
    );
    for cfg in ["cifar_scaffold.toml", "fedlamb/mnist_fedams.toml"] {
        let ok = check(&config(cfg), &set);
        assert!(ok.status.success(), "{cfg}: {}", stderr(&ok));
    }
}

#[test]
fn a_file_key_the_run_will_not_read_is_a_warning() {
    let d = TempDir::new("wf-warn");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("[fedprox]\nmu = 0.5\n")).unwrap();
    let o = check(&cfg, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("warning:") && e.contains("`fedprox.mu` is not read"),
        "{e}"
    );
    // the same key under the algorithm that reads it: no warning
    let o = check(&cfg, &["fl.algorithm=\"fedprox\""]);
    assert!(o.status.success());
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// fedrun's own output given back warns of nothing: a run folder's `spec.toml` writes every key,
/// most of them unread at their defaults; a shipped config's key at its default (the
/// Shakespeare configs' `data.train_fraction` under `data.dataset = "leaf"`) neither.
#[test]
fn a_run_folders_spec_or_a_key_at_its_default_gives_no_warning() {
    let d = TempDir::new("wf-own-spec");
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &[]).unwrap();
    let opts = fedrun::fl::engine::RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    fedrun::fl::engine::run(&spec, &opts).unwrap();
    let o = check(&d.path().join("t/spec.toml"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = check(
        &root.join("configs/shakespeare_fedavg.toml"),
        &["data.dataset=\"leaf\""],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// FedNAR's defaults (weight decay 0.05, clipping at 10, rate decay 0.998) are named once when a
/// user's config leaves them unset; a config that sets them (every shipped one) hears nothing.
#[test]
fn defaults_that_change_the_local_update_are_named_once() {
    let d = TempDir::new("wf-defaults");
    let cfg = d.path().join("own.toml");
    let own = synthetic_spec("").replace("weight_decay = 0.01\n", "");
    std::fs::write(&cfg, own).unwrap();
    let e = stderr(&check(&cfg, &[]));
    assert_eq!(e.matches("note:").count(), 1, "{e}");
    for named in [
        "local.weight_decay = 0.05",
        "local.max_norm = 10",
        "local.lr_decay = 0.998",
    ] {
        assert!(e.contains(named), "{named}: {e}");
    }
    let e = stderr(&check(
        &cfg,
        &["local.weight_decay=0.0", "local.max_norm=0.0"],
    ));
    assert!(
        e.contains("local.lr_decay = 0.998") && !e.contains("weight_decay"),
        "{e}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let e = stderr(&check(&root.join("configs/cifar_fednar.toml"), &[]));
    assert!(!e.contains("note:"), "{e}");
}

#[test]
fn check_refuses_every_combination_that_cannot_run() {
    let cifar = config("cifar_fedavg.toml");
    let mut cases = vec![
        (
            cifar.clone(),
            "model.kind=\"transformer\"",
            "needs a character data set",
        ),
        (
            cifar.clone(),
            "model.kind=\"lstm\"",
            "needs a character data set",
        ),
        (
            cifar.clone(),
            "model.kind=\"mnist-cnn\"",
            "model.kind = \"mnist-cnn\"",
        ),
        (
            cifar.clone(),
            "fl.algorithm=\"fedmlb\"",
            "needs model.kind = \"resnet18\"",
        ),
        (
            config("fedlamb/mnist_fedsgd.toml"),
            "data.partition=\"natural\"",
            "needs a data set with users",
        ),
        (
            config("shakespeare_fedavg.toml"),
            "model.kind=\"resnet18\"",
            "model.kind = \"resnet18\"",
        ),
    ];
    // a backend this build lacks (the test command's build has wgpu and cuda, not vulkan)
    let missing = [
        (cfg!(feature = "wgpu"), "run.backend=\"wgpu\""),
        (cfg!(feature = "vulkan"), "run.backend=\"vulkan\""),
        (cfg!(feature = "cuda"), "run.backend=\"cuda\""),
    ];
    if let Some(&(_, set)) = missing.iter().find(|(compiled, _)| !compiled) {
        cases.push((
            cifar.clone(),
            set,
            "not compiled into this binary (build with `cargo build --release --features gpu`",
        ));
    }
    for (cfg, set, expect) in cases {
        let o = check(&cfg, &[set]);
        assert!(!o.status.success(), "{set} passed check");
        assert!(stderr(&o).contains(expect), "{set}: {}", stderr(&o));
    }
    // and `sweep --emit` hands none of them to a scheduler
    let d = TempDir::new("wf-emit");
    let cmds = d.path().join("cmds.txt");
    let o = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&cifar)
        .args(["--grid", "model.kind=cnn,transformer", "--emit"])
        .arg(&cmds)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(!cmds.exists());
}

#[test]
fn every_algorithm_name_of_the_configs_is_accepted_and_typos_get_a_suggestion() {
    for (cfg, alias) in [
        ("fedlamb/mnist_fedsgd.toml", "fedsgd"),
        ("fedlamb/mnist_adpfed.toml", "adpfed"),
        ("fedlamb/mnist_mimelite.toml", "mimelite"),
    ] {
        let o = check(&config(cfg), &[&format!("fl.algorithm=\"{alias}\"")]);
        assert!(o.status.success(), "{alias}: {}", stderr(&o));
    }
    // an alias stands for keys; setting one of them otherwise is an error
    let o = check(
        &config("fedlamb/mnist_mimelite.toml"),
        &["fl.algorithm=\"mimelite\"", "mime.lite=false"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("mime.lite"), "{}", stderr(&o));
    let o = check(&config("cifar_fedavg.toml"), &["fl.algorithm=\"fedavgg\""]);
    assert!(
        stderr(&o).contains("did you mean \"fedavg\""),
        "{}",
        stderr(&o)
    );
    let o = fedrun(&["reprot"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("'report'"), "{}", stderr(&o));
    // check shows what the run will do: a key the run will not read is marked so, with why
    let o = check(&config("cifar_fedavg.toml"), &["local.epochs=5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let steps = out.lines().find(|l| l.starts_with("steps = ")).unwrap();
    assert!(
        steps.contains("# not read because `local.epochs = 5`"),
        "{steps}"
    );
    let batch = out
        .lines()
        .find(|l| l.starts_with("batch_size = "))
        .unwrap();
    assert!(!batch.contains("not read"), "{batch}");
    // FedNAR without a clip (or a decay) is the baseline's step: local.nar is not read
    let o = check(
        &config("cifar_fedavg.toml"),
        &["local.max_norm=0", "local.nar=true"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("local.max_norm = 0"), "{}", stderr(&o));
    let o = check(
        &config("cifar_fedavg.toml"),
        &["local.weight_decay=0", "local.nar=true"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("local.weight_decay = 0"),
        "{}",
        stderr(&o)
    );
    // what a FedNAR user and a GPU user need to hear, not the nearest name
    let o = check(&config("cifar_fedavg.toml"), &["fl.algorithm=\"fednar\""]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("local.nar = true"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("fedntd"), "{}", stderr(&o));
    let o = check(&config("cifar_fedavg.toml"), &["run.backend=\"gpu\""]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cuda") && stderr(&o).contains("--features gpu"),
        "{}",
        stderr(&o)
    );
}

/// A run folder written by hand: the synthetic spec with `sets`, a CSV with `values` of the
/// metric column `col` (0: test_acc, 1: test_loss) at rounds 1, 2, …, and a summary.
fn fake_run(dir: &Path, sets: &[&str], values: &[f64], loss: bool, status: &str) {
    let rows: Vec<(f64, f64)> = values
        .iter()
        .map(|&v| if loss { (50.0, v) } else { (v, 1.0) })
        .collect();
    let status = fedrun::metrics::summary::Status::from_name(status).unwrap();
    common::write_run(dir, sets, &rows, status, 1);
}

fn report(dirs: &[PathBuf], extra: &[&str]) -> Output {
    Command::new(BIN)
        .arg("report")
        .args(dirs)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_round_past_a_runs_end_is_a_dash_not_the_last_value() {
    let d = TempDir::new("wf-past");
    let a = d.path().join("a");
    fake_run(&a, &[], &[10.0, 20.0, 30.0, 40.0], false, "complete");
    // the plain EMA from 0 (`--no-debias`), whose values are easy to check by hand
    let o = report(&[a], &["--at", "4,10", "--format", "csv", "--no-debias"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    let row: Vec<&str> = t.lines().nth(1).unwrap().split(',').collect();
    let header: Vec<&str> = t.lines().next().unwrap().split(',').collect();
    let at = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    // EMA(0.9) of 10, 20, 30, 40 after 4 rounds: 1, 2.9, 5.61, 9.049
    assert_eq!(at("EMA@4"), "9.05", "{t}");
    assert_eq!(at("EMA@10"), "", "{t}");
    let md = report(&[d.path().join("a")], &["--at", "4,10", "--no-debias"]);
    let md = String::from_utf8_lossy(&md.stdout).into_owned();
    assert!(md.contains("| 9.05 | – |"), "{md}");
    assert!(md.contains("fewer rounds than asked"), "{md}");
    // a folder of a fedrun that counted rounds from 0 reads the same
    let legacy = d.path().join("legacy");
    let rows: Vec<(f64, f64)> = [10.0, 20.0, 30.0, 40.0].iter().map(|&a| (a, 1.0)).collect();
    common::write_run(
        &legacy,
        &[],
        &rows,
        fedrun::metrics::summary::Status::Complete,
        0,
    );
    let o = report(&[legacy], &["--at", "4,5", "--no-debias"]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(t.contains("| 9.05 | – |"), "{t}");
}

#[test]
fn a_loss_is_better_lower_in_best_and_targets() {
    let d = TempDir::new("wf-loss");
    let a = d.path().join("a");
    fake_run(&a, &[], &[2.0, 1.0, 1.5], true, "complete");
    let o = report(
        &[a],
        &[
            "--metric",
            "test_loss",
            "--ema",
            "0",
            "--targets",
            "1.2",
            "--format",
            "csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    let header = t.lines().next().unwrap();
    assert!(header.contains("best (min) test_loss"), "{t}");
    let row = t.lines().nth(1).unwrap();
    // final 1.5, best 1.0; with β = 0 the EMA is the curve: 1.2 is first reached at round 2
    assert!(row.starts_with("fedavg,1,complete,1.50,,1.00,,"), "{t}");
    assert!(row.ends_with(",2"), "{t}");
}

#[test]
fn an_ema_outside_zero_one_is_refused_and_statuses_are_shown() {
    let d = TempDir::new("wf-ema");
    let a = d.path().join("a");
    fake_run(&a, &[], &[10.0, 20.0], false, "diverged");
    let o = report(std::slice::from_ref(&a), &["--ema", "1.5"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--ema"), "{}", stderr(&o));
    let o = report(&[a], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("| 1 diverged |"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn a_run_in_progress_is_reported_as_running() {
    let d = TempDir::new("wf-running");
    let a = d.path().join("a");
    fake_run(&a, &[], &[10.0], false, "interrupted");
    let lock = fedrun::fl::engine::RunLock::acquire(&a).unwrap();
    let o = report(std::slice::from_ref(&a), &[]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("| 1 running |"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    drop(lock);
    // a child that another test of this process forks in the meantime holds a copy of the lock
    // until its exec closes it: wait for that moment to pass (never more than a few seconds)
    let t = std::time::Instant::now();
    while fedrun::fl::engine::RunLock::is_held(&a) && t.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = report(&[a], &[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("| 1 interrupted |"));
}

#[test]
fn a_sweep_whose_points_fail_exits_non_zero_and_prints_their_errors() {
    let d = TempDir::new("wf-fail");
    let cfg = d.path().join("spec.toml");
    // the CIFAR-10 files are missing: check passes, each run fails when it loads the data
    let text = synthetic_spec("").replace(
        "dataset = \"synthetic\"",
        "dataset = \"cifar10\"\npath = \"/nonexistent/cifar\"",
    );
    std::fs::write(&cfg, text).unwrap();
    let o = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&cfg)
        .args(["--grid", "run.seed=0,1", "--out"])
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let all = String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(&o);
    assert!(all.contains("2 of 2 points did not finish"), "{all}");
    assert!(all.matches("/nonexistent/cifar").count() >= 2, "{all}");
}

#[test]
fn a_sweep_axis_that_repeats_a_run_is_refused() {
    let d = TempDir::new("wf-repeat");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    for grid in ["run.seed=0,0", "local.lr=0.1,0.10"] {
        let o = Command::new(BIN)
            .args(["sweep", "--config"])
            .arg(&cfg)
            .args(["--grid", grid, "--emit"])
            .arg(d.path().join("cmds.txt"))
            .output()
            .unwrap();
        assert!(!o.status.success(), "{grid}");
        assert!(stderr(&o).contains("are the same run"), "{}", stderr(&o));
    }
}

#[test]
fn a_common_set_goes_to_the_sweep_points_that_read_it() {
    let d = TempDir::new("wf-common-set");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let cmds = d.path().join("cmds.txt");
    let emit = |set: &str| {
        Command::new(BIN)
            .args(["sweep", "--config"])
            .arg(&cfg)
            .args([
                "--set",
                set,
                "--grid",
                "fl.algorithm=fedavg,fedavgm",
                "--emit",
            ])
            .arg(&cmds)
            .output()
            .unwrap()
    };
    // FedAvgM reads its momentum, FedAvg does not: the FedACG check's own command line
    let o = emit("fedavgm.momentum=0.4");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("applies to 1 of 2 points"),
        "{}",
        stderr(&o)
    );
    let text = std::fs::read_to_string(&cmds).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    for l in lines {
        assert_eq!(
            l.contains("fedavgm.momentum=0.4"),
            l.contains("algorithm=fedavgm"),
            "{l}"
        );
    }
    // a key no point reads is still refused, with the reason
    let o = emit("fedprox.mu=5");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no point of the sweep reads it"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_sweep_leaves_a_point_that_another_process_is_running_alone() {
    let d = TempDir::new("wf-held");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let point = d.path().join("out").join("t__seed=0");
    std::fs::create_dir_all(&point).unwrap();
    let log = d.path().join("out").join("t__seed=0.log");
    std::fs::write(&log, "the other process's log\n").unwrap();
    // this test process stands for a second sweep running the point
    let _held = fedrun::fl::engine::RunLock::acquire(&point).unwrap();
    let o = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&cfg)
        .args(["--grid", "run.seed=0", "--out"])
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("running in another process, skipped"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "the other process's log\n"
    );
    assert!(!point.join("rounds.csv").exists());
}

/// A sweep point run again (resumed, or extended) appends to its `.log`: what the earlier
/// invocation wrote (how it ended) stays, after it a line that says a new invocation starts.
#[test]
fn a_sweep_points_log_keeps_its_earlier_invocations() {
    let d = TempDir::new("wf-log");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let sweep = |rounds: usize| {
        let o = Command::new(BIN)
            .args(["sweep", "--config"])
            .arg(&cfg)
            .args(["--grid", "run.seed=0", "--out"])
            .arg(d.path().join("out"))
            .args(["--set", &format!("fl.rounds={rounds}")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    sweep(1);
    sweep(2);
    let log = std::fs::read_to_string(d.path().join("out").join("t__seed=0.log")).unwrap();
    assert_eq!(log.matches("[sweep] this point starts").count(), 2, "{log}");
    let (first, second) = log.split_at(log.rfind("[sweep] this point starts").unwrap());
    assert!(first.contains("complete after 1 rounds"), "{log}");
    assert!(second.contains("complete after 2 rounds"), "{log}");
}

/// `sweep --dry-run` runs nothing: it times each point not yet complete as `check --time` does
/// and gives the whole sweep's estimate at `--jobs`; a complete point has nothing left.
#[test]
fn a_sweep_dry_run_estimates_the_whole_sweep() {
    let d = TempDir::new("wf-dry");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let sweep = |dry: bool| {
        let mut c = Command::new(BIN);
        c.args(["sweep", "--config"])
            .arg(&cfg)
            .args(["--grid", "run.seed=0,1", "--jobs", "2", "--out"])
            .arg(d.path().join("out"));
        if dry {
            c.arg("--dry-run");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let said = sweep(true);
    assert!(
        said.contains("t__seed=0: about") && said.contains("t__seed=1: about"),
        "{said}"
    );
    assert!(
        said.contains("2 of 2 points to run") && said.contains("at --jobs 2"),
        "{said}"
    );
    assert!(
        !d.path().join("out").join("t__seed=0").exists(),
        "nothing ran"
    );
    sweep(false);
    let said = sweep(true);
    assert!(said.contains("t__seed=0: complete, nothing left"), "{said}");
    assert!(said.contains("0 of 2 points to run"), "{said}");
}

/// The `run.json` of a run folder.
fn provenance(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn run_json_records_what_ran_and_progress_lines_go_to_a_non_terminal() {
    let d = TempDir::new("wf-prov");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let out = d.path().join("out");
    let data = d.path().join("my-data");
    let go = |rounds: &str| {
        Command::new(BIN)
            .arg("--config")
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .arg("--data-dir")
            .arg(&data)
            .args(["--set", rounds])
            .output()
            .unwrap()
    };
    // stderr is a pipe here, as under nohup or Slurm: one line per evaluated round
    let o = go("fl.rounds=2");
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("t: round 1/2: test acc "), "{e}");
    assert!(e.contains("t: round 2/2: test acc "), "{e}");
    // with the time left after each round but the last
    let line = |r: &str| {
        e.lines()
            .find(|l| l.contains(r))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("round 1/2").contains(" left"), "{e}");
    assert!(!line("round 2/2").contains(" left"), "{e}");
    let p = provenance(&out.join("t"));
    assert!(p["rounds_convention"].as_str().unwrap().contains("from 1"));
    records_the_first_invocation(&p["invocations"][0], &data);
    // a resumed run adds its own invocation
    let o = go("fl.rounds=3");
    assert!(o.status.success(), "{}", stderr(&o));
    let p = provenance(&out.join("t"));
    let inv = &p["invocations"][1];
    assert_eq!(
        (inv["first_round"].as_u64(), inv["last_round"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(stderr(&o).contains("t: round 3/3"), "{}", stderr(&o));
    // --quiet prints no progress
    let o = Command::new(BIN)
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--force"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(!stderr(&o).contains("round 1/"), "{}", stderr(&o));
}

/// A first invocation of rounds 1–2 with `--data-dir data`: its command, the data folder it
/// read, fedrun's version and commit, the machine and the phases' times.
fn records_the_first_invocation(inv: &serde_json::Value, data: &Path) {
    let cmd: Vec<&str> = inv["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        cmd.contains(&"--data-dir") && cmd.contains(&"fl.rounds=2"),
        "{cmd:?}"
    );
    // the data folder actually used, not the spec's
    assert_eq!(
        inv["data_dir"].as_str().unwrap(),
        std::path::absolute(data).unwrap().to_str().unwrap()
    );
    assert_eq!(inv["fedrun_version"], env!("CARGO_PKG_VERSION"));
    assert!(!inv["git_commit"].as_str().unwrap().is_empty());
    assert!(!inv["machine"]["cpu_model"].as_str().unwrap().is_empty());
    assert!(inv["machine"]["threads"].as_u64().unwrap() >= 1);
    assert!(inv["machine"]["cpu_features"].is_array());
    assert_eq!(
        (inv["first_round"].as_u64(), inv["last_round"].as_u64()),
        (Some(1), Some(2))
    );
    let ph = &inv["phases"];
    assert!(ph["train_s"].as_f64().unwrap() > 0.0);
    assert!(ph["eval_s"].as_f64().unwrap() > 0.0);
    assert!(ph["total_s"].as_f64().unwrap() >= ph["train_s"].as_f64().unwrap());
}

/// `fedrun partition` of a mini CIFAR-10 (40 images a file, 200 in training) with `sets`: the
/// CSV's rows, and the label skew printed.
fn partition(sets: &[&str]) -> (Vec<Vec<usize>>, f64) {
    let d = TempDir::new("wf-part");
    let data = d.path().join("cifar");
    std::fs::create_dir_all(&data).unwrap();
    common::write_mini_cifar(&data, 40);
    let cfg = d.path().join("spec.toml");
    let text = synthetic_spec("").replace("dataset = \"synthetic\"", "dataset = \"cifar10\"");
    std::fs::write(&cfg, text).unwrap();
    let csv = d.path().join("split.csv");
    let svg = d.path().join("split.svg");
    let mut c = Command::new(BIN);
    c.arg("partition")
        .arg("--config")
        .arg(&cfg)
        .arg("--data-dir")
        .arg(&data);
    for s in sets {
        c.args(["--set", s]);
    }
    let o = c
        .arg("--csv")
        .arg(&csv)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("class 9"));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let skew: f64 = out
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "label skew (mean total-variation distance to the global label distribution): ",
            )
        })
        .unwrap()
        .parse()
        .unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("client,size,class_0,"));
    let rows = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    (rows, skew)
}

#[test]
fn partition_shows_each_clients_labels_as_a_run_splits_them() {
    let (iid, iid_skew) = partition(&["data.num_clients=10"]);
    assert_eq!(iid.len(), 10);
    // every training sample is somewhere, once; a row's classes add up to its size
    assert_eq!(iid.iter().map(|r| r[0]).sum::<usize>(), 200);
    assert!(iid.iter().all(|r| r[1..].iter().sum::<usize>() == r[0]));
    // McMahan's shards: two shards of one class each → at most two classes a client
    let (shards, shard_skew) = partition(&[
        "data.num_clients=10",
        "data.partition=\"shards\"",
        "data.shards_per_client=2",
    ]);
    assert!(
        shards
            .iter()
            .all(|r| r[1..].iter().filter(|&&n| n > 0).count() <= 2)
    );
    // a Dirichlet split with a small α is skewed, an IID one barely
    let (_, dir_skew) = partition(&[
        "data.num_clients=10",
        "data.partition=\"dirichlet\"",
        "data.alpha=0.1",
    ]);
    assert!(iid_skew < 0.3, "{iid_skew}");
    assert!(
        dir_skew > iid_skew + 0.2 && shard_skew > 0.6,
        "{dir_skew} {shard_skew}"
    );
}

/// A data set of one's own in the IDX layout: `n` 3×8×8 images of 4 classes (each class its
/// own brightness, so that a model can learn it) per split.
fn write_own_idx(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for (images, labels) in [
        (
            fedrun::data::idx::TRAIN_IMAGES,
            fedrun::data::idx::TRAIN_LABELS,
        ),
        (
            fedrun::data::idx::TEST_IMAGES,
            fedrun::data::idx::TEST_LABELS,
        ),
    ] {
        let y: Vec<u8> = (0..n).map(|i| (i % 4) as u8).collect();
        let x: Vec<u8> = y
            .iter()
            .enumerate()
            .flat_map(|(i, &l)| (0..192).map(move |p| l * 60 + ((i * 7 + p) % 20) as u8))
            .collect();
        fedrun::data::idx::write(&dir.join(images), &[n, 3, 8, 8], &x).unwrap();
        fedrun::data::idx::write(&dir.join(labels), &[n], &y).unwrap();
    }
}

#[test]
fn your_own_data_in_the_idx_layout_runs_and_splits_like_the_others() {
    let d = TempDir::new("wf-own");
    let data = d.path().join("own");
    write_own_idx(&data, 80);
    let cfg = d.path().join("spec.toml");
    let text = synthetic_spec("")
        .replace(
            "dataset = \"synthetic\"",
            "dataset = \"idx\"\nmean = 0.5\nstd = 0.25",
        )
        .replace("kind = \"tiny-cnn\"", "kind = \"mlp\"")
        .replace("rounds = 2", "rounds = 8");
    std::fs::write(&cfg, text).unwrap();
    let out = d.path().join("out");
    let o = Command::new(BIN)
        .arg("--config")
        .arg(&cfg)
        .arg("--data-dir")
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("4 classes"), "{}", stderr(&o));
    let rows = common::columns(&out.join("t/rounds.csv"));
    let last = rows.last().unwrap()[1];
    assert!(last > 50.0, "4 separable classes, test accuracy {last}");
    // the same partitions as any image data set: shards give at most two classes a client
    let o = Command::new(BIN)
        .args(["partition", "--config"])
        .arg(&cfg)
        .arg("--data-dir")
        .arg(&data)
        .args(["--set", "data.partition=\"shards\""])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("classes per client: mean"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // a sequence model on images is refused before anything loads
    let o = check(&cfg, &["model.kind=\"lstm\""]);
    assert!(!o.status.success());
}

#[test]
fn small_values_are_labelled_as_a_paper_writes_them() {
    let d = TempDir::new("wf-label");
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    fake_run(
        &a,
        &["fl.algorithm=\"fedadam\"", "fedadam.eps=1e-8"],
        &[10.0],
        false,
        "complete",
    );
    fake_run(
        &b,
        &["fl.algorithm=\"fedadam\"", "fedadam.eps=0.01"],
        &[12.0],
        false,
        "complete",
    );
    let o = report(&[a, b], &[]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        t.contains("| eps=1e-8 |") && t.contains("| eps=0.01 |"),
        "{t}"
    );
}

/// Paths are relative to the working directory, for fedrun and for its scripts:
/// `scripts/sweep_wd.sh` called from another folder with a relative config and `OUT` reads and
/// writes there (it once changed directory to the repository first, which gave every relative
/// path another meaning).
#[test]
fn scripts_take_paths_relative_to_the_working_directory() {
    let d = TempDir::new("wf-paths");
    std::fs::write(d.path().join("own.toml"), synthetic_spec("")).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new("bash")
        .arg(root.join("scripts/sweep_wd.sh"))
        .arg("own.toml")
        .args(["--set", "fl.rounds=1"])
        .env("FEDRUN", BIN)
        .env("WDS", "0.001,0.01")
        .env("OUT", "out")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["out/sweep.csv", "out/report.md", "out/fig2_wd.svg"] {
        assert!(d.path().join(f).exists(), "{f}: {}", stderr(&o));
    }
}

#[test]
fn check_says_whether_the_data_is_there_and_what_fetches_it() {
    let run = |dir: Option<&Path>| {
        let mut c = Command::new(BIN);
        c.arg("check")
            .arg("--config")
            .arg(config("cifar_fedavg.toml"));
        if let Some(d) = dir {
            c.arg("--data-dir").arg(d);
        }
        c.output().unwrap()
    };
    let d = common::TempDir::new("check-data");
    // absent: an error naming the directory, the missing file and the fetch script
    let o = run(Some(&d.path().join("nowhere")));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("nowhere") && e.contains("data_batch_1.bin") && e.contains("fetch_cifar10.sh"),
        "{e}"
    );
    // a cut file: not a whole number of records
    common::write_mini_cifar(d.path(), 4);
    let cut = d.path().join("test_batch.bin");
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
    let o = run(Some(d.path()));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("test_batch.bin"), "{}", stderr(&o));
    // there: said on stdout, and the check passes
    std::fs::write(&cut, &bytes).unwrap();
    let o = run(Some(d.path()));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("# data: ") && out.contains("24 images"),
        "{out}"
    );
}

#[test]
fn a_spec_extends_another_and_its_run_folder_holds_the_whole_spec() {
    let d = TempDir::new("extends");
    std::fs::create_dir_all(d.path().join("study")).unwrap();
    std::fs::write(d.path().join("base.toml"), synthetic_spec("")).unwrap();
    // only what differs, the base named relative to this file's folder
    let child = d.path().join("study/child.toml");
    std::fs::write(
        &child,
        "extends = \"../base.toml\"\n[local]\nweight_decay = 0.003\n[run]\nname = \"child\"\n",
    )
    .unwrap();
    let out = d.path().join("out");
    let o = Command::new(BIN)
        .args(["--quiet", "--config"])
        .arg(&child)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let spec = std::fs::read_to_string(out.join("child/spec.toml")).unwrap();
    assert!(!spec.contains("extends"), "{spec}");
    assert!(spec.contains("weight_decay = 0.003"), "{spec}");
    // the base's keys: the synthetic data set and its 2 rounds
    assert!(
        spec.contains("dataset = \"synthetic\"") && spec.contains("rounds = 2"),
        "{spec}"
    );
    let rows = std::fs::read_to_string(out.join("child/rounds.csv")).unwrap();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    // a cycle and a missing base are errors naming the files
    std::fs::write(
        d.path().join("base.toml"),
        "extends = \"study/child.toml\"\n",
    )
    .unwrap();
    let o = check(&child, &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("comes back to a file already read"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(d.path().join("base.toml")).unwrap();
    let o = check(&child, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not a file"), "{}", stderr(&o));
}

#[test]
fn check_estimates_the_wall_time_from_a_timed_probe() {
    let d = TempDir::new("check-time");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let o = Command::new(BIN)
        .args(["check", "--time", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("# time: about "))
        .unwrap_or_default();
    assert!(
        line.contains("s a round of training") && line.contains("test samples"),
        "{out}"
    );
    // the round and evaluation times it states are positive and finite
    let secs = |what: &str| -> f64 {
        let before = line.split(what).next().unwrap();
        before.rsplit(['(', ' ']).next().unwrap().parse().unwrap()
    };
    let (round, eval) = (secs(" s a round"), secs(" s a test evaluation"));
    assert!(round > 0.0 && round.is_finite() && eval > 0.0, "{line}");
}

/// `report --long FILE`: one tidy row per run and evaluated round, the keys that differ between
/// the runs as columns (the seed included, a key a run does not read left blank), the round
/// counted from 1 and every rounds.csv column, for pandas; the usual table still printed.
#[test]
fn report_long_writes_one_row_per_run_and_round() {
    let d = TempDir::new("wf-long");
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    fake_run(
        &a,
        &["local.lr=0.05", "run.seed=0"],
        &[10.0, 20.0],
        false,
        "complete",
    );
    fake_run(
        &b,
        &["local.lr=0.1", "run.seed=1"],
        &[15.0, 25.0, 35.0],
        false,
        "interrupted",
    );
    let file = d.path().join("long.csv");
    let o = report(&[a, b], &["--long", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("lr="),
        "the table too"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 5, "{text}");
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}: {text}"))
    };
    assert_eq!(&header[..2], &["run", "status"], "{text}");
    assert!(
        !header.contains(&"local.weight_decay"),
        "a key no run varies: {text}"
    );
    let (lr, seed, round, acc) = (
        col("local.lr"),
        col("run.seed"),
        col("round"),
        col("test_acc"),
    );
    assert_eq!(
        [
            rows[0][0],
            rows[0][1],
            rows[0][lr],
            rows[0][seed],
            rows[0][round],
            rows[0][acc]
        ],
        ["a", "complete", "0.05", "0", "1", "10"],
        "{text}"
    );
    assert_eq!(
        [
            rows[4][0],
            rows[4][1],
            rows[4][lr],
            rows[4][seed],
            rows[4][round],
            rows[4][acc]
        ],
        ["b", "interrupted", "0.1", "1", "3", "35"],
        "{text}"
    );
}

/// `check` prints what `run.cohort = "auto"` picks and why: one client at a time on flex.
#[test]
fn check_prints_the_automatic_cohort() {
    let o = check(&config("quickstart.toml"), &["run.cohort=\"auto\""]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(o.status.success(), "{out}");
    assert!(out.contains("run.cohort = \"auto\": 1 (a CPU"), "{out}");
    assert!(
        out.contains("cohort_mb = 8000.0\n"),
        "read with \"auto\": {out}"
    );
}

/// `FEDRUN_SIMD` caps the SIMD level fedrun's kernels run at, and run.json says the level
/// used; a value that names no level is refused, naming the variable and the value.
#[test]
fn fedrun_simd_caps_the_level_and_run_json_records_it() {
    let d = TempDir::new("wf-simd");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let out = d.path().join("out");
    let go = |level: &str| {
        Command::new(BIN)
            .env("FEDRUN_SIMD", level)
            .arg("--config")
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .args(["--set", "fl.rounds=1", "--force"])
            .output()
            .unwrap()
    };
    for (set, level) in [
        ("auto", fedrun::kernels::simd::detected().name()),
        ("sse2", "sse2"),
    ] {
        let o = go(set);
        assert!(o.status.success(), "{}", stderr(&o));
        let p = provenance(&out.join("t"));
        assert_eq!(p["invocations"][0]["machine"]["simd"], level, "{set}");
    }
    let o = go("avx9");
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("FEDRUN_SIMD") && e.contains("avx9"), "{e}");
}

/// `check` lists every name of `fl.algorithm` that the unknown-algorithm error lists (the
/// registry's and the papers' aliases), and no other.
#[test]
fn check_lists_the_algorithms_the_error_lists() {
    let cfg = config("quickstart.toml");
    let listed = |text: &str, marker: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.contains(marker))
            .unwrap_or_default();
        let rest = line.split_once(marker).map_or("", |(_, r)| r);
        let mut names: Vec<String> = rest
            .split([',', ';', '(', ')', ' '])
            .map(|w| w.trim_end_matches(':'))
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()))
            .filter(|w| !matches!(*w, "or" | "an" | "alias" | "true"))
            .map(String::from)
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let ok = check(&cfg, &[]);
    let shown = listed(&String::from_utf8_lossy(&ok.stdout), "is one of:");
    let bad = check(&cfg, &["fl.algorithm=\"nope\""]);
    let named = listed(&stderr(&bad), "expected one of:");
    assert!(named.len() >= 24, "{named:?}");
    assert_eq!(shown, named);
}

/// What a new user met (#69, items 9 and 11), each said plainly: a count key gives the same
/// rule for 0 and for a negative value; an empty config file is refused instead of running
/// every default; `plot` given a CSV file says runs are read from folders and names the file's
/// folder; `check --data-dir DIR` prints the folder it checks as `data.path`.
#[test]
fn a_new_users_slips_get_plain_messages() {
    for key in ["run.cohort", "local.batch_size"] {
        let rules: Vec<String> = ["0", "-2"]
            .iter()
            .map(|v| {
                let o = fedrun(&["check", "--no-data", "--set", &format!("{key}={v}")]);
                assert!(!o.status.success(), "{key} = {v} passed");
                let e = stderr(&o);
                let at = e.find("must be").unwrap_or_else(|| panic!("{e}"));
                e[at..e.find(", got").unwrap_or(e.len())].to_string()
            })
            .collect();
        assert_eq!(rules[0], rules[1], "{key}: one rule for 0 and -2");
    }
    let d = TempDir::new("new-user");
    let empty = d.path().join("empty.toml");
    std::fs::write(&empty, "# a study\n\n").unwrap();
    let o = fedrun(&["check", "--no-data", "--config", empty.to_str().unwrap()]);
    assert!(!o.status.success(), "an empty config passed");
    assert!(stderr(&o).contains("is empty"), "{}", stderr(&o));
    let csv = d.path().join("rounds.csv");
    std::fs::write(&csv, "round,test_acc\n1,0.5\n").unwrap();
    let png = d.path().join("p.png");
    let o = fedrun(&["plot", csv.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("is a file") && e.contains(&d.path().display().to_string()),
        "{e}"
    );
    let dir = d.path().to_str().unwrap();
    let o = fedrun(&[
        "check",
        "--config",
        config("cifar_fedavg.toml").to_str().unwrap(),
        "--data-dir",
        dir,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("path = \"{dir}")), "{out}");
}

/// `check`'s work line counts what a round does beyond the local steps: Mime-LAMB's full-data
/// gradients at its sync rounds alone, the original Mime's every round (and its correction's
/// second gradient a step), FedNTD's frozen model; FedAvg has nothing more, and the counts read
/// in the singular where they are one.
#[test]
fn check_says_the_work_beyond_the_local_steps() {
    let work = |cfg: &str, sets: &[&str]| {
        let o = check(&config(cfg), sets);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let line = out.lines().find(|l| l.starts_with("# the work:"));
        line.unwrap_or_else(|| panic!("{out}")).to_string()
    };
    let lamb = "fedlamb/mnist_mimelamb.toml";
    let every = work(lamb, &[]);
    assert!(
        every.contains("every round each sampled client takes the gradient of all its samples"),
        "{every}"
    );
    assert!(every.contains("× 1 epoch of batch"), "{every}");
    let z3 = work(lamb, &["fedlamb.sync_every=3"]);
    assert!(z3.contains("in one round of every 3"), "{z3}");
    let frozen = work(
        "fedlamb/mnist_mime.toml",
        &["mime.base=\"sgdm\"", "mime.lite=false"],
    );
    assert!(
        frozen.contains("every round") && frozen.contains("a second gradient"),
        "{frozen}"
    );
    let lite = work("fedlamb/mnist_mime.toml", &["mime.base=\"sgdm\""]);
    assert!(
        lite.contains("every round") && !lite.contains("second gradient"),
        "{lite}"
    );
    let ntd = work("fedacg/fedntd.toml", &[]);
    assert!(ntd.contains("through the frozen broadcast model"), "{ntd}");
    let plain = work("fedacg/fedavg.toml", &["fl.rounds=1"]);
    assert!(
        !plain.contains("besides") && plain.contains("; 1 test evaluation;"),
        "{plain}"
    );
}

/// A point whose process is killed outright (SIGKILL: the out-of-memory killer at a job's
/// memory limit, or a scheduler) is failed with the kill named and what to do, not read from a
/// summary an earlier attempt left in its folder.
#[test]
#[cfg(unix)]
fn a_sweep_point_killed_by_sigkill_is_named_as_such() {
    use fedrun::metrics::summary::Status;
    use fedrun::sweep::{SweepOptions, parse_axis, run};
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("sweep-killed");
    let fake = dir.path().join("fedrun-killed.sh");
    std::fs::write(&fake, "#!/bin/sh\necho starting\nkill -9 $$\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = dir.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let base = fedrun::schema::parse(&synthetic_spec(""), "t", &[]).unwrap();
    let out = dir.path().join("out");
    let o = SweepOptions {
        config: Some(cfg),
        set: Vec::new(),
        axes: vec![parse_axis("run.seed=0").unwrap()],
        jobs: 1,
        out: out.clone(),
        data_dir: None,
        stop_on_divergence: false,
        exe: fake,
        stop: None,
    };
    // an earlier attempt's complete summary in the point's folder
    let first = run(
        &base,
        &SweepOptions {
            exe: BIN.into(),
            ..o.clone()
        },
    )
    .unwrap();
    assert_eq!(first[0].2.status, Status::Complete, "{:?}", first[0].2);
    std::fs::write(out.join(&first[0].1).join("spec.toml"), "changed").unwrap();
    let res = run(&base, &o).unwrap();
    let s = &res[0].2;
    assert_eq!(s.status, Status::Failed, "{s:?}");
    assert!(s.message.contains("SIGKILL"), "{}", s.message);
    assert!(s.message.contains("out-of-memory"), "{}", s.message);
    assert!(s.message.contains("--mem"), "{}", s.message);
}

/// A float of the grid reads alike everywhere: `--grid local.weight_decay=1e-3` names the folder
/// `weight_decay=0.001`, and sweep.csv and `report` say `0.001` (they said `1e-3`, `1e-3` and
/// `0.001`). A folder an earlier sweep named as the grid was typed is still resumed, not run
/// again beside it.
#[test]
fn a_grids_floats_read_alike_in_folders_sweep_csv_and_report() {
    let d = TempDir::new("wf-labels");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let out = d.path().join("out");
    let sweep = || {
        let o = Command::new(BIN)
            .args(["sweep", "--config"])
            .arg(&cfg)
            .args(["--grid", "local.weight_decay=1e-3,5e-2", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    sweep();
    assert!(out.join("t__weight_decay=0.001").is_dir());
    assert!(out.join("t__weight_decay=0.05").is_dir());
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(
        csv.contains("\n0.001,t__weight_decay=0.001,complete"),
        "{csv}"
    );
    assert!(!csv.contains("e-"), "{csv}");
    let report = fedrun(&["report", out.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&report.stdout);
    assert!(
        table.contains("0.001") && !table.contains("1e-3"),
        "{table}"
    );
    // a folder named by an earlier sweep as the grid was typed (its point run as such a sweep
    // ran it): taken as the point's, not run again beside it
    std::fs::remove_dir_all(out.join("t__weight_decay=0.001")).unwrap();
    let old = Command::new(BIN)
        .arg("--config")
        .arg(&cfg)
        .args([
            "--set",
            "local.weight_decay=1e-3",
            "--set",
            "run.name=t__weight_decay=1e-3",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(old.status.success(), "{}", stderr(&old));
    let said = sweep();
    assert!(
        said.contains("t__weight_decay=1e-3: already complete"),
        "{said}"
    );
    assert!(!out.join("t__weight_decay=0.001").exists(), "{said}");
}

/// A model's own default: the Fed-LAMB MNIST CNN takes dropout 0.5 (the PyTorch MNIST example's)
/// where the spec sets none, not the transformer's 0.1; a value set in the file or by `--set`
/// wins, and the run folder's spec records the value taken.
#[test]
fn the_mnist_cnn_takes_its_own_dropout_unless_one_is_set() {
    let parse = |dropout: &str, sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let text = synthetic_spec("").replace("[model]\n", &format!("[model]\n{dropout}"));
        fedrun::schema::parse(&text, "t", &sets)
            .unwrap()
            .model
            .dropout
    };
    let mnist = ["data.dataset=\"mnist\"", "model.kind=\"mnist-cnn\""];
    assert_eq!(parse("", &mnist), 0.5);
    assert_eq!(parse("", &[mnist[0], mnist[1], "model.dropout=0.2"]), 0.2);
    assert_eq!(parse("dropout = 0.3\n", &mnist), 0.3);
    assert_eq!(
        parse("", &[]),
        0.1,
        "a model that reads no dropout keeps the table's"
    );
    // read back from the resolved spec (a run folder's spec.toml), the value stays
    let sets = mnist.map(String::from);
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &sets).unwrap();
    let again = fedrun::schema::parse_resolved(&spec.to_toml(), "spec.toml").unwrap();
    assert_eq!(again.model.dropout, 0.5);
}
