//! The captured step (`run.graph`): a device training whose full steps run as one closure that
//! takes nothing from the host (burn's `capture`, which off CUDA runs the closure again at each
//! replay) gives every client the Δ, losses and clip counts of the eager device step, bit for
//! bit, with what changes from step to step: a learning rate that decays each local epoch,
//! AMSGrad's moments, the trust ratio, FedCM's factor, augmentation maps, dropout masks, clients
//! that stop early or take a short batch (padded steps, replayed too, within 1e-4 where the
//! padding changes a sum's order; or eager steps between replays), and Mime's starting-model
//! gradient. A closure that kept any of these from when it was made would repeat it at every
//! replay and fail.

mod common;

use fedrun::data;
use fedrun::fl::client::{LocalStats, eager_steps, full_steps};
use fedrun::fl::engine::{BurnClients, Experiment, LocalTrainer};

/// Δ_i and the stats of `clients` trained from the initial model in round 0 of `base` with
/// `sets`, as one cohort, on the device step with `run.graph` = `graph`.
fn deltas(
    base: &str,
    sets: &[&str],
    graph: &str,
    clients: &[usize],
) -> (Vec<Vec<f32>>, Vec<LocalStats>) {
    let (mut d, mut s) = trainings(base, sets, graph, &[clients]);
    (d.remove(0), s.remove(0))
}

/// [`deltas`] of each cohort of `cohorts` in turn, on the same trainer (round 0, the same
/// anchor).
#[allow(clippy::type_complexity)]
fn trainings(
    base: &str,
    sets: &[&str],
    graph: &str,
    cohorts: &[&[usize]],
) -> (Vec<Vec<Vec<f32>>>, Vec<Vec<LocalStats>>) {
    let clients = cohorts[0];
    let mut set: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    set.push(format!("run.cohort={}", clients.len()));
    set.push("run.client_workers=1".into());
    set.push(format!("run.graph=\"{graph}\""));
    let s = fedrun::schema::parse(base, "graph", &set).unwrap();
    let d = data::load(&s, None).unwrap();
    let mut ex = Experiment::new(&s, d).unwrap();
    let anchor = ex.global.clone();
    let mut bc = BurnClients {
        trainers: &mut ex.trainers,
        pools: &ex.pools,
        data: &ex.data,
        spec: &ex.spec,
        device: &ex.device,
        stop: None,
        cohort: ex.cohort,
    };
    let (mut ds, mut stats) = (Vec::new(), Vec::new());
    for clients in cohorts {
        let plans = clients.iter().map(|&c| ex.alg.plan(c)).collect();
        stats.push(bc.train_many(0, clients, &anchor, plans).expect("trained"));
        let d: Vec<Vec<f32>> = (0..clients.len()).map(|k| bc.delta(k).to_vec()).collect();
        ds.push(d);
    }
    (ds, stats)
}

/// One comparison at a time in this binary: the counts of captures and captured steps are the
/// process's.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The largest difference between `a` and `b` relative to `b`'s largest magnitude.
fn relative(a: &[f32], b: &[f32]) -> f32 {
    let d = a
        .iter()
        .zip(b)
        .map(|(u, v)| (u - v).abs())
        .fold(0f32, f32::max);
    d / b.iter().map(|v| v.abs()).fold(f32::MIN_POSITIVE, f32::max)
}

