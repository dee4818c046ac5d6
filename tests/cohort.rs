//! The cohort step (`run.cohort`): clients trained as one batched computation give each client
//! the Δ_i it gets trained alone, to float rounding, for every family of client plan that
//! stacks (plain SGD, an affine term, a rule with per-client moments and trust ratios, the
//! FedNAR clip); clients with unequal data (short batches, different step counts); the same
//! bits at a fixed cohort; and a plan that does not stack trains one at a time, bit for bit.

mod common;

use common::stacked::rel_diff;
use fedrun::data;
use fedrun::fl::client::LocalStats;
use fedrun::fl::engine::{BurnClients, Experiment, LocalTrainer};
use fedrun::fl::plan::ClientPlan;
use fedrun::fl::term::{Coef, Term};
use fedrun::kernels::Kernels;

/// Δ_i and the stats of `clients` trained from the initial model in round 0 of the synthetic
/// spec with `sets`, with `run.cohort` = `cohort`.
fn deltas(sets: &[&str], cohort: usize, clients: &[usize]) -> (Vec<Vec<f32>>, Vec<LocalStats>) {
    deltas_on(&common::synthetic_spec(""), sets, cohort, clients)
}

/// [`deltas`] on the spec `base`.
fn deltas_on(
    base: &str,
    sets: &[&str],
    cohort: usize,
    clients: &[usize],
) -> (Vec<Vec<f32>>, Vec<LocalStats>) {
    deltas_window(base, sets, cohort, clients, None, None)
}

/// [`deltas_on`] with the trainers' tables holding `window` steps at once (None: the default)
/// and each client's term `term` (None: its algorithm's plan).
fn deltas_window(
    base: &str,
    sets: &[&str],
    cohort: usize,
    clients: &[usize],
    window: Option<usize>,
    term: Option<&Term>,
) -> (Vec<Vec<f32>>, Vec<LocalStats>) {
    let mut set: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    set.push(format!("run.cohort={cohort}"));
    set.push("run.client_workers=1".into());
    let s = fedrun::schema::parse(base, "cohort", &set).unwrap();
    let d = data::load(&s, None).unwrap();
    let mut ex = Experiment::new(&s, d).unwrap();
    assert_eq!(ex.cohort, cohort, "a cohort trainer for {sets:?}");
    if let Some(w) = window {
        ex.trainers = ex.trainers.drain(..).map(|t| t.with_window(w)).collect();
    }
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
    // as the round gives them: `width` clients at a time
    let (mut ds, mut stats) = (Vec::new(), Vec::new());
    for chunk in clients.chunks(bc.width()) {
        let plans = (chunk.iter())
            .map(|&c| match term {
                Some(t) => ClientPlan {
                    term: t.clone(),
                    ..ClientPlan::default()
                },
                None => ex.alg.plan(c),
            })
            .collect();
        stats.extend(bc.train_many(0, chunk, &anchor, plans).expect("trained"));
        ds.extend((0..chunk.len()).map(|k| bc.delta(k).to_vec()));
    }
    (ds, stats)
}

/// Cohort and one-at-a-time training agree client by client, in Δ_i and in the stats: bit for
/// bit with fedrun's kernels (each copy runs the kernels, shapes and sums it runs alone), to
/// 1e-4 with burn's ops (`run.kernels = "burn"`: the GPU backends' grouped form, whose grouped
/// convolution and batched products sum in their own order).
fn agree(sets: &[&str], clients: &[usize]) {
    agree_on(&common::synthetic_spec(""), sets, clients);
}

/// [`agree`] on the spec `base`.
fn agree_on(base: &str, sets: &[&str], clients: &[usize]) {
    let exact = !sets.contains(&"run.kernels=\"burn\"");
    let (alone, s1) = deltas_on(base, sets, 1, clients);
    let (together, sk) = deltas_on(base, sets, clients.len(), clients);
    for (k, (a, b)) in together.iter().zip(&alone).enumerate() {
        assert!(
            b.iter().any(|&v| v != 0.0),
            "{sets:?}: client {k} moved nothing alone"
        );
        let d = rel_diff(a, b);
        let dl = (s1[k].loss_sum - sk[k].loss_sum).abs() / s1[k].loss_sum.abs().max(1e-6);
        if exact {
            assert!(
                bits(a) == bits(b),
                "{sets:?}: client {k}'s Δ differs by {d:e}"
            );
            assert!(
                s1[k].loss_sum.to_bits() == sk[k].loss_sum.to_bits(),
                "{sets:?}: client {k}'s loss differs by {dl:e}"
            );
        } else {
            assert!(d < 1e-4, "{sets:?}: client {k}'s Δ differs by {d:e}");
            assert!(dl < 1e-4, "{sets:?}: client {k}'s loss differs by {dl:e}");
        }
        assert_eq!(s1[k].steps, sk[k].steps, "{sets:?}: client {k}'s steps");
        assert_eq!(
            s1[k].samples, sk[k].samples,
            "{sets:?}: client {k}'s samples"
        );
        assert_eq!(
            s1[k].clipped, sk[k].clipped,
            "{sets:?}: client {k}'s clipped steps"
        );
    }
}

