//! Per-client state beyond `run.client_state_mb`, spilled to the run folder: the same CSV as in
//! memory, a resume from a checkpoint older than the spill file's last writes, and a damaged or
//! truncated spill file refused.

mod common;

use std::path::Path;

use common::{TempDir, synthetic_spec, without_time};
use fedrun::config::Spec;
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;

/// 8 clients, 3 a round, `rounds` rounds, checkpoints every 2, with `sets`.
fn spec(alg: &str, rounds: usize, sets: &[&str]) -> Spec {
    let text = synthetic_spec("")
        .replace("rounds = 2", &format!("rounds = {rounds}"))
        .replace("num_clients = 4", "num_clients = 8")
        .replace("clients_per_round = 2", "clients_per_round = 3")
        .replace("checkpoint_every = 1", "checkpoint_every = 2");
    let mut set = vec![format!("fl.algorithm=\"{alg}\"")];
    set.extend(sets.iter().map(|s| s.to_string()));
    fedrun::schema::parse(&text, "t", &set).unwrap()
}

fn opts(out: &Path, max: Option<usize>) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        max_rounds_this_call: max,
        ..Default::default()
    }
}

/// The spill files of a run folder, with their sizes.
fn spill_files(dir: &Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e))
        .filter(|(n, _)| n.starts_with("client_state_"))
        .map(|(n, e)| (n, e.metadata().unwrap().len()))
        .collect();
    out.sort();
    out
}

#[test]
fn spilled_client_state_gives_the_in_memory_csv() {
    // 1 byte of budget: only the clients being trained stay in memory
    let d = TempDir::new("spill");
    for alg in ["scaffold", "feddyn", "feddc", "moon", "fedlamb"] {
        for workers in ["1", "2"] {
            let w = format!("run.client_workers={workers}");
            let mem = spec(alg, 5, &[&w]);
            let disk = spec(alg, 5, &[&w, "run.client_state_mb=0.000001"]);
            let (a, b) = (
                d.path().join(format!("{alg}{workers}m")),
                d.path().join(format!("{alg}{workers}d")),
            );
            assert_eq!(run(&mem, &opts(&a, None)).unwrap().status, Status::Complete);
            assert_eq!(
                run(&disk, &opts(&b, None)).unwrap().status,
                Status::Complete
            );
            assert_eq!(
                without_time(&a.join("t/rounds.csv")),
                without_time(&b.join("t/rounds.csv")),
                "{alg}, {workers} worker(s)"
            );
            assert!(
                spill_files(&a.join("t")).is_empty(),
                "{alg}: nothing spilled without a budget"
            );
            let files = spill_files(&b.join("t"));
            assert!(
                !files.is_empty() && files.iter().all(|(_, n)| *n > 0),
                "{alg}: {files:?}"
            );
        }
    }
}

#[test]
fn a_checkpoint_older_than_the_spill_files_last_writes_resumes_exactly() {
    // The run is checkpointed at round 2, trains round 3 (spilling into the file the round-2
    // checkpoint refers to) and is then put back to its round-2 checkpoint, as if it had been
    // killed before the next one landed: it must resume to the uninterrupted CSV.
    let d = TempDir::new("spill-resume");
    for alg in ["scaffold", "feddc"] {
        let s = spec(alg, 6, &["run.client_state_mb=0.000001"]);
        let full = d.path().join(format!("{alg}-full"));
        run(&s, &opts(&full, None)).unwrap();
        let part = d.path().join(format!("{alg}-part"));
        assert_eq!(
            run(&s, &opts(&part, Some(2))).unwrap().status,
            Status::Interrupted
        );
        let ckpt = part.join("t/checkpoint.bin");
        let at_two = std::fs::read(&ckpt).unwrap();
        assert_eq!(
            run(&s, &opts(&part, Some(1))).unwrap().status,
            Status::Interrupted
        );
        std::fs::write(&ckpt, at_two).unwrap();
        assert_eq!(
            run(&s, &opts(&part, None)).unwrap().status,
            Status::Complete
        );
        assert_eq!(
            without_time(&full.join("t/rounds.csv")),
            without_time(&part.join("t/rounds.csv")),
            "{alg}"
        );
    }
}

#[test]
fn a_damaged_or_truncated_spill_file_is_refused() {
    let d = TempDir::new("spill-damage");
    let s = spec("feddyn", 6, &["run.client_state_mb=0.000001"]);
    for fault in ["damaged", "truncated"] {
        let out = d.path().join(fault);
        assert_eq!(
            run(&s, &opts(&out, Some(4))).unwrap().status,
            Status::Interrupted
        );
        let file = out.join("t/client_state_g.bin");
        let mut bytes = std::fs::read(&file).unwrap();
        match fault {
            "damaged" => bytes.iter_mut().for_each(|b| *b ^= 0x5a),
            _ => bytes.truncate(bytes.len() / 2),
        }
        std::fs::write(&file, bytes).unwrap();
        let err = run(&s, &opts(&out, None)).unwrap_err().to_string();
        let want = match fault {
            "damaged" => "fails its checksum",
            _ => "is truncated",
        };
        assert!(
            err.contains(want) && err.contains("client_state_g.bin"),
            "{fault}: {err}"
        );
    }
}
