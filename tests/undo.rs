//! A round stopped by a signal is undone (`Experiment::mark`, `rollback`): the experiment goes
//! back to where its last finished round left it, for every algorithm, in a federation whose
//! clients come and go, with per-client state in memory or spilled to the run folder, so that
//! the run can be checkpointed there and go on as if the round had never started.

mod common;

use common::TempDir;
use fedrun::data;
use fedrun::fl::engine::Experiment;
use fedrun::metrics::csv::Row;

/// Every algorithm on the synthetic spec (FedMLB on ResNet-18's stages, one step of 2 samples a
/// round): 6 clients, 2 a round, a federation of 4 of them, each of which leaves with
/// probability 1/2 every round; per-client state spilled beyond one byte to `spill` when given.
fn experiment(alg: &str, spill: Option<&std::path::Path>) -> Experiment {
    let mut set: Vec<String> = vec![
        format!("fl.algorithm=\"{alg}\""),
        "data.augmentation=\"none\"".into(),
        "data.num_clients=6".into(),
        "fl.active_clients=4".into(),
        "fl.replace_every=1".into(),
    ];
    if alg == "fedmlb" {
        // one step of 2 samples: at the spec's 3 of 8, FedMLB's rounds were all but 1 % of this
        // test's time (ResNet-18's weight transforms cost as much at any batch)
        set.extend(
            [
                "model.kind=\"resnet18\"",
                "local.batch_size=2",
                "local.steps=1",
            ]
            .map(String::from),
        );
    }
    if spill.is_some() {
        set.push("run.client_state_mb=0.000001".into());
    }
    let s = fedrun::schema::parse(&common::synthetic_spec(""), "t", &set).unwrap();
    let mut ex = Experiment::new(&s, data::load(&s, None).unwrap()).unwrap();
    if let Some(dir) = spill {
        ex.spill_client_state(dir, true).unwrap();
    }
    ex
}

/// The row of round t, without its time.
fn row(ex: &mut Experiment, t: usize) -> String {
    let r: Row = ex.round(t).unwrap();
    format!("{r:?}")
}

/// The global model and every state vector, in the order a checkpoint lists them.
fn state(ex: &mut Experiment) -> Vec<(String, Vec<f32>)> {
    let mut v = vec![("global".to_string(), ex.global.clone())];
    v.extend(
        ex.alg
            .state()
            .checkpoint()
            .into_iter()
            .map(|(n, x)| (n, x.to_vec())),
    );
    v
}

#[test]
fn a_round_undone_leaves_every_algorithm_as_its_last_finished_round_did() {
    let d = TempDir::new("undo");
    for alg in fedrun::fl::algorithms::NAMES {
        for spilled in [false, true] {
            let (a, b) = (
                d.path().join(format!("{alg}-a")),
                d.path().join(format!("{alg}-b")),
            );
            for p in [&a, &b] {
                std::fs::create_dir_all(p).unwrap();
            }
            let (mut undone, mut straight) = match spilled {
                true => (experiment(alg, Some(&a)), experiment(alg, Some(&b))),
                false => (experiment(alg, None), experiment(alg, None)),
            };
            for t in 0..2 {
                assert_eq!(row(&mut undone, t), row(&mut straight, t), "{alg}");
            }
            let before = state(&mut undone);
            let mark = undone.mark();
            row(&mut undone, 2);
            assert!(
                state(&mut undone) != before,
                "{alg}: round 3 changed nothing"
            );
            undone.rollback(mark).unwrap();
            if !spilled {
                // in memory, every vector as it was, by name and value
                let after = state(&mut undone);
                let names =
                    |v: &[(String, Vec<f32>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
                assert_eq!(names(&after), names(&before), "{alg}");
                for ((n, a), (_, b)) in after.iter().zip(&before) {
                    assert!(a == b, "{alg}: `{n}` is not as it was before the round");
                }
            }
            // the round again, and the rounds after it (clients sampled again read the state
            // the undone round had changed), as if it had never run
            for t in 2..6 {
                let mark = undone.mark();
                assert_eq!(
                    row(&mut undone, t),
                    row(&mut straight, t),
                    "{alg}, spilled: {spilled}, round {}",
                    t + 1
                );
                undone.keep(mark);
            }
            assert_eq!(undone.global, straight.global, "{alg}");
        }
    }
}
