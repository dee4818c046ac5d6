//! The Fed-LAMB family: the layer-wise step, the moments kept per client, the shared v̂, skip-sync,
//! the reduction to SGD, and Mime's full-data gradient.

mod common;

use common::row_chain::{RowChain, one_tensor};
use fedrun::config::Spec;
use fedrun::data;
use fedrun::fl::algorithms;
use fedrun::fl::algorithms::fedlamb::{self, Step};
use fedrun::fl::client::ClipDecay;
use fedrun::fl::engine::Experiment;
use fedrun::fl::plan::{ClientInfo, Report, Rule, Uplink};
use fedrun::fl::strategy::{Aggregate, RoundInfo, ServerStep, Setup, Strategy};
use fedrun::fl::term::Term;
use fedrun::optim::{Ctx, Moments, global_norm};
use fedrun::rng::Rng;

fn spec(sets: &[&str]) -> Spec {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    fedrun::schema::parse(&common::synthetic_spec(""), "test", &sets).unwrap()
}

fn random(rng: &mut Rng, n: usize, scale: f64) -> Vec<f32> {
    (0..n).map(|_| (rng.normal() * scale) as f32).collect()
}

#[test]
fn each_tensor_moves_by_lr_times_its_norm() {
    let mut rng = Rng::from_seed(1);
    let tensors = vec![0..3, 3..8, 8..9];
    for lambda in [0.0, 0.3] {
        let mut keys: fedlamb::Keys = spec(&[]).keys().unwrap();
        keys.lambda = lambda;
        let vhat: Vec<f32> = (0..9).map(|_| (rng.uniform() + 0.1) as f32).collect();
        let rule = fedlamb::rule(Step::Lamb, &keys, &tensors, vec![0.0; 9], &vhat);
        let ctx = Ctx {
            lr: 0.05,
            ..Ctx::default()
        };
        let base = ClipDecay::new(0.0, 0.0, false);
        let mut chain = RowChain::new(&Term::none(), &[], base, &rule, &tensors, ctx, 3);
        let mut x = random(&mut rng, 9, 1.0);
        for _ in 0..3 {
            let x0 = x.clone();
            let g = random(&mut rng, 9, 5.0);
            chain.step(&mut x, &g);
            for r in &tensors {
                let d: Vec<f32> = x[r.clone()]
                    .iter()
                    .zip(&x0[r.clone()])
                    .map(|(a, b)| a - b)
                    .collect();
                let want = 0.05 * global_norm(&x0[r.clone()]);
                assert!(
                    (global_norm(&d) - want).abs() < 1e-5 * want.max(1e-3),
                    "λ {lambda}, tensor {r:?}: moved {} vs α‖θ‖ = {want}",
                    global_norm(&d)
                );
            }
        }
    }
}

fn build(s: &Spec, dim: usize, tensors: &[std::ops::Range<usize>]) -> Box<dyn Strategy> {
    let counts = vec![vec![0usize; 10]; 2];
    algorithms::build(&Setup {
        spec: s,
        dim,
        tensors,
        client_sizes: &[1, 1],
        federation: 2,
        class_counts: &counts,
        initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
    })
    .unwrap()
}

fn info(round: usize) -> RoundInfo {
    RoundInfo {
        round,
        lr: 0.1,
        server_lr: 1.0,
        sampled: vec![0, 1],
    }
}

/// One client's local training from its plan's rule over the parameter tensors `tensors`:
/// `steps` steps with fixed gradients; returns the moments it sends up.
fn local(
    alg: &dyn Strategy,
    tensors: &[std::ops::Range<usize>],
    c: usize,
    g: &[f32],
    steps: usize,
) -> (Vec<f32>, Vec<f32>) {
    let ctx = Ctx {
        lr: 0.01,
        ..Ctx::default()
    };
    let base = ClipDecay::new(0.0, 0.0, false);
    let rule = alg.plan(c).rule;
    let mut chain = RowChain::new(&Term::none(), &[], base, &rule, tensors, ctx, steps);
    let mut x = vec![1.0f32; g.len()];
    for _ in 0..steps {
        chain.step(&mut x, g);
    }
    let Moments { m, v } = chain.moments().expect("a rule that keeps moments");
    (m, v)
}