/// The bits of `v`'s values (so that -0 and 0, or two NaNs, are told apart or not as stored).
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

const MLP: &str = "model.kind=\"mlp\"";

#[test]
fn a_cohort_of_mlps_trains_each_client_as_alone() {
    agree(&[MLP], &[0, 1, 2, 3]);
    agree(&["model.kind=\"linear\""], &[3, 1]);
}

#[test]
fn every_stackable_plan_family_agrees_with_one_at_a_time() {
    for alg in [
        "fedprox", "scaffold", "fedacg", "feddyn", "fedcm", "fedlamb", "fedams",
    ] {
        agree(&[MLP, &format!("fl.algorithm=\"{alg}\"")], &[0, 1, 2]);
    }
    // FedNAR's joint clip, clipping at every step
    agree(&[MLP, "local.nar=true", "local.max_norm=0.05"], &[0, 2]);
}

/// Clients of 30, 17, 40 and 9 of the 96 samples (a partition file in `dir`), two epochs of
/// batch 6: different step counts (10, 6, 14, 4) and short last batches of different sizes
/// (0, 5, 4, 3).
fn unequal(dir: &common::TempDir) -> Vec<String> {
    let mut sets = common::partition_file(dir.path(), &[30, 17, 40, 9]);
    sets.extend([
        MLP.into(),
        "local.epochs=2".into(),
        "local.batch_size=6".into(),
    ]);
    sets
}

#[test]
fn clients_with_unequal_data_step_and_weigh_as_alone() {
    let dir = common::TempDir::new("cohort-partition");
    let sets = unequal(&dir);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (_, stats) = deltas(&sets, 1, &[0, 1, 2, 3]);
    let steps: Vec<usize> = stats.iter().map(|s| s.steps).collect();
    assert_eq!(steps, [10, 6, 14, 4]);
    agree(&sets, &[0, 1, 2, 3]);
}

/// FedDC, Mime's SVRG term (the starting rows' gradients in the step's one backward), unequal
/// data with Fed-LAMB and with the local momentum (clients past their last step keep their
/// moments and buffers as they are) and the CNN in both convolution forms, each client of a
/// cohort as alone.
#[test]
fn more_plans_and_forms_train_each_client_as_alone() {
    agree(&[MLP, "fl.algorithm=\"feddc\""], &[0, 1, 2]);
    let mime = [
        MLP,
        "fl.algorithm=\"mime\"",
        "mime.base=\"sgdm\"",
        "mime.lite=false",
    ];
    agree(&mime, &[0, 1, 2]);
    let dir = common::TempDir::new("cohort-device-partition");
    let mut sets = unequal(&dir);
    let momentum = [&sets[..], &["local.momentum=0.9".to_string()]].concat();
    sets.push("fl.algorithm=\"fedlamb\"".into());
    for sets in [sets, momentum] {
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        agree(&sets, &[0, 1, 2, 3]);
    }
    let cnn = "model.kind=\"tiny-cnn\"";
    agree(&[cnn, "fl.algorithm=\"scaffold\""], &[2, 0, 3]);
    agree(&[cnn, "run.kernels=\"burn\""], &[0, 1, 2]);
}

