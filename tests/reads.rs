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

/// Every algorithm of the registry (and Mime with its SVRG term), two rounds of two clients:
/// each client's (or the cohort's) training reads the device a fixed number of times, at 2 local
/// steps as at 5, on every backend compiled in: twice (the steps' numbers, the parameters), or
/// three times for a rule whose moments the client sends up (Fed-LAMB's family). (Any two step
/// counts show it; at 3 and 9 this binary took 253 s on a 2-vCPU EPYC, FedMLB's ResNet-18 on
/// flex 95 s of it, and 167 s at 2 and 5.)
#[test]
fn no_step_reads_the_device() {
    let mut backends = vec!["flex"];
    if cfg!(feature = "wgpu") {
        backends.push("wgpu");
    }
    let mut cases: Vec<(String, Vec<String>)> = (fedrun::fl::algorithms::REGISTRY.iter())
        .map(|e| (e.name.to_string(), Vec::new()))
        .collect();
    // FedMLB's branches run ResNet-18's stages (in batches of 2: at 8 they took 40 % of this
    // test's time)
    let resnet = ["model.kind=\"resnet18\"", "local.batch_size=2"].map(String::from);
    (cases.iter_mut().filter(|c| c.0 == "fedmlb")).for_each(|c| c.1 = resnet.to_vec());
    let svrg = ["mime.base=\"sgdm\"", "mime.lite=false"].map(String::from);
    cases.push(("mime".into(), svrg.to_vec()));
    let d = TempDir::new("reads");
    for b in backends {
        let backend = format!("run.backend=\"{b}\"");
        for (i, (alg, keys)) in cases.iter().enumerate() {
            // on wgpu, the algorithms whose steps differ in kind: plain, the rules, Mime's term
            if b == "wgpu" && !["fedavg", "fedlamb", "mime"].contains(&alg.as_str()) {
                continue;
            }
            let moments = ["fedlamb", "fedams", "mimelamb"].contains(&alg.as_str())
                || (alg == "mime" && !keys.iter().any(|k| k.starts_with("mime.")));
            let per_training = if moments { 3 } else { 2 };
            let a = format!("fl.algorithm=\"{alg}\"");
            for (cohort, trainings) in [("run.cohort=1", 2), ("run.cohort=2", 1)] {
                let mut got = Vec::new();
                for steps in [2, 5] {
                    let st = format!("local.steps={steps}");
                    let name = format!("{b}_{alg}{i}_{}_{steps}", &cohort[11..]);
                    let mut set = vec![backend.as_str(), &a, cohort, &st];
                    set.extend(keys.iter().map(String::as_str));
                    let (n, rows) = reads_of(&d, &name, &set);
                    assert_eq!(rows.len(), 2, "{name}: two rounds");
                    got.push(n);
                }
                // two rounds; per training one read of the steps' numbers, one of the
                // parameters and, for a rule with moments, one of them
                let want = 2 * trainings * per_training;
                assert_eq!(got, [want, want], "{b}, {alg} {keys:?}, {cohort}");
            }
        }
    }
    captured_steps_read_as_eager_ones(&d);
}

/// The captured step (`run.graph = "on"`, batches of 2 so that the steps are full): its steps'
/// numbers are written into a table on the device and read with the eager steps' in the same
/// one read, so a training reads as many times as without it, at 3 local steps as at 9.
fn captured_steps_read_as_eager_ones(d: &TempDir) {
    use fedrun::fl::client::full_steps;
    let mut backends = vec!["flex"];
    if cfg!(feature = "wgpu") {
        backends.push("wgpu");
    }
    for b in backends {
        let backend = format!("run.backend=\"{b}\"");
        for (alg, per_training) in [("fedavg", 2), ("fedlamb", 3)] {
            let a = format!("fl.algorithm=\"{alg}\"");
            let mut got = Vec::new();
            for steps in [3, 9] {
                let st = format!("local.steps={steps}");
                let name = format!("graph_{b}_{alg}_{steps}");
                let before = full_steps();
                let set = [
                    backend.as_str(),
                    &a,
                    &st,
                    "run.graph=\"on\"",
                    "local.batch_size=2",
                ];
                let (n, rows) = reads_of(d, &name, &set);
                assert_eq!(rows.len(), 2, "{name}: two rounds");
                // 3 steps are too few to capture (the first step eager, 3 warm-up runs, then the
                // recorded one); 9 are captured
                let captured = full_steps() > before;
                assert_eq!(captured, steps == 9, "{name}: captured steps");
                got.push(n);
            }
            let want = 2 * 2 * per_training;
            assert_eq!(got, [want, want], "{b}, {alg} captured");
        }
    }
}