/// Client `c` sends up its moments (with a zero update).
fn send(alg: &mut dyn Strategy, c: usize, m: Vec<f32>, v: Vec<f32>) {
    let delta = vec![0.0; m.len()];
    let info = ClientInfo {
        steps: 1,
        lr: 0.1,
        samples: 1,
    };
    let uplink = Uplink {
        moments: Some(Moments { m, v }),
        full_gradient: None,
    };
    let report = Report {
        delta: &delta,
        info,
        uplink,
    };
    alg.receive(c, report).unwrap();
}

#[test]
#[allow(clippy::needless_range_loop)]
fn moments_persist_per_client_and_vhat_is_the_running_max_of_the_mean() {
    let s = spec(&["fl.algorithm=\"fedlamb\"", "fedlamb.eps=0.001"]);
    let tensors = vec![0..2, 2..4];
    let mut alg = build(&s, 4, &tensors);
    let mut agg = Aggregate {
        mean_delta: vec![0.0; 4],
        mean_sq_norm: 0.0,
        clients: 2,
    };
    let mut global = vec![0f32; 4];
    let mut vhat = vec![0.001f32; 4];
    let mut stored: Vec<Vec<f32>> = vec![vec![0.0; 4]; 2];
    let mut floors = Vec::new();
    for round in 0..4 {
        let mut sum = vec![0f64; 4];
        for c in 0..2 {
            // the rule starts from the client's stored m and the broadcast v̂
            let (m0, v0) = local(alg.as_ref(), &tensors, c, &[0.0; 4], 0);
            assert_eq!(m0, stored[c], "round {round}, client {c}: m_i carried over");
            assert_eq!(v0, vhat, "round {round}: local v starts from v̂");
            // gradients that shrink, so that mean v_i falls below v̂ in later rounds
            let g: Vec<f32> = (0..4)
                .map(|j| (c + j + 1) as f32 / (1 + round * round) as f32)
                .collect();
            let (m, v) = local(alg.as_ref(), &tensors, c, &g, 3);
            v.iter().zip(&mut sum).for_each(|(v, s)| *s += *v as f64);
            stored[c] = m.clone();
            send(alg.as_mut(), c, m, v);
        }
        let log = alg.server_update(ServerStep {
            info: &info(round),
            global: &mut global,
            agg: &mut agg,
        });
        let now: Vec<f32> = alg
            .state()
            .checkpoint()
            .into_iter()
            .find(|(n, _)| n == "vhat")
            .unwrap()
            .1
            .to_vec();
        for j in 0..4 {
            let want = vhat[j].max((sum[j] / 2.0) as f32);
            assert_eq!(now[j], want, "round {round}: v̂ = max(v̂, mean v_i)");
            assert!(now[j] >= vhat[j], "v̂ never decreases");
        }
        // the CSV's vhat_at_floor: the share of v̂ still at ε = 1e-3
        let floor = now.iter().filter(|&&v| v <= 0.001).count() as f64 / 4.0;
        assert_eq!(log.at_floor, Some(floor), "round {round}");
        floors.push(floor);
        vhat = now;
    }
    // large early gradients lift v̂ off the floor; the count is not stuck at one value
    assert!(floors.iter().any(|&f| f < 1.0), "{floors:?}");
}

/// The server's step at the end of round `round` (a zero update); v̂ after it.
fn end_round(alg: &mut dyn Strategy, round: usize, global: &mut [f32]) -> Vec<f32> {
    let mut agg = Aggregate {
        mean_delta: vec![0.0; global.len()],
        mean_sq_norm: 0.0,
        clients: 1,
    };
    alg.server_update(ServerStep {
        info: &info(round),
        global,
        agg: &mut agg,
    });
    alg.state().checkpoint()[0].1.to_vec()
}

