//! Faults a user meets: two processes on one run folder, a damaged checkpoint, sizes that cannot
//! fit, a signal mid-run, a full disk.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, run_to_end, stop_after, synthetic_spec, without_time};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::{Status, Summary};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fedrun"))
}

/// A spec file of `rounds` rounds of enough local steps to last a while.
fn long_spec(d: &Path, rounds: usize, checkpoint_every: usize) -> std::path::PathBuf {
    let cfg = d.join("spec.toml");
    let text = synthetic_spec("").replace("rounds = 2", &format!("rounds = {rounds}"));
    let text = text.replace("steps = 3", "steps = 40");
    let text = text.replace(
        "checkpoint_every = 1",
        &format!("checkpoint_every = {checkpoint_every}"),
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

fn start(cfg: &Path, out: &Path) -> Child {
    bin()
        .args(["--quiet", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Send SIGTERM to `child` and wait for it to end.
fn terminate(child: Child) -> std::process::Output {
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    child.wait_with_output().unwrap()
}

/// Wait until `path` holds at least `lines` lines.
fn wait_for_lines(path: &Path, lines: usize) {
    let t0 = Instant::now();
    while std::fs::read_to_string(path).map_or(0, |t| t.lines().count()) < lines {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{} never grew",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_process_on_a_run_folder_is_refused_with_the_holders_pid() {
    let d = TempDir::new("lock");
    let cfg = long_spec(d.path(), 50, 2);
    let out = d.path().join("out");
    let mut first = start(&cfg, &out);
    wait_for_lines(&out.join("t/rounds.csv"), 2);
    let second = bin()
        .args(["--quiet", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second process ran");
    let pid = first.id().to_string();
    assert!(
        err.contains("in use") && err.contains(&pid) && err.contains("out/t"),
        "{err}"
    );
    // a lock left by a killed process never blocks the resume
    first.kill().unwrap();
    first.wait().unwrap();
    let third = bin()
        .args(["--quiet", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .args(["--set", "fl.rounds=4"])
        .output()
        .unwrap();
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(
        Summary::read(&out.join("t")).unwrap().status,
        Status::Complete
    );
}

/// A run of 4 rounds stopped after 2, with its checkpoint at round 2.
fn half_run(out: &Path) -> fedrun::config::Spec {
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &["fl.rounds=4".into()]).unwrap();
    stop_after(&spec, out, 2);
    spec
}

#[test]
fn a_damaged_checkpoint_is_refused_not_resumed() {
    let d = TempDir::new("damaged-ckpt");
    let out = d.path().to_path_buf();
    let spec = half_run(&out);
    let ckpt = out.join("t/checkpoint.bin");
    let good = std::fs::read(&ckpt).unwrap();
    let csv = std::fs::read(out.join("t/rounds.csv")).unwrap();
    let refused = |bytes: &[u8], needle: &str| {
        std::fs::write(&ckpt, bytes).unwrap();
        let e = run_to_end(&spec, &out).expect_err("refused").to_string();
        assert!(
            e.contains(needle) && e.contains("checkpoint.bin") && e.contains("--force"),
            "{e}"
        );
        assert_eq!(
            std::fs::read(out.join("t/rounds.csv")).unwrap(),
            csv,
            "CSV untouched"
        );
    };
    // a few bytes flipped in the middle (a bad block), a cut copy, a newer format
    let mut flipped = good.clone();
    for k in 0..3 {
        flipped[good.len() / 2 + k] ^= 0x5a;
    }
    refused(&flipped, "checksum mismatch");
    refused(&good[..good.len() / 2], "truncated");
    refused(&good[..good.len() - 3], "truncated");
    let text =
        String::from_utf8_lossy(&good).replacen("FEDRUN-CHECKPOINT-2", "FEDRUN-CHECKPOINT-9", 1);
    let mut newer = text.as_bytes()[..good.len() - 8].to_vec();
    let crc = crc32fast::hash(&newer);
    newer.extend_from_slice(&crc.to_le_bytes());
    newer.extend_from_slice(b"FRC2");
    refused(&newer, "version 9");
    // the good checkpoint still resumes to the end
    std::fs::write(&ckpt, &good).unwrap();
    assert_eq!(run_to_end(&spec, &out).unwrap().status, Status::Complete);
}

/// Work that cannot finish (the issue's `local.steps = 1000000000000` ran for minutes before a
/// signal stopped it) is named by `fedrun check` and by the run before anything is written; the
/// limit is the product, so a large key alone in a small product runs.
#[test]
fn work_that_cannot_finish_is_named_by_check_and_the_run() {
    let d = TempDir::new("runaway");
    let cases: &[(&[&str], &str)] = &[
        (
            &["local.steps=1000000000000"],
            "`local.steps` = 1000000000000",
        ),
        (&["fl.rounds=100000000000"], "`fl.rounds` = 100000000000"),
        (
            &["local.epochs=100000000", "fl.rounds=1000"],
            "`local.epochs` = 100000000 (of 3 batches",
        ),
    ];
    for (sets, named) in cases {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &sets).unwrap();
        let opts = RunOptions {
            out: d.path().to_path_buf(),
            ..Default::default()
        };
        let e = run(&spec, &opts).expect_err("refused").to_string();
        assert!(
            e.contains(named) && e.contains("local steps in all"),
            "{sets:?}: {e}"
        );
        assert!(
            !d.path().join("t").exists(),
            "{sets:?}: a run folder was made"
        );
        let config = d.path().join("spec.toml");
        std::fs::write(&config, synthetic_spec("")).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fedrun"));
        cmd.arg("check").arg("--config").arg(&config);
        for s in &sets {
            cmd.args(["--set", s]);
        }
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(named),
            "check {sets:?}: {err}"
        );
    }
    // one key far above the paper settings, in a product under the limit, runs
    let sets = ["local.steps=1000000".to_string(), "fl.rounds=1".into()];
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &sets).unwrap();
    assert!(fedrun::fl::engine::resources::check_work(&spec, None).is_ok());
}

#[test]
fn sizes_that_cannot_fit_are_refused_naming_the_key() {
    let d = TempDir::new("sizes");
    let cases: &[(&[&str], &str)] = &[
        (&["data.num_clients=1000000000000"], "data.num_clients"),
        (
            &["model.kind=\"mlp\"", "model.mlp_hidden=100000000000"],
            "model.mlp_hidden",
        ),
        (
            &[
                "data.partition=\"shards\"",
                "data.shards_per_client=1000000000000000",
            ],
            "data.shards_per_client",
        ),
        (
            &["data.synthetic_test=20000", "fl.eval_batch_size=1000000000"],
            "fl.eval_batch_size",
        ),
        (
            &[
                "model.kind=\"mlp\"",
                "model.mlp_hidden=200",
                "run.client_workers=100000",
            ],
            "run.client_workers",
        ),
    ];
    for (sets, key) in cases {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &sets).unwrap();
        let opts = RunOptions {
            out: d.path().to_path_buf(),
            memory_budget: Some(1 << 30),
            ..Default::default()
        };
        let e = run(&spec, &opts).expect_err("refused").to_string();
        assert!(e.contains(key), "{sets:?}: {e}");
        assert!(
            !d.path().join("t").exists(),
            "{sets:?}: a run folder was made"
        );
    }
}

#[test]
fn sigterm_stops_the_round_in_flight_and_the_rerun_gives_the_same_csv() {
    let d = TempDir::new("sigterm");
    // a checkpoint every 2 rounds: the rows after the last one are cut and run again
    let cfg = long_spec(d.path(), 8, 2);
    let (out, whole) = (d.path().join("out"), d.path().join("whole"));
    let child = start(&cfg, &out);
    wait_for_lines(&out.join("t/rounds.csv"), 4);
    let o = terminate(child);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "a stopped run exits non-zero");
    assert!(
        err.contains("stopping: signal received") && err.contains("stopped by a signal"),
        "{err}"
    );
    assert!(err.contains("resume"), "{err}");
    let s = Summary::read(&out.join("t")).unwrap();
    assert_eq!(s.status, Status::Interrupted);
    assert!(
        s.rounds < 8 && out.join("t/checkpoint.bin").exists(),
        "{s:?}"
    );
    resumes_to_the_whole_runs_csv(&cfg, &out, &whole);
}

/// A signal loses at most the round in flight: with no checkpoint due (`run.checkpoint_every =
/// 0`), a run stopped mid-way undoes that round and writes the checkpoint of its last finished
/// one before it exits, and the same command resumes from it to the uninterrupted CSV. SCAFFOLD
/// with its control variates spilled to the run folder: the undone round's clients had changed
/// them.
#[test]
fn a_signal_checkpoints_the_last_finished_round() {
    let d = TempDir::new("signal-ckpt");
    let cfg = long_spec(d.path(), 8, 0);
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text
        .replace("[fl]\n", "[fl]\nalgorithm = \"scaffold\"\n")
        .replace("[run]\n", "[run]\nclient_state_mb = 0.000001\n");
    assert!(
        text.contains("scaffold") && text.contains("client_state_mb"),
        "{text}"
    );
    std::fs::write(&cfg, text).unwrap();
    let (out, whole) = (d.path().join("out"), d.path().join("whole"));
    let s = stopped_after_rows(&cfg, &out, 3);
    assert!((2..8).contains(&s.rounds), "{s:?}");
    assert!(
        s.seconds_per_round > 0.0,
        "the pace of the rounds kept: {s:?}"
    );
    let at = format!("resume from the checkpoint after round {}", s.rounds);
    assert!(s.message.contains(&at), "{}", s.message);
    let (h, _) = fedrun::fl::engine::checkpoint::read(&out.join("t/checkpoint.bin")).unwrap();
    assert_eq!(h.next_round, s.rounds);
    resumes_to_the_whole_runs_csv(&cfg, &out, &whole);
}

/// Start the run of `cfg` in `out`, send SIGTERM once rounds.csv has `lines` lines, and return
/// its summary, which must say `interrupted`.
fn stopped_after_rows(cfg: &Path, out: &Path, lines: usize) -> Summary {
    let child = start(cfg, out);
    wait_for_lines(&out.join("t/rounds.csv"), lines);
    let o = terminate(child);
    let err = String::from_utf8_lossy(&o.stderr);
    let s = Summary::read(&out.join("t")).unwrap();
    assert_eq!(s.status, Status::Interrupted, "{err}");
    s
}

/// Run `cfg` again in `out` (it resumes there) and afresh in `whole`: the same CSV, time aside.
fn resumes_to_the_whole_runs_csv(cfg: &Path, out: &Path, whole: &Path) {
    for dir in [out, whole] {
        let o = bin()
            .args(["--quiet", "--config"])
            .arg(cfg)
            .arg("--out")
            .arg(dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        if dir == out {
            // the round it resumes after, and the one it runs next
            assert!(err.contains("after round") && err.contains("next"), "{err}");
        }
    }
    assert_eq!(
        without_time(&out.join("t/rounds.csv")),
        without_time(&whole.join("t/rounds.csv"))
    );
}

/// Start the run of `spec`, wait until it has begun and `after` more, send SIGTERM, and check
/// that it stopped within `within`: the round in flight (the first) discarded, nothing
/// half-done written.
fn sigterm_stops_round_one(d: &Path, spec: &str, after: Duration, within: Duration) {
    let cfg = d.join("spec.toml");
    std::fs::write(&cfg, spec).unwrap();
    let out = d.join("out");
    let child = start(&cfg, &out);
    // the run has started its first round once its summary says it is running
    let t0 = Instant::now();
    while Summary::read(&out.join("t")).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(after);
    let sent = Instant::now();
    let o = terminate(child);
    let took = sent.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(took < within, "took {took:?} to stop: {err}");
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("stopping: signal received"), "{err}");
    assert!(err.contains("during round 1, which is discarded"), "{err}");
    let s = Summary::read(&out.join("t")).unwrap();
    assert_eq!((s.status, s.rounds), (Status::Interrupted, 0), "{s:?}");
    let csv = std::fs::read_to_string(out.join("t/rounds.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1, "only the header: {csv}");
}

/// Under a local step count no study uses, SIGTERM is acknowledged at once and stops the run
/// within a step: the round in flight is discarded, nothing half-done is written.
#[test]
fn sigterm_stops_a_run_within_a_local_step() {
    let d = TempDir::new("sigterm-step");
    let text = synthetic_spec("").replace("steps = 3", "steps = 100000000");
    let (after, within) = (Duration::from_millis(500), Duration::from_secs(20));
    sigterm_stops_round_one(d.path(), &text, after, within);
}

/// A signal during a long test evaluation stops it within one evaluation batch (Slurm sends
/// SIGKILL 30 s after SIGTERM): the round is discarded, nothing half-done is written.
#[test]
fn sigterm_stops_an_evaluation_within_a_batch() {
    let d = TempDir::new("sigterm-eval");
    // one short round, then an evaluation of ResNet-18 on 20,000 images in batches of 25:
    // about two minutes on two cores, a fraction of a second a batch
    let text = synthetic_spec("")
        .replace("kind = \"tiny-cnn\"", "kind = \"resnet18\"")
        .replace("synthetic_test = 40", "synthetic_test = 20000")
        .replace("eval_batch_size = 64", "eval_batch_size = 25")
        .replace("steps = 3", "steps = 1");
    assert!(
        text.contains("resnet18") && text.contains("20000"),
        "{text}"
    );
    // the round's two clients of one step take a few seconds; then the evaluation runs
    let (after, within) = (Duration::from_secs(8), Duration::from_secs(10));
    sigterm_stops_round_one(d.path(), &text, after, within);
}

/// Linux's `/dev/full` (every write fails with ENOSPC) stands in for a full disk.
#[test]
#[cfg(target_os = "linux")]
fn a_full_disk_during_a_checkpoint_write_leaves_a_resumable_run() {
    assert!(Path::new("/dev/full").exists(), "Linux has /dev/full");
    let d = TempDir::new("full");
    let out = d.path().to_path_buf();
    let spec = half_run(&out);
    let dir = out.join("t");
    let good = std::fs::read(dir.join("checkpoint.bin")).unwrap();
    // the next checkpoint's temporary file is the full device: every write fails with ENOSPC
    std::os::unix::fs::symlink("/dev/full", dir.join("checkpoint.tmp")).unwrap();
    let e = run_to_end(&spec, &out)
        .expect_err("the write fails")
        .to_string();
    assert!(
        e.contains("checkpoint.tmp") && e.contains("No space left"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(dir.join("checkpoint.bin")).unwrap(),
        good,
        "the last good checkpoint stays"
    );
    assert!(
        !dir.join("checkpoint.tmp").exists(),
        "the failed temporary file is removed"
    );
    assert_eq!(Summary::read(&dir).unwrap().status, Status::Interrupted);
    // with room again the run resumes from the last good checkpoint to the CSV of a whole run
    assert_eq!(run_to_end(&spec, &out).unwrap().status, Status::Complete);
    let whole = d.path().join("whole");
    assert_eq!(run_to_end(&spec, &whole).unwrap().status, Status::Complete);
    assert_eq!(
        without_time(&dir.join("rounds.csv")),
        without_time(&whole.join("t/rounds.csv"))
    );
}

/// Resume never splices two runs or pads a file: a `rounds.csv` cut short or with other bytes,
/// a checkpoint from another run, an edited `spec.toml` given back as the spec, and a missing
/// `spec.toml` are each refused with an error naming the file (the files left as they were), and
/// the run's own files, put back, resume.
#[test]
fn resume_refuses_files_of_another_run() {
    let d = TempDir::new("splice");
    let out = d.path().to_path_buf();
    let spec = half_run(&out);
    let t = out.join("t");
    let (csv_p, ck_p, spec_p) = (
        t.join("rounds.csv"),
        t.join("checkpoint.bin"),
        t.join("spec.toml"),
    );
    let (csv, ck, spec_toml) = (
        std::fs::read(&csv_p).unwrap(),
        std::fs::read(&ck_p).unwrap(),
        std::fs::read(&spec_p).unwrap(),
    );
    let put_back = || {
        std::fs::write(&csv_p, &csv).unwrap();
        std::fs::write(&ck_p, &ck).unwrap();
        std::fs::write(&spec_p, &spec_toml).unwrap();
    };
    let refused = |spec: &fedrun::config::Spec, file: &str, needle: &str| {
        let before = std::fs::read(&csv_p).ok();
        let e = run_to_end(spec, &out).expect_err("refused").to_string();
        assert!(
            e.contains(file) && e.contains(needle) && e.contains("--force"),
            "{e}"
        );
        assert_eq!(
            std::fs::read(&csv_p).ok(),
            before,
            "rounds.csv untouched: {e}"
        );
    };
    // rounds.csv cut mid-row, and one of the same length with another digit
    std::fs::write(&csv_p, &csv[..csv.len() - 5]).unwrap();
    refused(&spec, "rounds.csv", "shorter");
    let mut other = csv.clone();
    let k = other
        .iter()
        .rposition(|b| b.is_ascii_digit() && *b != b'9')
        .unwrap();
    other[k] += 1;
    std::fs::write(&csv_p, &other).unwrap();
    refused(
        &spec,
        "rounds.csv",
        "not those the checkpoint was written after",
    );
    put_back();
    // a checkpoint copied in from a run of another spec
    let mut theirs = spec.clone();
    theirs.run.name = "u".into();
    theirs.local.lr = 0.07;
    stop_after(&theirs, &out, 2);
    std::fs::copy(out.join("u/checkpoint.bin"), &ck_p).unwrap();
    refused(&spec, "checkpoint.bin", "local.lr");
    put_back();
    // spec.toml edited (lr) and given back as the spec: the checkpoint's spec says otherwise
    let mut edited = spec.clone();
    edited.local.lr = 0.07;
    std::fs::write(&spec_p, edited.to_toml()).unwrap();
    refused(&edited, "checkpoint.bin", "local.lr");
    // spec.toml deleted, or replaced by bytes that are not text
    std::fs::remove_file(&spec_p).unwrap();
    refused(&spec, "spec.toml", "cannot read it");
    std::fs::write(&spec_p, [0xff, 0xfe, 0x00, 0x81]).unwrap();
    refused(&spec, "spec.toml", "not text");
    put_back();
    assert_eq!(run_to_end(&spec, &out).unwrap().status, Status::Complete);
}

/// A row written after the checkpoint (a crash before the next one) is cut off, and its round
/// runs again.
#[test]
fn resume_cuts_the_rows_written_after_the_checkpoint() {
    let d = TempDir::new("splice-rows");
    let out = d.path().to_path_buf();
    let spec = half_run(&out);
    let csv_p = out.join("t/rounds.csv");
    let mut longer = std::fs::read(&csv_p).unwrap();
    longer.extend_from_slice(b"3,99,1,1,0.05,0,0,0,1,,,0,0,1\n");
    std::fs::write(&csv_p, &longer).unwrap();
    assert_eq!(run_to_end(&spec, &out).unwrap().status, Status::Complete);
    let text = std::fs::read_to_string(&csv_p).unwrap();
    assert!(!text.contains('\0') && !text.contains(",99,"), "{text}");
    let rounds: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(rounds, ["1", "2", "3", "4"], "{text}");
}

/// SIGTERM to a sweep (Slurm's time limit, `kill`) reaches the point it is running: the point
/// stops as a run does and stays interrupted (it never goes on to finish after the sweep has
/// gone), the points after it do not start, and `sweep.csv` says both; the sweep exits non-zero.
#[test]
fn a_signal_to_a_sweep_stops_its_running_point_too() {
    let d = TempDir::new("sweep-signal");
    let cfg = long_spec(d.path(), 40, 2);
    let out = d.path().join("out");
    let sweep = bin()
        .args(["sweep", "--config"])
        .arg(&cfg)
        .args(["--grid", "run.seed=0,1", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = out.join("t__seed=0");
    wait_for_lines(&first.join("rounds.csv"), 2);
    let o = terminate(sweep);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("passes it on to its running points"), "{err}");
    let s = Summary::read(&first).unwrap();
    assert_eq!(s.status, Status::Interrupted, "{s:?}");
    let rows = std::fs::read_to_string(first.join("rounds.csv")).unwrap();
    // an orphaned point would go on writing rounds and mark itself complete
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(Summary::read(&first).unwrap().status, Status::Interrupted);
    assert_eq!(
        std::fs::read_to_string(first.join("rounds.csv")).unwrap(),
        rows
    );
    assert!(
        !out.join("t__seed=1").exists(),
        "the next point never starts"
    );
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(csv.contains("t__seed=0,interrupted"), "{csv}");
    assert!(csv.contains("t__seed=1,not run"), "{csv}");
    // the sweep says why a point was not run, and that it stopped resumably (status 75)
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("t__seed=1: not run: the sweep was stopped by a signal"),
        "{said}"
    );
    assert_eq!(o.status.code(), Some(75), "{err}");
}

/// `run.checkpoint_minutes` bounds in time what a signal loses: with checkpoints by round count
/// off (`run.checkpoint_every = 0`), a run stopped after a few rounds resumes from the last
/// round finished before the interval ran out, not from the start.
#[test]
fn a_checkpoint_interval_in_minutes_bounds_what_a_signal_loses() {
    let d = TempDir::new("minutes");
    let cfg = long_spec(d.path(), 40, 0);
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text.replace("[run]", "[run]\ncheckpoint_minutes = 0.000001");
    assert!(text.contains("checkpoint_minutes"), "{text}");
    std::fs::write(&cfg, text).unwrap();
    let out = d.path().join("out");
    let s = stopped_after_rows(&cfg, &out, 4);
    assert!(
        s.message.contains("resume from the checkpoint after round"),
        "every round past the interval is checkpointed: {}",
        s.message
    );
    assert!(s.rounds >= 3, "{s:?}");
}

/// Slurm's early signal (`--signal=B:USR1@…`, sent to the batch script) reaches the run that
/// `scripts/slurm_array.sh` starts as SIGTERM, and the run stops as a run does (interrupted,
/// its checkpoint kept, exit status 75); the script then requeues its task (a fake `scontrol`
/// on the PATH records the call) and ends well, so that an array finishes without hands; no
/// orphan goes on. A SIGTERM to the script (a cancel) stops the run without a requeue. The
/// script asks for memory and a requeue, and no GPU by default.
#[test]
fn the_slurm_script_passes_the_signal_to_its_run_and_requeues_it() {
    let d = TempDir::new("slurm-signal");
    let cfg = long_spec(d.path(), 40, 2);
    let out = d.path().join("out");
    let cmds = d.path().join("cmds.txt");
    let line = shlex::try_join([
        env!("CARGO_BIN_EXE_fedrun"),
        "--quiet",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    std::fs::write(&cmds, format!("{line}\n")).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm_array.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    for asked in [
        "#SBATCH --mem=",
        "#SBATCH --time=",
        "#SBATCH --signal=B:USR1@",
        "#SBATCH --requeue",
    ] {
        assert!(text.contains(asked), "the script asks for {asked}");
    }
    assert!(!text.contains("#SBATCH --gres"), "a GPU only when asked");
    let (bin, calls) = (d.path().join("bin"), d.path().join("scontrol.log"));
    std::fs::create_dir_all(&bin).unwrap();
    let fake = format!("#!/bin/sh\necho \"$@\" >> {}\n", calls.display());
    std::fs::write(bin.join("scontrol"), fake).unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(bin.join("scontrol"))
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let task = slurm_task(&script, &cmds, &path);
    let csv = out.join("t/rounds.csv");
    wait_for_lines(&csv, 2);
    // Slurm's early signal (--signal=B:USR1@…)
    let kill = Command::new("kill")
        .args(["-USR1", &task.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = task.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stopping: signal received"), "{err}");
    assert!(o.status.success(), "the requeued task ends well: {err}");
    let logged = std::fs::read_to_string(&calls).unwrap_or_default();
    assert_eq!(logged.trim(), "requeue 77_1", "{err}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        rows,
        "no orphan goes on"
    );
    let s = Summary::read(&out.join("t")).unwrap();
    assert_eq!(s.status, Status::Interrupted, "{s:?}");
    // a cancel: the run resumes, is stopped by SIGTERM to the script, and nothing is requeued
    let task = slurm_task(&script, &cmds, &path);
    wait_for_lines(&csv, rows.lines().count() + 1);
    let o = terminate(task);
    assert_eq!(
        o.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let logged = std::fs::read_to_string(&calls).unwrap_or_default();
    assert_eq!(logged.trim(), "requeue 77_1", "a cancel requeues nothing");
}

/// Task 1 of array job 77 of the Slurm script over `cmds`, with `path` as its PATH.
fn slurm_task(script: &Path, cmds: &Path, path: &str) -> Child {
    Command::new("bash")
        .arg(script)
        .arg(cmds)
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_JOB_ID", "77")
        .env("PATH", path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The synthetic MLP (hidden 200) with `clients` clients, all of them in every round, batches of
/// 50, then `extra` and `sets`.
fn mlp_round(clients: usize, extra: &str, sets: &[&str]) -> fedrun::config::Spec {
    let text = format!(
        "[data]\ndataset = \"synthetic\"\nnum_clients = {clients}\n[model]\nkind = \"mlp\"\nmlp_hidden = 200\n[fl]\nclients_per_round = {clients}\n[local]\nbatch_size = 50\n{extra}"
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    fedrun::schema::parse(&text, "t", &sets).unwrap()
}

/// A cohort of K holds K clients' copies and activations, as K client workers do: the memory
/// estimate scales with it and the size check refuses a cohort that does not fit, naming
/// `run.cohort`, where one client at a time fits.
#[test]
fn a_cohort_counts_its_clients_copies_and_activations() {
    use fedrun::fl::engine::resources::{check_spec, memory};
    let spec = |sets: &[&str]| mlp_round(10, "", sets);
    let (one, ten) = (memory(&spec(&[])), memory(&spec(&["run.cohort=10"])));
    let params = one.model / (4 * 16);
    assert_eq!(ten.model, params * 4 * (6 * 10 + 10));
    assert_eq!(ten.train, 10 * one.train);
    assert_eq!(ten.eval, one.eval);
    assert!(ten.peak() > one.peak());
    let budget = (one.peak() * 2) as u64;
    assert!(check_spec(&spec(&[]), budget).is_ok());
    let e = check_spec(&spec(&["run.cohort=10"]), budget).unwrap_err();
    assert!(e.to_string().contains("run.cohort"), "{e}");
}

/// `run.cohort = "auto"`: 1 on flex; on a GPU backend the largest K up to the round's clients
/// whose copies and a step's activations fit `run.cohort_mb`, so K grows with the budget, stops
/// at the round's clients, and the K picked fits where K + 1 does not, with the estimate that
/// `check` prints (tests/workflow.rs); a word other than "auto" is refused naming the key.
#[test]
fn an_automatic_cohort_fits_its_memory_budget() {
    use fedrun::fl::engine::resources::{cohort, memory};
    let spec = |sets: &[&str]| mlp_round(20, "[run]\ncohort = \"auto\"\n", sets);
    assert_eq!(cohort(&spec(&[])).0, 1, "flex");
    let on_gpu = |mb: f64| {
        let mut s = spec(&[&format!("run.cohort_mb={mb}")]);
        // a GPU backend, whether or not this build has one (the estimate reads the spec alone)
        s.run.backend = fedrun::config::Backend::Wgpu;
        let (k, why) = cohort(&s);
        assert!(why.unwrap().contains("run.cohort_mb"));
        (k, s)
    };
    let bytes = |s: &fedrun::config::Spec, k: usize| {
        let mut s = s.clone();
        s.run.cohort = k;
        let m = memory(&s);
        m.model + m.train
    };
    let (small, s) = on_gpu(100.0);
    assert!(small > 1 && small < 20, "{small}");
    assert!(bytes(&s, small) <= 100_000_000 && bytes(&s, small + 1) > 100_000_000);
    assert!(on_gpu(200.0).0 > small);
    assert_eq!(on_gpu(1e6).0, 20, "at most the round's clients");
    // spec.toml keeps the word
    assert!(spec(&[]).to_toml().contains("cohort = \"auto\""));
    let e = fedrun::schema::parse("[run]\ncohort = \"many\"\n", "t", &[]).unwrap_err();
    assert!(e.to_string().contains("cohort"), "{e}");
}

/// On a GPU, `run.cohort = "auto"` keeps K within 90 % of the device's free memory (its
/// capacity less what the process reserves) where that is below `run.cohort_mb`, and says so;
/// a device with more free memory than the budget leaves the budget's K.
#[test]
fn an_automatic_cohort_fits_the_devices_free_memory() {
    use fedrun::fl::engine::resources::{DEVICE_SHARE, cohort_within, memory};
    let mut s = mlp_round(20, "[run]\ncohort = \"auto\"\n", &["run.cohort_mb=1000"]);
    s.run.backend = fedrun::config::Backend::Wgpu;
    let bytes = |k: usize| {
        let mut s = s.clone();
        s.run.cohort = k;
        let m = memory(&s);
        (m.model + m.train) as u64
    };
    let (budget_k, _) = cohort_within(&s, None);
    assert!(budget_k > 4, "{budget_k}");
    // free: 4 clients' bytes over the share, the rest of the capacity reserved
    let free = (bytes(4) as f64 / DEVICE_SHARE) as u64 + 1;
    let (k, why) = cohort_within(&s, Some((free + 5_000_000_000, 5_000_000_000)));
    let why = why.unwrap();
    assert_eq!(k, 4, "{why}");
    assert!(why.contains("free memory"), "{why}");
    // a device with room to spare: the budget decides
    let (k, why) = cohort_within(&s, Some((u64::MAX / 2, 0)));
    assert_eq!(k, budget_k);
    assert!(why.unwrap().contains("run.cohort_mb"));
    // a device more than full: one client at a time
    assert_eq!(cohort_within(&s, Some((1_000, 2_000))).0, 1);
}

/// The memory limit read as clusters enforce it: what is left under the process's cgroup limit
/// (v2 `memory.max` less `memory.current` and the inactive file cache, v1
/// `memory.limit_in_bytes` less its usage, the
/// tightest of the cgroup and those above it; "max" and v1's near-2⁶³ are no limit), and Slurm's
/// `--mem` from its environment.
#[test]
fn the_memory_limit_is_the_cgroups_and_slurms() {
    use fedrun::fl::engine::memory_limit::{cgroup, slurm};
    let d = TempDir::new("cgroup");
    let write = |p: &str, v: &str| {
        let f = d.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, v).unwrap();
    };
    // v2: the job's cgroup limits, its parent does not
    write("job/step/memory.max", "400000000\n");
    write("job/step/memory.current", "150000000\n");
    // the inactive file cache is given back before a kill: not counted as used
    write(
        "job/step/memory.stat",
        "anon 90000000\ninactive_file 50000000\n",
    );
    write("job/memory.max", "max\n");
    let l = cgroup(d.path(), "0::/job/step\n").expect("a v2 limit");
    assert_eq!(l.bytes, 300_000_000);
    assert!(l.source.contains("memory.max"), "{}", l.source);
    // a parent tighter than the cgroup binds
    write("job/memory.max", "200000000\n");
    assert_eq!(
        cgroup(d.path(), "0::/job/step\n").unwrap().bytes,
        200_000_000
    );
    // v1 (a hybrid's memory controller): no limit on the cgroup, one at the container's root
    write("memory/ctr/memory.limit_in_bytes", "9223372036854771712\n");
    write("memory/memory.limit_in_bytes", "500000000\n");
    write("memory/memory.usage_in_bytes", "0\n");
    let v1 = "4:memory:/ctr\n3:cpu:/\n";
    assert_eq!(cgroup(d.path(), v1).unwrap().bytes, 500_000_000);
    assert!(
        cgroup(d.path(), "3:cpu:/\n").is_none(),
        "no memory controller, no limit"
    );
    // Slurm: per node, or per CPU times the CPUs
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| vars.iter().find(|v| v.0 == k).map(|v| v.1.to_string())
    };
    let node = slurm(env(&[("SLURM_MEM_PER_NODE", "400")])).unwrap();
    assert_eq!(node.bytes, 400 << 20);
    assert!(node.source.contains("--mem"), "{}", node.source);
    let cpu = slurm(env(&[
        ("SLURM_MEM_PER_CPU", "100"),
        ("SLURM_CPUS_ON_NODE", "4"),
    ]));
    assert_eq!(cpu.unwrap().bytes, 400 << 20);
    assert!(slurm(env(&[])).is_none());
}

/// Inside a job whose cgroup allows 40 MB, `fedrun check` refuses the quickstart (about 1 GB at
/// its peak) and names the job's limit, where before it read only the machine's free memory
/// and passed (the run was then killed by the kernel with no message).
#[test]
fn check_refuses_a_spec_over_the_jobs_memory_limit() {
    let d = TempDir::new("cgroup-check");
    // the limit at the root of both hierarchies, so that it binds whatever the cgroup path
    std::fs::write(d.path().join("memory.max"), "40000000\n").unwrap();
    std::fs::create_dir_all(d.path().join("memory")).unwrap();
    std::fs::write(d.path().join("memory/memory.limit_in_bytes"), "40000000\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fedrun"))
        .args(["check", "--no-data"])
        .env("FEDRUN_CGROUP_ROOT", d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "check passed inside 40 MB: {err}");
    assert!(err.contains("memory limit"), "the limit is named: {err}");
}

/// The out-of-memory killer's count of the process's cgroup: v2 `memory.events`' `oom_kill`, v1
/// `memory.oom_control`'s; None where there is no such file.
#[test]
fn the_oom_kills_are_read_from_the_cgroup() {
    use fedrun::fl::engine::memory_limit::oom_kills_in;
    let d = TempDir::new("oom-kills");
    let write = |p: &str, v: &str| {
        let f = d.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, v).unwrap();
    };
    write(
        "job/step/memory.events",
        "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 0\n",
    );
    assert_eq!(oom_kills_in(d.path(), "0::/job/step\n"), Some(2));
    write(
        "memory/ctr/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n",
    );
    assert_eq!(oom_kills_in(d.path(), "4:memory:/ctr\n3:cpu:/\n"), Some(5));
    assert_eq!(oom_kills_in(d.path(), "0::/elsewhere\n"), None);
}

/// The data set counts in the memory estimate: MNIST's 70,000 images as floats (220 MB) before
/// it is loaded, where the estimate counted only generated data (the Fed-LAMB MNIST CNN's run
/// peaked at 280 MB against an estimate of 32 MB). Inside 150 MB, `check --no-data` refuses it
/// naming the data set; with 400 MB it passes and says the data set's size. Once loaded, the
/// run counts the data set it holds ([`fedrun::data::FedData::bytes`]).
#[test]
fn the_data_set_counts_in_the_memory_estimate() {
    let cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/fedlamb/mnist_fedlamb.toml");
    let within = |mb: u64| {
        let d = TempDir::new("cgroup-data");
        let limit = format!("{}\n", mb * 1_000_000);
        std::fs::write(d.path().join("memory.max"), &limit).unwrap();
        std::fs::create_dir_all(d.path().join("memory")).unwrap();
        std::fs::write(d.path().join("memory/memory.limit_in_bytes"), &limit).unwrap();
        Command::new(env!("CARGO_BIN_EXE_fedrun"))
            .args(["check", "--no-data", "--config"])
            .arg(&cfg)
            .env("FEDRUN_CGROUP_ROOT", d.path())
            .output()
            .unwrap()
    };
    let small = within(150);
    let err = String::from_utf8_lossy(&small.stderr);
    assert!(!small.status.success(), "MNIST passed inside 150 MB: {err}");
    assert!(
        err.contains("data.dataset") && err.contains("data set"),
        "{err}"
    );
    let big = within(400);
    let out = String::from_utf8_lossy(&big.stdout);
    assert!(
        big.status.success(),
        "{}",
        String::from_utf8_lossy(&big.stderr)
    );
    assert!(out.contains("the data set 220.2 MB"), "{out}");
    // loaded: the bytes held, floats or bytes as the loader keeps them
    let s = fedrun::schema::parse(&common::synthetic_spec(""), "t", &[]).unwrap();
    let d = fedrun::data::load(&s, None).unwrap();
    let floats = (96 + 40) * 3 * 32 * 32 * 4;
    assert_eq!(d.bytes(), (floats + 96 + 40 + 8 * 96) as u128);
}