/// The captured path against the eager one on `base` with `sets`: the same bits, and the
/// closure ran; for the clients `short`, which take a short batch (a padded step: the padding's
/// zero rows join the sums of the weights' gradients, in another order), Δ within 1e-4 of its
/// largest magnitude and the loss within 1e-6. Measured after two epochs: Δ 1e-7 to 3.3e-6 on
/// an AVX-512 EPYC (family 25, Zen 4); on an AVX2-only EPYC (family 25 model 1, Zen 3) 5e-8 to
/// 4e-6, but 1.3e-5 for FedNAR's clip at 0.05 (every step clipped: the update is the gradient
/// over its own norm, so a small gradient's rounding reaches Δ whole), at both of its levels,
/// and Mime's 8.1e-6 at the SSE2 level; the loss at most 1.1e-8. A padding that weighed the
/// short batches' rows 1 % too much moved Δ by 2.3e-2 (tried there). How many steps the
/// captured training ran eagerly.
fn replays_as_eager(base: &str, sets: &[&str], clients: &[usize], short: &[usize]) -> usize {
    let _one = one_at_a_time();
    let (eager, s0) = deltas(base, sets, "off", clients);
    let (before, eager_before) = (full_steps(), eager_steps());
    let (captured, s1) = deltas(base, sets, "on", clients);
    assert!(full_steps() > before, "{sets:?}: no step ran captured");
    for (k, (a, b)) in captured.iter().zip(&eager).enumerate() {
        assert!(
            b.iter().any(|&v| v != 0.0),
            "{sets:?}: client {k} moved nothing"
        );
        let (d, l0, l1) = (relative(a, b), s0[k].loss_sum, s1[k].loss_sum);
        if short.contains(&clients[k]) {
            assert!(d <= 1e-4, "{sets:?}: client {k}'s Δ differs by {d:e}");
            assert!((l0 - l1).abs() <= 1e-6 * l0.abs(), "{sets:?}: {l0} ≠ {l1}");
        } else {
            assert!(
                bits(a) == bits(b),
                "{sets:?}: client {k}'s Δ differs by {d:e}"
            );
            assert_eq!(l0.to_bits(), l1.to_bits(), "{sets:?}: client {k}'s loss");
        }
        assert_eq!(s0[k].steps, s1[k].steps, "{sets:?}: client {k}'s steps");
        assert_eq!(
            s0[k].clipped, s1[k].clipped,
            "{sets:?}: client {k}'s clipped steps"
        );
    }
    eager_steps() - eager_before
}

/// Clients with 30, 17, 40 and 9 samples at batch 3 for 2 epochs: steps 0–4 are full, then
/// short batches (clients 1 and 2: [`SHORT`]) and clients that have stopped, which the graph
/// replays padded, or which run eagerly between replays where a local loss reads the batch.
/// The clients of [`unequal`] that take a short batch.
const SHORT: [usize; 2] = [1, 2];

fn unequal(dir: &common::TempDir) -> Vec<String> {
    let mut sets = common::partition_file(dir.path(), &[30, 17, 40, 9]);
    sets.extend([
        "data.synthetic_train = 96".into(),
        "local.epochs=2".into(),
        "local.batch_size=3".into(),
        // the learning rate decays each local epoch (FedACG's LambdaLR)
        "local.lr_schedule=\"epoch\"".into(),
        "local.lr_decay=0.5".into(),
    ]);
    sets
}

/// A graph captured in one training serves the trainer's next ones (other clients, the same
/// shapes): their anchors, tables and moments are written into the buffers it replays on, and
/// they get the eager steps' bits with one capture for all three (`kept` asserts the count).
fn kept_graph_serves_the_next_trainings(base: &str, sets: &[&str], kept: bool) {
    let _one = one_at_a_time();
    let cohorts: [&[usize]; 3] = [&[0, 1], &[2, 3], &[1, 2]];
    let (eager, s0) = trainings(base, sets, "off", &cohorts);
    let (before, eager_before) = (
        fedrun::fl::client::captures(),
        fedrun::fl::client::eager_steps(),
    );
    let (captured, s1) = trainings(base, sets, "on", &cohorts);
    let made = fedrun::fl::client::captures() - before;
    assert_eq!(made == 1, kept, "{sets:?}: {made} captures for 3 trainings");
    // every step full: a training's first step is eager, unless it takes the kept graph, which
    // replays it too
    let ran = fedrun::fl::client::eager_steps() - eager_before;
    assert_eq!(ran, if kept { 1 } else { 3 }, "{sets:?}: eager steps");
    for (t, (a, b)) in captured.iter().zip(&eager).enumerate() {
        for k in 0..2 {
            assert!(
                bits(&a[k]) == bits(&b[k]),
                "{sets:?}: training {t}, client {k}'s Δ"
            );
            assert_eq!(s0[t][k].loss_sum.to_bits(), s1[t][k].loss_sum.to_bits());
        }
    }
}