#[test]
fn skip_sync_holds_vhat_between_syncs() {
    let s = spec(&["fl.algorithm=\"fedams\"", "fedlamb.sync_every=3"]);
    let mut alg = build(&s, 2, &[0..1, 1..2]);
    let mut global = vec![0f32; 2];
    let eps = vec![1e-8f32; 2];
    for round in 0..6 {
        alg.begin_round(&info(round), &global).unwrap();
        let (m, v) = local(alg.as_ref(), &[0..1, 1..2], 0, &[3.0, -4.0], 2);
        send(alg.as_mut(), 0, m, v);
        let h = end_round(alg.as_mut(), round, &mut global);
        if round < 2 {
            assert_eq!(h, eps, "round {round}: no sync yet");
        } else {
            assert!(h[0] > 1e-3, "round {round}: synced at round 2");
        }
    }
}

/// Client 0 sends its first moment `m` (v zero) and, where given, its full-data gradient.
fn send_full(
    alg: &mut dyn Strategy,
    m: &[f32],
    full: Option<Vec<f32>>,
) -> fedrun::error::Result<()> {
    let delta = vec![0f32; m.len()];
    let uplink = Uplink {
        moments: Some(Moments {
            m: m.to_vec(),
            v: vec![0.0; m.len()],
        }),
        full_gradient: full,
    };
    let info = ClientInfo {
        steps: 1,
        lr: 0.1,
        samples: 1,
    };
    alg.receive(
        0,
        Report {
            delta: &delta,
            info,
            uplink,
        },
    )
}

/// Mime-LAMB with skip-sync: its clients compute and send the full-data gradient at a sync round
/// alone (the rounds between would throw it away), and v̂ takes the server's v of it there.
#[test]
fn mime_skip_sync_takes_the_full_gradient_at_sync_rounds_alone() {
    let s = spec(&["fl.algorithm=\"mimelamb\"", "fedlamb.sync_every=3"]);
    let mut alg = build(&s, 2, &[0..1, 1..2]);
    let mut global = vec![0f32; 2];
    let (m, _) = local(alg.as_ref(), &[0..1, 1..2], 0, &[3.0, -4.0], 1);
    let mut before = vec![1e-8f32; 2];
    for round in 0..6 {
        let sync = round % 3 == 2;
        alg.begin_round(&info(round), &global).unwrap();
        assert_eq!(alg.plan(0).full_gradient, sync, "round {round}");
        assert_eq!(
            alg.traffic(&info(round)).up,
            usize::from(sync),
            "round {round}"
        );
        if sync {
            let e = send_full(alg.as_mut(), &m, None).unwrap_err();
            assert!(e.to_string().contains("full-data gradient"), "{e}");
        }
        send_full(alg.as_mut(), &m, sync.then(|| vec![3.0, -4.0])).unwrap();
        let now = end_round(alg.as_mut(), round, &mut global);
        match round {
            // the first sync: the server's v from 0 is (1 − β2)·g² = 0.001·(9, 16)
            2 => assert!(
                (now[0] - 0.009).abs() < 1e-6 && (now[1] - 0.016).abs() < 1e-6,
                "{now:?}"
            ),
            // the second: β2·v + (1 − β2)·g², above the first
            5 => assert!(now[0] > before[0] && now[1] > before[1], "{now:?}"),
            _ => assert_eq!(now, before, "round {round}: v̂ held between syncs"),
        }
        before = now;
    }
}

fn globals(sets: &[&str]) -> Vec<f32> {
    let mut all = vec!["data.augmentation=\"none\""];
    all.extend_from_slice(sets);
    let s = spec(&all);
    let d = data::load(&s, None).unwrap();
    let mut ex = Experiment::new(&s, d).unwrap();
    for t in 0..2 {
        ex.round(t).unwrap();
    }
    ex.global.clone()
}