/// A training longer than the steps its chain's tables hold at once rewrites them as it goes:
/// the same bits as holding them all, with a term factor that depends on the step's rate
/// (FedCM's), the rate decaying each epoch and clients that stop at different steps (windows
/// of 3 steps over 14).
#[test]
fn a_training_past_its_window_of_step_tables_gives_the_same_bits() {
    let dir = common::TempDir::new("cohort-window");
    let mut sets = unequal(&dir);
    sets.extend([
        "local.lr_schedule=\"epoch\"".into(),
        "local.lr_decay=0.5".into(),
    ]);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let base = common::synthetic_spec("");
    let n = deltas(&sets, 1, &[0]).0[0].len();
    let v: Vec<f32> = (0..n).map(|i| ((i % 7) as f32 - 3.0) * 1e-3).collect();
    let term = Term::none().shift_by(Coef::PerStepLength(0.5), &v);
    for cohort in [1, 4] {
        let ks = [0, 1, 2, 3];
        let (all, s1) = deltas_window(&base, &sets, cohort, &ks, None, Some(&term));
        let (win, s2) = deltas_window(&base, &sets, cohort, &ks, Some(3), Some(&term));
        for k in 0..4 {
            assert_eq!(bits(&all[k]), bits(&win[k]), "cohort {cohort}, client {k}");
            assert_eq!(s1[k].loss_sum.to_bits(), s2[k].loss_sum.to_bits());
            assert_eq!(s1[k].steps, s2[k].steps);
        }
    }
}

#[test]
fn a_cohort_gives_the_same_bits_run_to_run() {
    let (a, _) = deltas(&[MLP, "fl.algorithm=\"fedprox\""], 3, &[0, 1, 2]);
    let (b, _) = deltas(&[MLP, "fl.algorithm=\"fedprox\""], 3, &[0, 1, 2]);
    assert_eq!(a, b);
}

/// The global model after `rounds` rounds of the synthetic spec with `sets` at `run.cohort`
/// = `cohort`, and each round's `train_loss`.
fn rounds(sets: &[&str], cohort: usize, rounds: usize) -> (Vec<f32>, Vec<f64>) {
    let mut set: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    set.push(format!("run.cohort={cohort}"));
    set.push("run.client_workers=1".into());
    let s = fedrun::schema::parse(&common::synthetic_spec(""), "cohort", &set).unwrap();
    let mut ex = Experiment::new(&s, data::load(&s, None).unwrap()).unwrap();
    let losses = (0..rounds)
        .map(|t| {
            ex.round(t)
                .unwrap_or_else(|_| panic!("round {t}"))
                .train_loss
        })
        .collect();
    (ex.global.clone(), losses)
}

/// The plans that read more than the logits train in a cohort too, each client as alone over
/// two rounds: Mime's gradient of the starting model (SVRG's correction), MOON's previous local
/// model and projection head.
#[test]
fn mime_and_moon_train_in_a_cohort_as_alone() {
    train_in_a_cohort_as_alone(&[
        &[MLP, "fl.algorithm=\"mime\""],
        &[MLP, "fl.algorithm=\"mimelamb\""],
        &[
            "model.kind=\"tiny-cnn\"",
            "fl.algorithm=\"moon\"",
            "model.projection=8",
        ],
    ]);
}

/// FedMLB's hybrid branches through the global model's stages in a cohort: each client as
/// alone over two rounds. (A test of its own, which the baseline's rerun leaves out.)
#[test]
fn fedmlb_trains_in_a_cohort_as_alone() {
    train_in_a_cohort_as_alone(&[&[
        "model.kind=\"resnet18\"",
        "fl.algorithm=\"fedmlb\"",
        "local.steps=2",
    ]]);
}

/// Each of `cases` trains 4 clients a round in a cohort as one at a time, to the bit.
fn train_in_a_cohort_as_alone(cases: &[&[&str]]) {
    for &sets in cases {
        let (alone, la) = rounds(sets, 1, 2);
        let (together, lk) = rounds(sets, 4, 2);
        let d = rel_diff(&together, &alone);
        assert!(
            bits(&together) == bits(&alone),
            "{sets:?}: the global models differ by {d:e}"
        );
        let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits64(&la), bits64(&lk), "{sets:?}: train_loss");
    }
}

/// A cohort's `train_loss` column is one at a time's to the bit on flex: each client's losses
/// are computed and summed as alone (the CIFAR CNN's shape, five clients, three rounds).
#[test]
fn a_cohorts_train_loss_is_one_at_a_times_to_the_bit() {
    for alg in ["fedacg", "feddyn", "fedlamb", "scaffold"] {
        let a = format!("fl.algorithm=\"{alg}\"");
        let sets = ["model.kind=\"tiny-cnn\"", &a, "fl.clients_per_round=4"];
        let (_, one) = rounds(&sets, 1, 3);
        let (_, five) = rounds(&sets, 4, 3);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one), bits(&five), "{alg}: {one:?} against {five:?}");
    }
}