#[test]
fn a_kept_graph_serves_the_trainers_next_trainings() {
    let base = common::synthetic_spec("");
    let sets = ["local.steps=9", "local.batch_size=2", "model.kind=\"mlp\""];
    kept_graph_serves_the_next_trainings(&base, &sets, true);
    let with = |a: &'static str| -> Vec<&str> { [&sets[..], &[a]].concat() };
    // moments, a per-client shift (SCAFFOLD's control variates), the prox term's anchors, the
    // local momentum's buffer (back at 0 for each training)
    for alg in [
        "fl.algorithm=\"fedlamb\"",
        "fl.algorithm=\"scaffold\"",
        "fl.algorithm=\"fedprox\"",
        "local.momentum=0.9",
    ] {
        kept_graph_serves_the_next_trainings(&base, &with(alg), true);
    }
    // FedNTD's frozen global model and its own loss: a graph per training
    kept_graph_serves_the_next_trainings(&base, &with("fl.algorithm=\"fedntd\""), false);
}

#[test]
fn the_captured_step_gives_the_eager_steps_bits_for_every_plan_family() {
    let dir = common::TempDir::new("graph-partition");
    let base = common::synthetic_spec("");
    let sets = unequal(&dir);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let all = [0, 1, 2, 3];
    // padded: only the first step runs eagerly
    assert_eq!(replays_as_eager(&base, &sets, &all, &SHORT), 1);
    let with = |more: &[&'static str]| -> Vec<&str> { [&sets[..], more].concat() };
    let aug = with(&["data.augmentation=\"sample\""]);
    assert_eq!(replays_as_eager(&base, &aug, &all, &SHORT), 1);
    let nar = with(&["local.nar=true", "local.max_norm=0.05"]);
    replays_as_eager(&base, &nar, &all, &SHORT);
    let momentum = with(&["local.momentum=0.9"]);
    assert_eq!(replays_as_eager(&base, &momentum, &all, &SHORT), 1);
    for alg in ["fedams", "fedlamb", "fedacg", "fedcm", "scaffold"] {
        let a = format!("fl.algorithm=\"{alg}\"");
        let a: &'static str = Box::leak(a.into_boxed_str());
        assert_eq!(
            replays_as_eager(&base, &with(&[a]), &all, &SHORT),
            1,
            "{alg}"
        );
    }
    // the local losses that are means over their samples (FedNTD's, with its frozen global
    // model; FedLC's) pad too; FedDecorr's reads the batch's statistics: its short and stopped
    // steps run eagerly between replays, to the bit
    for alg in ["fedntd", "fedlc"] {
        let a = format!("fl.algorithm=\"{alg}\"");
        let a: &'static str = Box::leak(a.into_boxed_str());
        assert_eq!(
            replays_as_eager(&base, &with(&[a]), &all, &SHORT),
            1,
            "{alg}"
        );
    }
    let decorr = with(&["fl.algorithm=\"feddecorr\""]);
    assert!(replays_as_eager(&base, &decorr, &all, &[]) > 1);
    let mime = [
        "fl.algorithm=\"mime\"",
        "mime.base=\"sgdm\"",
        "mime.lite=false",
    ];
    assert_eq!(replays_as_eager(&base, &with(&mime), &[0, 2], &SHORT), 1);
}

/// A capture that the backend refuses (an allocation no held page could serve, which an
/// intermittent cold start on lavapipe showed) loses the training's state: the trainer trains
/// those clients again eagerly from their inputs, the streams as they were before the steps were
/// drawn ahead. With augmentation maps and FedLAMB's moments, the result has the eager
/// training's bits (a stream not set back, or the lost state kept, fails it), and the trainer's
/// next training captures again.
#[test]
fn a_refused_capture_trains_the_clients_again_eagerly_to_the_same_bits() {
    let _one = one_at_a_time();
    let base = common::synthetic_spec("");
    let sets = [
        "local.steps=9",
        "local.batch_size=2",
        "model.kind=\"mlp\"",
        "data.augmentation=\"sample\"",
        "fl.algorithm=\"fedlamb\"",
    ];
    let cohorts: [&[usize]; 2] = [&[0, 1], &[2, 3]];
    let (eager, s0) = trainings(&base, &sets, "off", &cohorts);
    let (failed, made) = (
        fedrun::kernels::capture::failures(),
        fedrun::fl::client::captures(),
    );
    fedrun::kernels::capture::refuse_captures(1);
    let (captured, s1) = trainings(&base, &sets, "on", &cohorts);
    fedrun::kernels::capture::refuse_captures(0);
    assert_eq!(fedrun::kernels::capture::failures() - failed, 1);
    assert_eq!(
        fedrun::fl::client::captures() - made,
        2,
        "one refused, one kept"
    );
    for (t, (a, b)) in captured.iter().zip(&eager).enumerate() {
        for k in 0..2 {
            assert!(bits(&a[k]) == bits(&b[k]), "training {t}, client {k}'s Δ");
            assert_eq!(s0[t][k].loss_sum.to_bits(), s1[t][k].loss_sum.to_bits());
            assert_eq!(s0[t][k].steps, s1[t][k].steps);
        }
    }
}

/// Dropout: the masks of the quickstart's transformer (with dropout 0.1) come from the seeds'
/// table at the step index; one client alone (K = 1), 12 full steps.
#[test]
fn the_captured_step_draws_the_eager_steps_dropout_masks() {
    let base = std::fs::read_to_string("configs/quickstart.toml").unwrap();
    let sets = ["model.dropout=0.1", "local.steps=12"];
    replays_as_eager(&base, &sets, &[3], &[]);
    replays_as_eager(&base, &sets, &[1, 4], &[]);
}

/// On the GPU backend (lavapipe in CI): the batches gathered by fedrun's kernel from the split
/// kept on the device, the dropout masks drawn from the seeds' table by the mask kernel, the
/// chain from its tables, burn's fusion writing the state in place: the captured closure still
/// gives the eager steps' bits.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_captured_step_gives_the_eager_steps_bits_on_wgpu() {
    let dir = common::TempDir::new("graph-wgpu");
    let base = common::synthetic_spec("");
    let sets = unequal(&dir);
    let mut sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    sets.push("run.backend=\"wgpu\"");
    let all = [0, 1, 2, 3];
    // each capture records a graph: cubecl's capture window on wgpu refuses any upload or read
    // inside it, so nothing in the step touches the host, and the replays run on the buffers
    // the capture saw, so every state is written in place
    let recorded = |base: &str, sets: &[&str], clients: &[usize], short: &[usize]| {
        let before = fedrun::fl::client::hardware_graphs();
        replays_as_eager(base, sets, clients, short);
        let got = fedrun::fl::client::hardware_graphs() - before;
        assert!(got > 0, "{sets:?}: no graph recorded");
    };
    // a padded step's copies run as one group (eagerly, the clients of each batch size as
    // one): on wgpu that changes the full clients' rounding too, so every client is within
    // tolerance here
    recorded(&base, &sets, &all, &all);
    let lamb: Vec<&str> = [&sets[..], &["fl.algorithm=\"fedlamb\""]].concat();
    recorded(&base, &lamb, &all, &all);
    let quick = std::fs::read_to_string("configs/quickstart.toml").unwrap();
    // (batches of 5: at the quickstart's 25 the transformer's steps took 45 % of this test's
    // time on lavapipe)
    let drop = [
        "model.dropout=0.1",
        "local.steps=8",
        "local.batch_size=5",
        "run.backend=\"wgpu\"",
    ];
    recorded(&quick, &drop, &[1, 4], &[]);
    // a graph kept across trainings replays on the buffers it recorded: the next trainings'
    // values are written into them in place, or the replays would train on the first's
    let mlp = [
        "local.steps=9",
        "local.batch_size=2",
        "run.backend=\"wgpu\"",
    ];
    let before = fedrun::fl::client::hardware_graphs();
    kept_graph_serves_the_next_trainings(&base, &mlp, true);
    let lamb: Vec<&str> = [&mlp[..], &["fl.algorithm=\"fedlamb\""]].concat();
    kept_graph_serves_the_next_trainings(&base, &lamb, true);
    assert!(
        fedrun::fl::client::hardware_graphs() >= before + 2,
        "kept graphs recorded"
    );
}

