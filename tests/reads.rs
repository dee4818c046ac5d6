//! What a device-resident local training reads back from the device: nothing inside a step.
//! A client's steps leave their losses and norms on the device and read them once at the end,
//! with the trained parameters in one more read; a cohort the same. So the reads of a run do
//! not grow with its local steps. On flex here; with `--features wgpu` also on wgpu (lavapipe
//! on a machine without a GPU), where a read waits for every queued kernel.
//!
//! One test function, so that no other test of this binary reads meanwhile (the count is the
//! process's).

mod common;

use common::{TempDir, columns, synthetic_spec};
use fedrun::fl::client::deferred::reads;
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;

/// The run's reads of local training and its rows, for the synthetic spec with `set`.
fn reads_of(d: &TempDir, name: &str, set: &[&str]) -> (usize, Vec<Vec<f64>>) {
    let mut set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    set.push(format!("run.name=\"{name}\""));
    set.push("run.local_step=\"device\"".into());
    set.push("local.max_norm=0.5".into());
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &set).unwrap();
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let before = reads();
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete, "{name}: {}", s.message);
    let n = reads() - before;
    (n, columns(&d.path().join(name).join("rounds.csv")))
}

/// Two rounds of two clients: each client's (or the cohort's) training reads twice (FedAvg),
/// or three times (Fed-LAMB: its moments too), at 3 steps as at 9, on every backend compiled in.
#[test]
fn no_step_reads_the_device() {
    let mut backends = vec!["flex"];
    if cfg!(feature = "wgpu") {
        backends.push("wgpu");
    }
    let d = TempDir::new("reads");
    for b in backends {
        let backend = format!("run.backend=\"{b}\"");
        for (alg, per_training) in [("fedavg", 2), ("fedlamb", 3)] {
            let a = format!("fl.algorithm=\"{alg}\"");
            for (cohort, trainings) in [("run.cohort=1", 2), ("run.cohort=2", 1)] {
                let mut got = Vec::new();
                for steps in [3, 9] {
                    let st = format!("local.steps={steps}");
                    let name = format!("{b}_{alg}_{}_{steps}", &cohort[11..]);
                    let (n, rows) = reads_of(&d, &name, &[&backend, &a, cohort, &st]);
                    assert_eq!(rows.len(), 2, "{name}: two rounds");
                    got.push(n);
                }
                // two rounds; per training one read of the steps' numbers, one of the
                // parameters and, for a rule with moments, one of them
                let want = 2 * trainings * per_training;
                assert_eq!(got, [want, want], "{b}, {alg}, {cohort}");
            }
        }
    }
}