#[test]
fn fedlamb_with_trust_off_beta1_zero_and_unit_vhat_is_sgd() {
    let sgd = globals(&["fl.algorithm=\"fedavg\""]);
    let reduced = [
        "fl.algorithm=\"fedlamb\"",
        "fedlamb.trust=false",
        "fedlamb.beta1=0",
        "fedlamb.eps=1",
        "fedlamb.sync_every=1000",
    ];
    assert_eq!(sgd, globals(&reduced));
    for nar in ["local.nar=false", "local.nar=true"] {
        let mut with = reduced.to_vec();
        with.push(nar);
        let mut avg = vec!["fl.algorithm=\"fedavg\""];
        avg.push(nar);
        assert_eq!(globals(&avg), globals(&with), "{nar}");
    }
    assert_ne!(sgd, globals(&["fl.algorithm=\"fedlamb\""]));
    // skip-sync with Z = 1 is Fed-LAMB's default (one code path, nothing to compare), and a
    // longer period changes the run: round 0's v̂ is held into round 1
    assert_ne!(
        globals(&["fl.algorithm=\"fedlamb\""]),
        globals(&["fl.algorithm=\"fedlamb\"", "fedlamb.sync_every=2"])
    );
}

#[test]
fn full_data_gradient_is_the_one_batch_gradient() {
    let s = spec(&["data.augmentation=\"none\"", "model.kind=\"linear\""]);
    let d = data::load(&s, None).unwrap();
    let ex = Experiment::new(&s, d).unwrap();
    let idx = ex.data.clients[0].clone();
    assert_eq!(idx.len() % 7, 3, "a short last batch");
    let global = ex.global.clone();
    let batched = ex.trainers[0].full_gradient(&ex.data, &idx, &global, 7);
    let whole = ex.trainers[0].full_gradient(&ex.data, &idx, &global, idx.len());
    let err = batched
        .iter()
        .zip(&whole)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(err < 1e-6, "max difference {err}");
    assert!(global_norm(&whole) > 0.0);
}

#[test]
fn full_data_gradient_is_taken_in_evaluation_mode() {
    // the quickstart's transformer with dropout 0.5: its full gradient draws no masks (the same
    // twice) and equals the gradient of the same weights without dropout
    let quickstart = |dropout: &str| {
        fedrun::schema::parse(fedrun::config::QUICKSTART, "q", &[dropout.to_string()]).unwrap()
    };
    let s = quickstart("model.dropout=0.5");
    let ex = Experiment::new(&s, data::load(&s, None).unwrap()).unwrap();
    let idx: Vec<usize> = ex.data.clients[0][..40].to_vec();
    let at = ex.global.clone();
    let a = ex.trainers[0].full_gradient(&ex.data, &idx, &at, 16);
    let b = ex.trainers[0].full_gradient(&ex.data, &idx, &at, 16);
    assert!(a == b, "no dropout masks drawn");
    let s0 = quickstart("model.dropout=0");
    let ex0 = Experiment::new(&s0, data::load(&s0, None).unwrap()).unwrap();
    let c = ex0.trainers[0].full_gradient(&ex0.data, &idx, &at, 16);
    assert!(a == c, "the gradient of the weights without dropout");
    assert!(global_norm(&a) > 0.0);
}

/// The strategy of `sets` on a model of two parameters in one tensor, a step context of lr 0.1,
/// and the global model at 0.
fn two_parameters(sets: &[&str]) -> (Box<dyn Strategy>, Ctx, Vec<f32>) {
    let alg = build(&spec(sets), 2, std::slice::from_ref(&(0..2)));
    let ctx = Ctx {
        steps: 1,
        lr: 0.1,
        ..Ctx::default()
    };
    (alg, ctx, vec![0.0f32; 2])
}