/// (accuracy, loss) of each of `params` on `base` + `sets`'s test split at evaluation batch
/// `batch`, scored on the device eagerly and with the full batches captured (one evaluator,
/// its graph kept from one evaluation to the next); and the captures the second made.
#[allow(clippy::type_complexity)]
fn evaluations(
    base: &str,
    sets: &[&str],
    batch: usize,
    scale: &[f32],
) -> (Vec<(f64, f64)>, Vec<(f64, f64)>, usize) {
    use fedrun::metrics::eval::Evaluator;
    let set: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = fedrun::schema::parse(base, "eval-graph", &set).unwrap();
    let d = data::load(&s, None).unwrap();
    let shape = fedrun::fl::engine::shape_of(&d);
    let model = fedrun::model::Model::build(&s.model, shape, fedrun::kernels::Kernels::Fedrun);
    let model = model.unwrap();
    let (_, device) = fedrun::fl::engine::devices_for(&s.run).unwrap();
    let global = Experiment::new(&s, d.clone()).unwrap().global;
    let make = |graph| {
        Evaluator::new(model.clone(), device.clone(), batch)
            .scored_on_device()
            .with_graph(graph)
    };
    let (mut eager, mut captured) = (make(false), make(true));
    let before = fedrun::fl::client::captures();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &f in scale {
        let p: Vec<f32> = global.iter().map(|v| v * f).collect();
        a.push(eager.evaluate(&p, &d.test).expect("scored"));
        b.push(captured.evaluate(&p, &d.test).expect("scored"));
    }
    (a, b, fedrun::fl::client::captures() - before)
}