#[test]
fn a_cohort_of_cnns_trains_each_client_as_alone() {
    // the FedExP CNN's shape in small (grouped convolutions, pooling, three linear layers)
    agree(&["model.kind=\"tiny-cnn\""], &[0, 1, 2, 3]);
    agree(
        &[
            "model.kind=\"tiny-cnn\"",
            "fl.algorithm=\"scaffold\"",
            "local.nar=true",
        ],
        &[2, 0, 3],
    );
    // burn's ops: the copies' convolutions as one grouped convolution (the GPU backends' form)
    agree(
        &["model.kind=\"tiny-cnn\"", "run.kernels=\"burn\""],
        &[0, 1, 2],
    );
}

/// ResNet-18 (GroupNorm(2), both heads) as one computation: the copies' maps side by side in
/// the channels, grouped convolutions and GroupNorm(2K).
#[test]
fn a_cohort_of_resnets_trains_each_client_as_alone() {
    let r = "model.kind=\"resnet18\"";
    agree(&[r, "local.steps=2", "run.kernels=\"burn\""], &[0, 1]);
    agree(&[r, "local.steps=2"], &[0, 1]);
    agree(
        &[
            r,
            "local.steps=2",
            "model.head=\"global\"",
            "fl.algorithm=\"fedacg\"",
        ],
        &[2, 1],
    );
}

#[test]
fn every_model_trains_in_a_cohort_the_projection_head_included() {
    let s = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "cohort",
        &[
            "run.cohort=4".into(),
            "model.kind=\"tiny-cnn\"".into(),
            "model.projection=8".into(),
        ],
    )
    .unwrap();
    let d = data::load(&s, None).unwrap();
    let ex = Experiment::new(&s, d).unwrap();
    assert_eq!(ex.cohort, 4, "MOON's projection head stacks");
    // with the head, a cohort's clients train as each alone
    agree(
        &[
            "model.kind=\"tiny-cnn\"",
            "model.projection=8",
            "local.steps=2",
        ],
        &[0, 2, 1],
    );
}

#[test]
fn cohort_keys_are_checked() {
    let parse = |sets: &[&str]| {
        let set: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        fedrun::schema::parse(&common::synthetic_spec(""), "cohort", &set)
    };
    let e = parse(&["run.cohort=0"]).unwrap_err().to_string();
    assert!(e.contains("run.cohort"), "{e}");
    let e = parse(&["run.cohort=4", "run.client_workers=2"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run.cohort") && e.contains("run.client_workers"),
        "{e}"
    );
    assert!(parse(&["run.cohort=4", "run.client_workers=1"]).is_ok());
}

/// The local losses that read the logits, the features and the starting model's outputs
/// (FedLC's calibrated cross-entropy, FedNTD's not-true distillation, FedDecorr's
/// decorrelation) computed on each client's slice of the stacked outputs: each client as alone,
/// the MLP and the CNN. The frozen models a loss reads (FedNTD's and
/// MOON's starting model, MOON's previous one) run stacked for a group's clients, gathered when
/// a group is some of them (unequal data: short last batches).
#[test]
fn the_local_losses_that_stack_train_each_client_as_alone() {
    for alg in ["fedlc", "fedntd", "feddecorr"] {
        let a = format!("fl.algorithm=\"{alg}\"");
        agree(&[MLP, &a], &[0, 1, 2]);
        agree(&["model.kind=\"tiny-cnn\"", &a], &[2, 0]);
    }
    let dir = common::TempDir::new("cohort-frozen-partition");
    let sets = unequal(&dir);
    for alg in ["fedntd", "moon"] {
        let mut s: Vec<String> = sets.clone();
        s.push(format!("fl.algorithm=\"{alg}\""));
        let s: Vec<&str> = s.iter().map(String::as_str).collect();
        agree(&s, &[0, 1, 2, 3]);
    }
}

/// The quickstart's transformer (with and without dropout) and the LSTM as one computation on
/// the quickstart's Shakespeare clients (sequences of 80 characters), with fedrun's kernels and
/// burn's ops (the LSTM's two stacked forms).
#[test]
fn cohorts_of_character_models_train_each_client_as_alone() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/quickstart.toml"),
    )
    .unwrap();
    // fedrun's kernels: each copy on the fused LSTM kernel; burn's: the GPU backends' form,
    // every step's gates as batched products
    for kernels in ["fedrun", "burn"] {
        for dropout in ["model.dropout=0", "model.dropout=0.1"] {
            let sets = [
                "model.kind=\"transformer\"",
                dropout,
                "local.steps=2",
                "local.batch_size=4",
                &format!("run.kernels=\"{kernels}\""),
            ];
            agree_on(&base, &sets, &[0, 3, 1]);
        }
        let sets = [
            "model.kind=\"lstm-small\"",
            "local.steps=2",
            "local.batch_size=4",
            &format!("run.kernels=\"{kernels}\""),
        ];
        agree_on(&base, &sets, &[0, 3, 1]);
    }
}