/// The term of `alg`'s plan for client 0 applied to `g` at x = anchor = 0, with the starting
/// model's gradient `ga` (the step's update at l = 1 under no clip, no decay and no rule).
fn term_of(alg: &dyn Strategy, g: &[f32], ga: &[f32], ctx: Ctx) -> Vec<f32> {
    let (base, rule) = (ClipDecay::new(0.0, 0.0, false), Rule::default());
    let ctx = Ctx { lr: 1.0, ..ctx };
    let (plan, one) = (alg.plan(0), one_tensor(2));
    let mut chain = RowChain::new(&plan.term, &[0.0; 2], base, &rule, &one, ctx, 1);
    chain.step_aux(&mut [0.0; 2], g, ga).0
}

/// Mime and MimeLite with SGD and server momentum (`mime.base = "sgdm"`): β = 0 MimeLite is
/// FedAvg; the server momentum is the EMA of the rounds' mean full-data gradients, and the local
/// term mixes it in (MimeLite) or corrects the gradient by the anchor's (Mime).
#[test]
fn mime_sgdm_momentum_and_local_terms_by_hand() {
    let lite = ["fl.algorithm=\"mime\"", "mime.base=\"sgdm\""];
    let mut zero = lite.to_vec();
    zero.push("mime.momentum=0");
    assert_eq!(globals(&["fl.algorithm=\"fedavg\""]), globals(&zero));
    assert_ne!(globals(&["fl.algorithm=\"fedavg\""]), globals(&lite));
    let mut full = lite.to_vec();
    full.push("mime.lite=false");
    assert_ne!(globals(&lite), globals(&full));

    for is_lite in [true, false] {
        let mut with = lite.to_vec();
        with.push("mime.momentum=0.75");
        if !is_lite {
            with.push("mime.lite=false");
        }
        let (mut alg, ctx, mut global) = two_parameters(&with);
        assert!(
            alg.begin_round(&info(0), &global)
                .unwrap()
                .mean_full_gradient
        );
        let mut agg = Aggregate {
            mean_delta: vec![0.0; 2],
            mean_sq_norm: 0.0,
            clients: 2,
        };
        alg.round_gradient(&[2.0, 2.0]);
        alg.server_update(ServerStep {
            info: &info(0),
            global: &mut global,
            agg: &mut agg,
        });
        // m = (1 − β)·c = 0.25·(2, 2) = (0.5, 0.5)
        let c = [0.0f32, 4.0];
        alg.round_gradient(&c);
        // the local term of round 1 sees round 1's c and the m of round 0
        let (g, ga) = ([2.0f32, 2.0], [1.0f32, -1.0]);
        let u = term_of(alg.as_ref(), &g, &ga, ctx);
        for j in 0..2 {
            let want = if is_lite {
                0.25 * g[j] + 0.75 * 0.5
            } else {
                0.25 * (g[j] - ga[j] + c[j]) + 0.75 * 0.5
            };
            assert!(
                (u[j] - want).abs() < 1e-6,
                "lite {is_lite}, {j}: {} vs {want}",
                u[j]
            );
        }
        alg.server_update(ServerStep {
            info: &info(1),
            global: &mut global,
            agg: &mut agg,
        });
        // m = 0.25·(0, 4) + 0.75·(0.5, 0.5) = (0.375, 1.375)
        let u = term_of(alg.as_ref(), &[0.0; 2], &[0.0; 2], ctx);
        let m2 = [0.375f32, 1.375];
        for j in 0..2 {
            let want = 0.75 * m2[j] + if is_lite { 0.0 } else { 0.25 * c[j] };
            assert!(
                (u[j] - want).abs() < 1e-6,
                "lite {is_lite}, {j}: {} vs {want}",
                u[j]
            );
        }
    }
}