/// The evaluation's full batches and its short last batch, each shape captured once and
/// replayed (`run.graph`), score as the eager device scoring does, bit for bit, evaluation
/// after evaluation of other parameters on the kept graphs: a graph that kept the first
/// parameters, or an index or table not set back, would repeat the first evaluation or read
/// past its table.
fn captured_evaluations_score_as_eager(base: &str, sets: &[&str]) {
    let _one = one_at_a_time();
    let scale = [1.0, 0.5, 2.0];
    // 40 test samples: 6 full batches and a short one; 3 (fewer than a capture runs the
    // closure: its warm-up wraps around to the first batches) and a short one; 1 and none
    for batch in [6, 12, 40] {
        let (eager, captured, made) = evaluations(base, sets, batch, &scale);
        // the short last batch (40 is no multiple of 6 or 12) its own graph
        let graphs = if 40 % batch == 0 { 1 } else { 2 };
        assert_eq!(
            made, graphs,
            "batch {batch}: one capture a batch shape serves every evaluation"
        );
        for (e, c) in eager.iter().zip(&captured) {
            let why = format!("batch {batch}: {eager:?} {captured:?}");
            assert_eq!(e.0.to_bits(), c.0.to_bits(), "accuracy, {why}");
            assert_eq!(e.1.to_bits(), c.1.to_bits(), "loss, {why}");
        }
        assert!(
            eager[0].1 != eager[1].1 && eager[1].1 != eager[2].1,
            "{eager:?}"
        );
    }
}