/// Every model computes each of its copies' logits and gradient as one copy alone: bit for
/// bit with fedrun's kernels, to 1e-5 with burn's ops (the GPU backends' grouped form), the
/// dropout models with each copy's masks its own stream's, the same alone and beside the others.
#[test]
fn every_stacked_form_computes_each_copy_as_the_model() {
    let dev = burn::tensor::Device::flex().autodiff();
    common::stacked::every_model(&dev, Kernels::Fedrun, 0.0);
    common::stacked::every_model(&dev, Kernels::Burn, 1e-5);
}

/// On flex a cohort's per-client losses are one at a time's to the bit, so the CSV's
/// `train_loss` is too (each client's batch loss computed as alone, summed in step order): the
/// MLP and the small CNN, with FedNAR's clip.
#[test]
fn a_cohorts_losses_are_one_at_a_times_to_the_bit_on_flex() {
    for model in [MLP, "model.kind=\"tiny-cnn\""] {
        // batches of 50: flex sums 50 values in SIMD lanes for `mean`, in a row for `mean_dim`
        let sets = [
            model,
            "local.nar=true",
            "local.max_norm=0.5",
            "data.synthetic_train=800",
            "local.batch_size=50",
        ];
        let clients = [0, 1, 2, 3];
        let (a, s1) = deltas(&sets, 1, &clients);
        let (b, sk) = deltas(&sets, clients.len(), &clients);
        assert_eq!(a, b, "{model}: the updates, bit for bit");
        for (k, (x, y)) in s1.iter().zip(&sk).enumerate() {
            assert_eq!(
                x.loss_sum.to_bits(),
                y.loss_sum.to_bits(),
                "{model}: client {k}'s loss sum {} alone, {} in the cohort",
                x.loss_sum,
                y.loss_sum
            );
        }
    }
}

/// On flex an LSTM batch past the fused layer's largest (an evaluation's) runs gate by gate:
/// its logits are those of the same sequences in batches the fused layer takes.
#[test]
fn an_lstm_batch_past_the_fused_layer_gives_the_fused_layers_logits() {
    use burn::tensor::{Int, Tensor, TensorData};
    use fedrun::data::Input;
    use fedrun::model::copies::Stacked;
    use fedrun::model::lstm::FUSED_MAX_BATCH;
    use fedrun::model::{Model, Shape};
    let spec = fedrun::config::ModelSpec {
        kind: fedrun::config::ModelKind::LstmSmall,
        ..Default::default()
    };
    let shape = Shape {
        channels: 0,
        side: 0,
        classes: 80,
    };
    let model = Model::build(&spec, shape, Kernels::Fedrun).unwrap();
    let x0 = fedrun::model::init::init_flat(
        model.layout(),
        &mut fedrun::rng::Rng::from_seed(3),
        false,
        fedrun::config::Init::Pytorch,
    );
    let dev = burn::tensor::Device::flex();
    let m = Stacked::frozen(&model, &[&x0], &dev);
    let (n, len) = (FUSED_MAX_BATCH + 2, 9);
    let chars: Vec<i64> = (0..n * len).map(|i| (i * 37 % 80) as i64).collect();
    let x = Tensor::<2, Int>::from_data(TensorData::new(chars, [n, len]), &dev);
    let flat = |t: Tensor<3>| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
    let all = flat(m.logits(Input::Tokens(x.clone())));
    let half = n / 2;
    assert!(half <= FUSED_MAX_BATCH && n > FUSED_MAX_BATCH);
    let mut parts = flat(m.logits(Input::Tokens(x.clone().narrow(0, 0, half))));
    parts.extend(flat(m.logits(Input::Tokens(x.narrow(0, half, half)))));
    let d = rel_diff(&all, &parts);
    assert!(d < 1e-5, "gate by gate against fused: {d:e}");
}