/// The original Mime with AMSGrad (`mime.base = "frozen-amsgrad"`): the server's m and v̂ are
/// frozen in local steps, the direction is `((1−β1)·g + β1·m)/√v̂`, and the server's state takes
/// one AMSGrad step with the round's c; checked by hand over two rounds, and through a checkpoint.
#[test]
fn original_mime_with_frozen_amsgrad_state_by_hand() {
    let sets = [
        "fl.algorithm=\"mime\"",
        "mime.base=\"frozen-amsgrad\"",
        "fedlamb.beta1=0.75",
        "fedlamb.beta2=0.5",
        "fedlamb.eps=0.01",
    ];
    let (mut alg, ctx, mut global) = two_parameters(&sets);
    let mut agg = Aggregate {
        mean_delta: vec![0.0; 2],
        mean_sq_norm: 0.0,
        clients: 2,
    };
    let direction = |alg: &dyn Strategy, g: &[f32]| {
        let plan = alg.plan(0);
        // the term, then a bare chain (no clip, no decay) with step 1, moves x by −rule(term(g))
        let (base, lr1) = (ClipDecay::new(0.0, 0.0, false), Ctx { lr: 1.0, ..ctx });
        let one = one_tensor(2);
        let mut chain = RowChain::new(&plan.term, &[0.0; 2], base, &plan.rule, &one, lr1, 1);
        let mut x = vec![0.0f32; 2];
        chain.step(&mut x, g);
        x.iter().map(|v| -v).collect::<Vec<f32>>()
    };
    // round 0: m = 0 and v̂ = ε, so the direction is (1−β1)·g/√ε
    assert!(
        alg.begin_round(&info(0), &global)
            .unwrap()
            .mean_full_gradient
    );
    let g = [2.0f32, -1.0];
    let u = direction(alg.as_ref(), &g);
    for j in 0..2 {
        let want = 0.25 * g[j] / 0.1;
        assert!((u[j] - want).abs() < 1e-5, "{j}: {} vs {want}", u[j]);
    }
    // the server's step with c = (2, 0.1): m = 0.25·c, v = 0.5·c², v̂ = max(ε, v)
    alg.round_gradient(&[2.0, 0.1]);
    alg.server_update(ServerStep {
        info: &info(0),
        global: &mut global,
        agg: &mut agg,
    });
    let (m, vhat) = ([0.5f32, 0.025], [2.0f32, 0.01]);
    let u = direction(alg.as_ref(), &g);
    for j in 0..2 {
        let want = (0.25 * g[j] + 0.75 * m[j]) / vhat[j].sqrt();
        assert!((u[j] - want).abs() < 1e-5, "{j}: {} vs {want}", u[j]);
    }
    // the state goes through a checkpoint
    let saved: Vec<(String, Vec<f32>)> = alg
        .state()
        .checkpoint()
        .into_iter()
        .map(|(n, v)| (n, v.to_vec()))
        .collect();
    assert_eq!(saved.len(), 3, "m, v and v̂");
    let mut back = two_parameters(&sets).0;
    back.state().restore(saved).unwrap();
    assert_eq!(direction(back.as_ref(), &g), u);
}

/// Mime end to end: with one local step on each client's whole data, the anchor's gradient on
/// the batch cancels the client's own, so every client steps along c, the round's mean
/// full-data gradient: with β = 0 that is FedAvg with full-batch steps and uniform weights.
#[test]
fn mime_first_step_follows_the_rounds_mean_full_gradient() {
    let common = [
        "local.steps=1",
        "local.batch_size=64",
        "local.weight_decay=0",
        "local.max_norm=0",
        "fl.aggregation=\"uniform\"",
    ];
    let mut avg = common.to_vec();
    avg.push("fl.algorithm=\"fedavg\"");
    let mut mime = common.to_vec();
    mime.extend([
        "fl.algorithm=\"mime\"",
        "mime.base=\"sgdm\"",
        "mime.lite=false",
        "mime.momentum=0",
    ]);
    let (a, b) = (globals(&avg), globals(&mime));
    let scale = a.iter().map(|v| v.abs()).fold(0f32, f32::max);
    for (j, (u, v)) in a.iter().zip(&b).enumerate() {
        assert!((u - v).abs() <= 1e-5 * scale, "{j}: FedAvg {u} vs Mime {v}");
    }
}