/// An evaluation whose capture the backend refuses scores eagerly, to the eager scoring's bits
/// (the refused run's pair is not counted, the kept state is dropped), and the next evaluation
/// captures anew and keeps that graph.
#[test]
fn a_refused_evaluation_capture_scores_eagerly_and_the_next_captures() {
    let _one = one_at_a_time();
    let base = common::synthetic_spec("");
    let failed = fedrun::kernels::capture::failures();
    fedrun::kernels::capture::refuse_captures(1);
    let (eager, captured, made) = evaluations(&base, &[], 6, &[1.0, 0.5, 2.0]);
    fedrun::kernels::capture::refuse_captures(0);
    assert_eq!(fedrun::kernels::capture::failures() - failed, 1);
    assert_eq!(
        made, 3,
        "the refused capture, then one a batch shape for the other two"
    );
    for (e, c) in eager.iter().zip(&captured) {
        assert_eq!(e.0.to_bits(), c.0.to_bits(), "{eager:?} {captured:?}");
        assert_eq!(e.1.to_bits(), c.1.to_bits(), "{eager:?} {captured:?}");
    }
}

#[test]
fn captured_evaluations_score_as_eager_on_flex() {
    let base = common::synthetic_spec("");
    captured_evaluations_score_as_eager(&base, &[]);
}

/// On lavapipe, each evaluation's full batches replay a recorded graph (no upload or read in
/// it), so the parameters, the index and the table must be written in place.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn captured_evaluations_record_a_graph_on_wgpu() {
    let base = common::synthetic_spec("");
    let before = fedrun::fl::client::hardware_graphs();
    captured_evaluations_score_as_eager(&base, &["run.backend=\"wgpu\""]);
    assert!(
        fedrun::fl::client::hardware_graphs() > before,
        "no graph recorded"
    );
}

/// A state that a graph replays on moves on at every replay, written back into its own buffer
/// (`kernels::capture::in_place`), even where the step also reduces it. With burn's fusion, the
/// update `x ← x − l·‖x‖·u` went to a new buffer when fused with the reduction of x, and each
/// replay started again from the x the recording saw (LAMB's trust ratio: the state after 8
/// steps was the state after 5). Recorded on lavapipe, against the same steps run eagerly, for
/// rows of one and three clients, short and long (row sums in pieces).
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_replayed_state_moves_on_where_its_step_reduces_it() {
    use burn::tensor::{Tensor, TensorData};
    use fedrun::kernels::capture;
    use std::cell::RefCell;
    use std::rc::Rc;
    let _one = one_at_a_time();
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .1;
    let values = |k: usize, n: usize, seed: u32| {
        let v: Vec<f32> = (0..k * n)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000)
            .map(|h| h as f32 / 1000.0 - 0.5)
            .collect();
        Tensor::<2>::from_data(TensorData::new(v, [k, n]), &dev)
    };
    let lr = Tensor::<2>::from_data(TensorData::new(vec![0.1f32], [1, 1]), &dev);
    let step = |x: &mut Tensor<2>, g: &Tensor<2>| {
        let norm = fedrun::optim::row_sums(x.clone() * x.clone()).sqrt();
        let u = (g.clone() + x.clone() * 0.5) * (norm * lr.clone());
        capture::in_place(x, |x| x - u);
    };
    let read = |x: &Tensor<2>| bits(&x.clone().into_data().try_to_vec::<f32>().unwrap());
    for (k, n) in [(1, 40), (3, 40), (3, 5000)] {
        let g = values(k, n, 7);
        let mut eager = values(k, n, 1);
        for _ in 0..8 {
            step(&mut eager, &g);
        }
        let x = Rc::new(RefCell::new(values(k, n, 1)));
        step(&mut x.borrow_mut(), &g);
        let (xc, gc) = (x.clone(), g.clone());
        let (mut graph, ran) =
            capture::record(&dev, move || step(&mut xc.borrow_mut(), &gc)).unwrap();
        assert!(graph.is_hardware(), "no graph recorded");
        for _ in 1 + ran..8 {
            // SAFETY: the closure holds what it touches
            unsafe { capture::replay(&mut graph) }.unwrap();
        }
        assert!(
            read(&x.borrow()) == read(&eager),
            "[{k}, {n}]: not the eager steps' bits"
        );
    }
}