/// Every test above again at the SIMD level below the one in use (AVX2 on an AVX-512 machine,
/// the baseline on an AVX2 one): the cohort is each client alone to the bit at both. At the
/// baseline, ResNet-18's tests (FedMLB's and the ResNet cohorts) are left out (`common::simd`).
#[test]
fn the_cohort_tests_pass_at_the_simd_level_below() {
    common::simd::rerun_below(
        "the_cohort_tests_pass_at_the_simd_level_below",
        &["fedmlb", "resnets"],
    );
}

/// The op behind FedMLB's cohort difference, isolated: ResNet-18's hybrid branches (each
/// copy's activation after the stem and each stage, run through a frozen model's remaining
/// stages) give each of K copies the gradient it gets alone, to the bit. A level read by two
/// ops (the next block's convolution and shortcut) and by the branch sums their gradients in
/// one grouping only if the copy alone reads its level through a narrow too.
#[test]
fn fedmlbs_branches_give_each_copy_its_gradient_alone() {
    use burn::tensor::{Device, Int, Tensor, TensorData};
    use fedrun::config::{Init, ModelKind, ModelSpec};
    use fedrun::data::Input;
    use fedrun::fl::losses::cross_entropy;
    use fedrun::model::copies::Stacked;
    use fedrun::model::{Model, Outputs, Shape};
    let dev = Device::flex().autodiff();
    let spec = ModelSpec {
        kind: ModelKind::Resnet18,
        ..ModelSpec::default()
    };
    let shape = Shape {
        channels: 3,
        side: 32,
        classes: 10,
    };
    let model = Model::build(&spec, shape, Kernels::Fedrun).unwrap();
    let mut rng = fedrun::rng::Rng::from_seed(5);
    let x0 = fedrun::model::init::init_flat(model.layout(), &mut rng, false, Init::Pytorch);
    let xs: Vec<Vec<f32>> = (0..2)
        .map(|i| x0.iter().map(|v| v * (1.0 + 0.2 * i as f32)).collect())
        .collect();
    let (k, b) = (2, 2);
    let pixels: Vec<f32> = (0..k * b * 3 * 32 * 32)
        .map(|i| ((i * 31 % 97) as f32 - 48.0) / 48.0)
        .collect();
    let x = Tensor::<4>::from_data(TensorData::new(pixels, [k * b, 3, 32, 32]), &dev);
    let y = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64, 7, 3, 5], [k * b]), &dev);
    let global = Stacked::frozen(&model, &[&x0], &dev);
    let loss = |o: &Outputs, y: Tensor<1, Int>| {
        let mut l = cross_entropy(o.logits.clone(), y.clone(), None);
        for (level, a) in o.levels.iter().enumerate() {
            let branch = global.forward_from(level, a.clone()).expect("ResNet-18");
            l = l + cross_entropy(branch, y.clone(), None);
        }
        l
    };
    let total = model.layout().total;
    let refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
    let stacked = Stacked::new(&model, &refs, &dev);
    let out = stacked.outputs(Input::Images(x.clone()), None);
    let per: Vec<Tensor<1>> = (0..k)
        .map(|i| loss(&out.copy(i), y.clone().narrow(0, i * b, b)))
        .collect();
    let mut g = Tensor::cat(per, 0).sum().backward();
    let mut gs = vec![vec![0f32; total]; k];
    let mut outs: Vec<&mut [f32]> = gs.iter_mut().map(Vec::as_mut_slice).collect();
    stacked.read_grads(&mut g, &mut outs);
    for (i, gi) in gs.iter().enumerate() {
        let alone = Stacked::new(&model, &[&xs[i]], &dev);
        let own = alone.outputs(Input::Images(x.clone().narrow(0, i * b, b)), None);
        let mut g1 = loss(&own.copy(0), y.clone().narrow(0, i * b, b))
            .sum()
            .backward();
        let mut a = vec![0f32; total];
        alone.read_grads(&mut g1, &mut [a.as_mut_slice()]);
        let d = rel_diff(gi, &a);
        assert!(bits(gi) == bits(&a), "copy {i}: gradient differs by {d:e}");
    }
}
