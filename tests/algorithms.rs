//! Closed-form cases and invariants of the local step and the algorithms.

mod common;

use burn::tensor::{Device, Int, Tensor, TensorData};
use common::row_chain::{RowChain, one_tensor};
use fedrun::config::Spec;
use fedrun::data;
use fedrun::fl::algorithms::fedadam::AdaptiveServer;
use fedrun::fl::algorithms::fedexp::FedExP;
use fedrun::fl::algorithms::scaffold::Scaffold;
use fedrun::fl::algorithms::{self, fedlc};
use fedrun::fl::client::{ClipDecay, LocalStats};
use fedrun::fl::engine::{Experiment, LocalTrainer, RoundConfig, run_round};
use fedrun::fl::losses;
use fedrun::fl::plan::{ClientPlan, Rule};
use fedrun::fl::strategy::{Aggregate, FromSetup, RoundInfo, ServerStep, Setup, Strategy};
use fedrun::fl::term::Term;
use fedrun::optim::{AdaptiveRule, Ctx, global_norm};

// ------------------------------------------------------------- a least-squares oracle

/// Clients with f_i(x) = ½ (x − b_i)ᵀ diag(a_i) (x − b_i), trained with the production
/// local chain from the algorithms' client plans.
struct Quadratic {
    a: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    steps: usize,
    opt: ClipDecay,
    delta: Vec<f32>,
    /// Per client, per step: the loss gradient at the iterate (for Lemma 1).
    grads: Vec<Vec<Vec<f32>>>,
    /// The local learning rate (a real trainer takes it from the spec's schedule).
    lr: f64,
}

impl Quadratic {
    fn new(a: Vec<Vec<f32>>, b: Vec<Vec<f32>>, steps: usize, opt: ClipDecay) -> Self {
        let n = a.len();
        Quadratic {
            a,
            b,
            steps,
            opt,
            delta: Vec::new(),
            grads: vec![Vec::new(); n],
            lr: 0.1,
        }
    }
    /// The minimiser of Σ_i f_i.
    fn optimum(&self) -> Vec<f32> {
        let d = self.a[0].len();
        (0..d)
            .map(|j| {
                let num: f32 = (0..self.a.len()).map(|i| self.a[i][j] * self.b[i][j]).sum();
                let den: f32 = (0..self.a.len()).map(|i| self.a[i][j]).sum();
                num / den
            })
            .collect()
    }
}

impl LocalTrainer for Quadratic {
    fn train_many(
        &mut self,
        round: usize,
        clients: &[usize],
        anchor: &[f32],
        plans: Vec<ClientPlan>,
    ) -> fedrun::error::Result<Vec<LocalStats>> {
        let lr = self.lr;
        Ok(clients
            .iter()
            .zip(plans)
            .map(|(&c, plan)| self.train(round, c, anchor, plan, lr))
            .collect())
    }
    fn delta(&self, _k: usize) -> &[f32] {
        &self.delta
    }
    fn full_gradient(&mut self, c: usize, at: &[f32]) -> Vec<f32> {
        (0..at.len())
            .map(|j| self.a[c][j] * (at[j] - self.b[c][j]))
            .collect()
    }
}

impl Quadratic {
    fn train(
        &mut self,
        round: usize,
        c: usize,
        anchor: &[f32],
        plan: ClientPlan,
        lr: f64,
    ) -> LocalStats {
        let mut x = anchor.to_vec();
        self.grads[c].clear();
        let mut st = LocalStats::default();
        let ctx = Ctx {
            round,
            lr,
            steps: self.steps,
            ..Ctx::default()
        };
        // one parameter tensor a coordinate, as the algorithms' setup has them
        let ranges: Vec<_> = (0..x.len()).map(|j| j..j + 1).collect();
        let (term, rule) = (&plan.term, &plan.rule);
        let mut chain = RowChain::new(term, anchor, self.opt, rule, &ranges, ctx, self.steps);
        for _ in 0..self.steps {
            let g: Vec<f32> = (0..x.len())
                .map(|j| self.a[c][j] * (x[j] - self.b[c][j]))
                .collect();
            self.grads[c].push(g.clone());
            let (_, s) = chain.step(&mut x, &g);
            st.steps += 1;
            st.clipped += usize::from(s.clipped);
        }
        self.delta = x.iter().zip(anchor).map(|(x, a)| x - a).collect();
        st
    }
}

/// A step context for direct calls of a term.
fn ctx0() -> Ctx {
    Ctx {
        steps: 1,
        lr: 0.1,
        ..Ctx::default()
    }
}

/// The local chain without clipping and with weight decay `wd` (baseline or FedNAR order).
fn sgd(wd: f64, max_norm: f64, nar: bool) -> ClipDecay {
    ClipDecay::new(wd, max_norm, nar)
}

/// An algorithm's setup over `dim` parameters (one tensor each) and clients of `sizes`.
fn build(s: &Spec, dim: usize, sizes: &[usize]) -> Box<dyn Strategy> {
    let tensors: Vec<std::ops::Range<usize>> = (0..dim).map(|j| j..j + 1).collect();
    let counts = vec![vec![0usize; 10]; sizes.len()];
    algorithms::build(&Setup {
        spec: s,
        dim,
        tensors: &tensors,
        client_sizes: sizes,
        federation: sizes.len(),
        class_counts: &counts,
        initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
    })
    .unwrap()
}

/// The setup of a server-side test: `dim` parameters, one client.
fn setup(s: &Spec, dim: usize) -> Setup<'_> {
    Setup {
        spec: s,
        dim,
        tensors: &[],
        client_sizes: &[1],
        federation: 1,
        class_counts: &[],
        initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
    }
}

fn two_clients(steps: usize, opt: ClipDecay) -> Quadratic {
    Quadratic::new(
        vec![vec![1.0, 0.1], vec![0.1, 1.0]],
        vec![vec![1.0, 0.0], vec![0.0, 1.0]],
        steps,
        opt,
    )
}

fn spec(algorithm: &str) -> Spec {
    fedrun::schema::parse(
        &common::synthetic_spec(""),
        "test",
        &[format!("fl.algorithm=\"{algorithm}\"")],
    )
    .unwrap()
}

/// Rounds of 2 clients at local rate `lr`, server rate 1, size-weighted, every client a member.
fn two_per_round(lr: f64) -> RoundConfig {
    RoundConfig {
        seed: 0,
        clients_per_round: 2,
        lr,
        server_lr: 1.0,
        uniform: false,
        uplink: None,
        active: None,
    }
}

fn run_quadratic(alg: &mut dyn Strategy, q: &mut Quadratic, rounds: usize, lr: f64) -> Vec<f32> {
    q.lr = lr;
    let mut x = vec![0f32; 2];
    let cfg = two_per_round(lr);
    for t in 0..rounds {
        run_round(t, &cfg, &[1, 1], &mut x, alg, q).unwrap();
    }
    x
}

#[test]
fn scaffold_removes_client_drift_and_fedavg_does_not() {
    let opt = || sgd(0.0, 0.0, false);
    let q0 = two_clients(10, opt());
    let xstar = q0.optimum();
    let mut q = two_clients(10, opt());
    let xa = run_quadratic(
        build(&spec("fedavg"), 2, &[1, 1]).as_mut(),
        &mut q,
        300,
        0.1,
    );
    let mut q = two_clients(10, opt());
    let xs = run_quadratic(
        build(&spec("scaffold"), 2, &[1, 1]).as_mut(),
        &mut q,
        300,
        0.1,
    );
    let err = |x: &[f32]| {
        x.iter()
            .zip(&xstar)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    };
    assert!(
        err(&xs) < 1e-4,
        "SCAFFOLD reaches the optimum {xstar:?}: {xs:?}"
    );
    assert!(
        err(&xa) > 0.02,
        "FedAvg with 10 local steps stays biased: {xa:?} vs {xstar:?}"
    );
}

#[test]
fn scaffold_control_variate_update_matches_the_formula() {
    // full participation, one local step: c_i ← c_i − c − Δ_i/(K·l) with c = 0 in round 0
    let mut q = two_clients(1, sgd(0.0, 0.0, false));
    let sp = spec("scaffold");
    let mut s = Scaffold::from_setup(&Setup {
        spec: &sp,
        dim: 2,
        tensors: &[0..1, 1..2],
        client_sizes: &[1, 1],
        federation: 2,
        class_counts: &[vec![0; 10], vec![0; 10]],
        initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
    })
    .unwrap();
    let mut x = vec![0.5f32, -0.5];
    let x0 = x.clone();
    let lr = 0.1;
    run_round(
        0,
        &RoundConfig {
            seed: 0,
            clients_per_round: 2,
            lr,
            server_lr: 1.0,
            uniform: false,
            uplink: None,
            active: None,
        },
        &[1, 1],
        &mut x,
        &mut s,
        &mut q,
    )
    .unwrap();
    for i in 0..2 {
        // one step from x0 with c = c_i = 0: Δ_i = −l·g_i(x0), so c_i = g_i(x0)
        let g: Vec<f32> = (0..2).map(|j| q.a[i][j] * (x0[j] - q.b[i][j])).collect();
        let ci = s.control_variate(i).unwrap();
        for j in 0..2 {
            assert!(
                (ci[j] - g[j]).abs() < 1e-6,
                "c_{i}[{j}] = {} vs {}",
                ci[j],
                g[j]
            );
        }
    }
    // next round: c = mean c_i, and the local gradient is g + c − c_i
    s.begin_round(
        &RoundInfo {
            round: 1,
            lr,
            server_lr: 1.0,
            sampled: vec![0, 1],
        },
        &x,
    )
    .unwrap();
    let c = s.server_variate().to_vec();
    let mean: Vec<f32> = (0..2)
        .map(|j| 0.5 * (s.control_variate(0).unwrap()[j] + s.control_variate(1).unwrap()[j]))
        .collect();
    assert_eq!(c, mean);
    let (plan, base) = (s.plan(0), sgd(0.0, 0.0, false));
    let one = one_tensor(2);
    let lr1 = Ctx { lr: 1.0, ..ctx0() };
    let mut chain = RowChain::new(&plan.term, &x, base, &plan.rule, &one, lr1, 1);
    let (g, _) = chain.step(&mut x.clone(), &[0.0; 2]);
    let c0 = s.control_variate(0).unwrap();
    assert_eq!(g, vec![c[0] - c0[0], c[1] - c0[1]]);
}

#[test]
fn fednar_lemma1_global_update_identity_on_a_linear_model() {
    // Without clipping, K local steps x ← (1 − l·wd)·x − l·g give
    // x_K − x_0 = ((1 − l·wd)^K − 1)·x_0 − l·Σ_k (1 − l·wd)^(K−1−k)·g_k,
    // so the FedAvg global update is that identity averaged over the clients.
    let (wd, lr, k) = (0.05f32, 0.1f32, 5);
    for nar in [false, true] {
        let mut q = two_clients(k, sgd(wd as f64, 0.0, nar));
        let mut alg = build(&spec("fedavg"), 2, &[1, 1]);
        let mut x = vec![0.3f32, -0.7];
        let x0 = x.clone();
        run_round(
            0,
            &RoundConfig {
                seed: 0,
                clients_per_round: 2,
                lr: lr as f64,
                server_lr: 1.0,
                uniform: false,
                uplink: None,
                active: None,
            },
            &[1, 1],
            &mut x,
            alg.as_mut(),
            &mut q,
        )
        .unwrap();
        let decay = 1.0 - lr * wd;
        for j in 0..2 {
            let mut expect = (decay.powi(k as i32) - 1.0) * x0[j];
            for c in 0..2 {
                for (s, g) in q.grads[c].iter().enumerate() {
                    expect -= 0.5 * lr * decay.powi((k - 1 - s) as i32) * g[j];
                }
            }
            let got = x[j] - x0[j];
            assert!(
                (got - expect).abs() < 1e-6,
                "nar={nar} coordinate {j}: {got} vs {expect}"
            );
        }
    }
}

#[test]
fn fedadam_two_rounds_by_hand() {
    let s = spec("fedadam"); // fedexp form: β1 0.9, β2 0.99, ε 0.01 decaying 0.998²; η 1
    let mut a = AdaptiveServer::new(AdaptiveRule::Adam, &setup(&s, 1)).unwrap();
    let mut x = vec![1.0f32];
    let info = |t| RoundInfo {
        round: t,
        lr: 0.01,
        server_lr: 1.0,
        sampled: vec![0],
    };
    let agg = |d: f32| Aggregate {
        mean_delta: vec![d],
        mean_sq_norm: (d * d) as f64,
        clients: 1,
    };
    a.server_update(ServerStep {
        info: &info(0),
        global: &mut x,
        agg: &mut agg(0.2),
    });
    // m = 0.02, v = 0.01·0.0004 = 4e-6, ε_0 = 0.01·0.998²
    let (m1, v1, e0) = (0.02f64, 4e-6f64, 0.01 * 0.998f64.powi(2));
    let u1 = (m1 / 0.1) / (v1 / 0.01 + e0).sqrt();
    assert!(
        (x[0] as f64 - (1.0 + u1)).abs() < 1e-5,
        "{} vs {}",
        x[0],
        1.0 + u1
    );
    a.server_update(ServerStep {
        info: &info(1),
        global: &mut x,
        agg: &mut agg(-0.1),
    });
    let m2 = 0.9 * m1 + 0.1 * -0.1;
    let v2 = 0.99 * v1 + 0.01 * m2 * m2;
    let e1 = 0.01 * 0.998f64.powi(4);
    let u2 = (m2 / 0.1) / (v2 / 0.01 + e1).sqrt();
    assert!(
        (x[0] as f64 - (1.0 + u1 + u2)).abs() < 1e-5,
        "{} vs {}",
        x[0],
        1.0 + u1 + u2
    );
}

#[test]
fn fedadam_reddi_and_adpfed_forms_by_hand() {
    let info = |t| RoundInfo {
        round: t,
        lr: 0.01,
        server_lr: 1.0,
        sampled: vec![0],
    };
    let agg = |d: f32| Aggregate {
        mean_delta: vec![d],
        mean_sq_norm: (d * d) as f64,
        clients: 1,
    };
    // the Reddi / FedACG form: v of Δ̄², v0 = τ², u = m/(√v + τ)
    let r = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "t",
        &[
            "fedadam.variant=\"reddi\"".into(),
            "fedadam.eps=0.001".into(),
            "fl.global_lr=0.01".into(),
        ],
    )
    .unwrap();
    let mut b = AdaptiveServer::new(AdaptiveRule::Adam, &setup(&r, 1)).unwrap();
    let mut y = vec![0f32];
    b.server_update(ServerStep {
        info: &info(0),
        global: &mut y,
        agg: &mut agg(0.2),
    });
    let m = 0.1 * 0.2f64;
    let v: f64 = 0.99 * 1e-6 + 0.01 * 0.04;
    assert!((y[0] as f64 - 0.01 * m / (v.sqrt() + 0.001)).abs() < 1e-7);
    // Adp-Fed (the Fed-LAMB paper's Algorithm 2): v_0 = ε, v of Δ̄², u = m/√v, no τ
    let p = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "t",
        &[
            "fedadam.variant=\"adpfed\"".into(),
            "fedadam.eps=0.0001".into(),
            "fedadam.beta2=0.999".into(),
            "fl.global_lr=0.01".into(),
        ],
    )
    .unwrap();
    let mut c = AdaptiveServer::new(AdaptiveRule::Adam, &setup(&p, 1)).unwrap();
    let mut z = vec![0f32];
    c.server_update(ServerStep {
        info: &info(0),
        global: &mut z,
        agg: &mut agg(0.2),
    });
    let v: f64 = 0.999 * 1e-4 + 0.001 * 0.04;
    let want = 0.01 * (0.1 * 0.2) / v.sqrt();
    assert!(
        (z[0] as f64 - want).abs() < 1e-7,
        "Adp-Fed {} vs {want}",
        z[0]
    );
}

/// The step size FedExP's server step takes on `agg` in round 0 (its logged η_g).
fn fedexp_eta(e: &mut FedExP, agg: &Aggregate) -> f64 {
    let info = RoundInfo {
        round: 0,
        lr: 0.01,
        server_lr: 1.0,
        sampled: vec![0, 1],
    };
    let mut x = vec![0f32; agg.mean_delta.len()];
    let log = e.server_update(ServerStep {
        info: &info,
        global: &mut x,
        agg: &mut agg.clone(),
    });
    log.server_lr
}

#[test]
fn fedexp_step_size_by_hand_and_never_below_one() {
    let s = spec("fedexp");
    let mut e = FedExP::from_setup(&setup(&s, 2)).unwrap();
    // Δ_1 = (1, 0), Δ_2 = (−1, 0.5): Δ̄ = (0, 0.25), G = (1 + 1.25)/2 = 1.125
    let agg = Aggregate {
        mean_delta: vec![0.0, 0.25],
        mean_sq_norm: 1.125,
        clients: 2,
    };
    let eta = fedexp_eta(&mut e, &agg);
    assert!((eta - 0.5 * 1.125 / 0.0625).abs() < 1e-9, "{eta}");
    // identical updates: ½·G/‖Δ̄‖² = ½ < 1, so η = 1
    let same = Aggregate {
        mean_delta: vec![1.0, 0.0],
        mean_sq_norm: 1.0,
        clients: 2,
    };
    assert_eq!(fedexp_eta(&mut e, &same), 1.0);
    // the code's |S|·ε against the paper's ε
    let with_eps = |form: &str| {
        let s = fedrun::schema::parse(
            &common::synthetic_spec(""),
            "t",
            &[
                "fedexp.eps=0.1".into(),
                format!("fedexp.eps_form=\"{form}\""),
            ],
        )
        .unwrap();
        fedexp_eta(&mut FedExP::from_setup(&setup(&s, 2)).unwrap(), &agg)
    };
    let eps0 = 0.1 * 0.998f64.powi(2);
    assert!((with_eps("code") - (0.5 * 1.125 / (0.0625 + 2.0 * eps0)).max(1.0)).abs() < 1e-9);
    assert!((with_eps("paper") - (0.5 * 1.125 / (0.0625 + eps0)).max(1.0)).abs() < 1e-9);
}

// ------------------------------------------------------------- on real burn models

fn experiment(extra: &[&str]) -> Experiment {
    let mut set: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    set.push("data.augmentation=\"none\"".into());
    let s = fedrun::schema::parse(&common::synthetic_spec(""), "test", &set).unwrap();
    let d = data::load(&s, None).unwrap();
    Experiment::new(&s, d).unwrap()
}

fn globals_after(extra: &[&str], rounds: usize) -> Vec<f32> {
    let mut ex = experiment(extra);
    for t in 0..rounds {
        ex.round(t).unwrap();
    }
    ex.global.clone()
}

#[test]
fn one_client_one_step_is_one_sgd_step_by_hand() {
    let mut ex = experiment(&[
        "model.kind=\"linear\"",
        "data.num_clients=1",
        "fl.clients_per_round=1",
        "local.steps=1",
        "local.batch_size=24",
        "local.max_norm=0",
        "local.weight_decay=0",
        "local.lr_decay=1",
        "local.lr=0.1",
    ]);
    let x0 = ex.global.clone();
    let w = ex
        .layout
        .tensors
        .iter()
        .find(|t| t.name() == "weight")
        .unwrap()
        .clone();
    let b = ex
        .layout
        .tensors
        .iter()
        .find(|t| t.name() == "bias")
        .unwrap()
        .clone();
    let (din, k) = (w.shape[0], w.shape[1]);
    let idx = ex.data.clients[0].clone();
    let data::Features::Images { data: xs, .. } = &ex.data.train.x else {
        panic!()
    };
    // softmax regression gradient over the whole client (one batch of all 24 samples)
    let mut gw = vec![0f64; din * k];
    let mut gb = vec![0f64; k];
    for &i in &idx {
        let xi = &xs[i * din..(i + 1) * din];
        let z: Vec<f64> = (0..k)
            .map(|c| {
                x0[b.offset + c] as f64
                    + (0..din)
                        .map(|j| xi[j] as f64 * x0[w.offset + j * k + c] as f64)
                        .sum::<f64>()
            })
            .collect();
        let mx = z.iter().cloned().fold(f64::MIN, f64::max);
        let den: f64 = z.iter().map(|v| (v - mx).exp()).sum();
        for c in 0..k {
            let r = (z[c] - mx).exp() / den - f64::from(u8::from(ex.data.train.y[i] as usize == c));
            gb[c] += r / idx.len() as f64;
            for j in 0..din {
                gw[j * k + c] += r * xi[j] as f64 / idx.len() as f64;
            }
        }
    }
    ex.round(0).unwrap();
    let mut worst = 0f64;
    for j in 0..din * k {
        worst = worst
            .max((ex.global[w.offset + j] as f64 - (x0[w.offset + j] as f64 - 0.1 * gw[j])).abs());
    }
    for c in 0..k {
        worst = worst
            .max((ex.global[b.offset + c] as f64 - (x0[b.offset + c] as f64 - 0.1 * gb[c])).abs());
    }
    assert!(
        worst < 1e-5,
        "max deviation from the hand-computed SGD step: {worst}"
    );
}

#[test]
fn nar_with_huge_threshold_equals_baseline_and_small_threshold_bounds_the_step() {
    let base = globals_after(&["local.max_norm=1e12"], 2);
    let nar = globals_after(&["local.max_norm=1e12", "local.nar=true"], 2);
    assert_eq!(base, nar);
    let clipped = globals_after(&["local.max_norm=1", "local.nar=true"], 2);
    assert_ne!(base, clipped);
    // one client, one step, A small: ‖x_1 − x_0‖ = l·A
    let mut ex = experiment(&[
        "data.num_clients=1",
        "fl.clients_per_round=1",
        "local.steps=1",
        "local.max_norm=0.001",
        "local.nar=true",
        "local.lr_decay=1",
        "local.lr=0.1",
    ]);
    let row = ex.round(0).unwrap();
    assert!(
        (row.update_norm - 0.1 * 0.001).abs() < 1e-8,
        "step norm {}",
        row.update_norm
    );
    assert_eq!(row.clipped_steps, 1);
}

#[test]
fn fedprox_with_zero_mu_and_fedavgm_with_zero_beta_equal_fedavg() {
    let avg = globals_after(&["fl.algorithm=\"fedavg\""], 2);
    assert_eq!(
        avg,
        globals_after(&["fl.algorithm=\"fedprox\"", "fedprox.mu=0"], 2)
    );
    assert_ne!(
        avg,
        globals_after(&["fl.algorithm=\"fedprox\"", "fedprox.mu=0.5"], 2)
    );
    assert_eq!(
        avg,
        globals_after(&["fl.algorithm=\"fedavgm\"", "fedavgm.momentum=0"], 2)
    );
    assert_ne!(
        avg,
        globals_after(&["fl.algorithm=\"fedavgm\"", "fedavgm.momentum=0.9"], 2)
    );
}

#[test]
fn clip_statistics_count_clipped_steps() {
    let (base, rule) = (sgd(0.0, 1.0, false), Rule::default());
    let ctx = Ctx { lr: 1.0, ..ctx0() };
    let mut chain = RowChain::new(
        &Term::none(),
        &[0.0; 2],
        base,
        &rule,
        &one_tensor(2),
        ctx,
        1,
    );
    let mut x = vec![0f32; 2];
    let (_, s) = chain.step(&mut x, &[3.0, 4.0]);
    assert!(s.clipped && (s.pre_clip_norm - 5.0).abs() < 1e-9);
    assert!((global_norm(&x) - 1.0).abs() < 1e-5);
}

/// `local.momentum`: PyTorch's `SGD(momentum=β, weight_decay=wd)` after the clip, over steps
/// by hand: `d = clip(g) + wd·x`, `b ← β·b + d` (b from 0, so the first step's buffer is d),
/// `x ← x − l·b`, in f32 in that order. A link that dampened, started b at d twice, put the
/// decay after the buffer or the clip after it fails the bits.
#[test]
fn local_momentum_is_torch_sgd_momentum_after_clip_and_decay_by_hand() {
    let (beta, wd, lr, a) = (0.9f32, 0.01f32, 0.1f32, 2.0f32);
    let base = sgd(f64::from(wd), f64::from(a), false).with_momentum(f64::from(beta));
    let ctx = Ctx {
        lr: f64::from(lr),
        ..ctx0()
    };
    let grads = [
        [3.0f32, -4.0, 0.5],
        [0.2, 0.1, -0.3],
        [-1.0, 2.5, 0.0],
        [0.4, 0.4, 0.4],
    ];
    let x0 = [1.0f32, -2.0, 0.5];
    let mut chain = RowChain::new(
        &Term::none(),
        &x0,
        base,
        &Rule::default(),
        &one_tensor(3),
        ctx,
        4,
    );
    let (mut x, mut want, mut b) = (x0.to_vec(), x0.to_vec(), [0f32; 3]);
    for g in &grads {
        chain.step(&mut x, g);
        let norm = g.iter().map(|v| v * v).sum::<f32>().sqrt();
        let coef = (a * (norm + 1e-6).recip()).min(1.0);
        for j in 0..3 {
            let d = g[j] * coef + want[j] * wd;
            b[j] = b[j] * beta + d;
            want[j] -= b[j] * lr;
        }
        let worst = (x.iter().zip(&want))
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max);
        assert!(worst <= 1e-6, "{x:?} against {want:?}");
    }
}

/// The momentum buffer starts at 0 with every client's training (a new optimizer every round,
/// as MOON's code makes one): one step a round with momentum is the plain SGD round, to the
/// bit, and more steps are not.
#[test]
fn local_momentum_starts_afresh_each_round() {
    let one = ["local.steps=1"];
    let with = |m: &str| globals_after(&[one[0], m], 3);
    assert_eq!(with("local.momentum=0"), with("local.momentum=0.9"));
    let many = |m: &str| globals_after(&["local.steps=3", m], 2);
    assert_ne!(many("local.momentum=0"), many("local.momentum=0.9"));
    for bad in ["1", "-0.1", "nan"] {
        let set = [format!("local.momentum={bad}")];
        let e = fedrun::schema::parse(&common::synthetic_spec(""), "test", &set).unwrap_err();
        assert!(e.to_string().contains("`local.momentum`"), "{e}");
    }
}

// ------------------------------------------------------------- the FedACG family

#[test]
fn fedacg_reduces_to_fedprox_and_fedavg() {
    // λ = 0: Φ = θ, and w·Σ(θ − Φ)² is FedProx with μ = 2w
    assert_eq!(
        globals_after(
            &[
                "fl.algorithm=\"fedacg\"",
                "fedacg.lambda=0",
                "fedacg.prox=0.25"
            ],
            3
        ),
        globals_after(&["fl.algorithm=\"fedprox\"", "fedprox.mu=0.5"], 3)
    );
    let avg = globals_after(&["fl.algorithm=\"fedavg\""], 3);
    assert_eq!(
        avg,
        globals_after(
            &[
                "fl.algorithm=\"fedacg\"",
                "fedacg.lambda=0",
                "fedacg.prox=0"
            ],
            3
        )
    );
    assert_ne!(avg, globals_after(&["fl.algorithm=\"fedacg\""], 3));
}

#[test]
fn fedacg_with_one_step_per_round_is_nesterov_on_the_mean_objective() {
    // full participation, one local step, no weight decay, no clip, uniform weights:
    // θ_i = Φ − l·∇f_i(Φ), so m ← λm − l·∇f(θ + λm), θ ← θ + m (Nesterov, Sutskever form)
    let (lambda, lr) = (0.85f64, 0.1f64);
    let spec = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "test",
        &[
            "fl.algorithm=\"fedacg\"".into(),
            format!("fedacg.lambda={lambda}"),
        ],
    )
    .unwrap();
    let counts = vec![vec![0usize; 10]; 2];
    let mut alg = algorithms::build(&Setup {
        spec: &spec,
        dim: 2,
        tensors: &[0..1, 1..2],
        client_sizes: &[1, 1],
        federation: 2,
        class_counts: &counts,
        initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
    })
    .unwrap();
    let mut q = two_clients(1, sgd(0.0, 0.0, false));
    q.lr = lr;
    let mut x = vec![0.5f32, -0.5];
    let cfg = RoundConfig {
        seed: 0,
        clients_per_round: 2,
        lr,
        server_lr: 1.0,
        uniform: true,
        uplink: None,
        active: None,
    };
    let (a, b) = (q.a.clone(), q.b.clone());
    let grad = |p: &[f64]| -> Vec<f64> {
        (0..2)
            .map(|j| {
                (0..2)
                    .map(|i| 0.5 * a[i][j] as f64 * (p[j] - b[i][j] as f64))
                    .sum()
            })
            .collect()
    };
    let (mut th, mut m) = (vec![0.5f64, -0.5], vec![0f64; 2]);
    for t in 0..5 {
        run_round(t, &cfg, &[1, 1], &mut x, alg.as_mut(), &mut q).unwrap();
        let look: Vec<f64> = (0..2).map(|j| th[j] + lambda * m[j]).collect();
        let g = grad(&look);
        for j in 0..2 {
            m[j] = lambda * m[j] - lr * g[j];
            th[j] += m[j];
        }
        for j in 0..2 {
            assert!(
                (x[j] as f64 - th[j]).abs() < 1e-6,
                "round {t}, coordinate {j}: {} vs Nesterov {}",
                x[j],
                th[j]
            );
        }
    }
}

#[test]
fn feddyn_reaches_the_optimum_where_fedavg_stays_biased_and_starts_as_fedprox() {
    let opt = || sgd(0.0, 0.0, false);
    let xstar = two_clients(10, opt()).optimum();
    let spec = |alg: &str| {
        fedrun::schema::parse(
            &common::synthetic_spec(""),
            "test",
            &[
                format!("fl.algorithm=\"{alg}\""),
                "feddyn.alpha=0.1".into(),
                "fedprox.mu=0.1".into(),
            ],
        )
        .unwrap()
    };
    let counts = vec![vec![0usize; 10]; 2];
    let build = |s: &Spec| {
        algorithms::build(&Setup {
            spec: s,
            dim: 2,
            tensors: &[0..1, 1..2],
            client_sizes: &[1, 1],
            federation: 2,
            class_counts: &counts,
            initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
        })
        .unwrap()
    };
    let cfg = RoundConfig {
        seed: 0,
        clients_per_round: 2,
        lr: 0.1,
        server_lr: 1.0,
        uniform: true,
        uplink: None,
        active: None,
    };
    let run = |alg: &mut dyn Strategy, rounds: usize| {
        let mut q = two_clients(10, opt());
        let mut x = vec![0f32; 2];
        for t in 0..rounds {
            run_round(t, &cfg, &[1, 1], &mut x, alg, &mut q).unwrap();
        }
        x
    };
    let err = |x: &[f32]| {
        x.iter()
            .zip(&xstar)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    };
    let dyn_x = run(build(&spec("feddyn")).as_mut(), 500);
    let avg_x = run(build(&spec("fedavg")).as_mut(), 500);
    assert!(err(&dyn_x) < 1e-4, "FedDyn {dyn_x:?} vs optimum {xstar:?}");
    assert!(err(&avg_x) > 0.02, "FedAvg {avg_x:?} stays biased");
    // round 0: the same local updates as FedProx with μ = α; with all N clients sampled and
    // uniform weights the server then moves twice as far (θ + Δ̄ − h/α, h = −α·Δ̄)
    let d = run(build(&spec("feddyn")).as_mut(), 1);
    let p = run(build(&spec("fedprox")).as_mut(), 1);
    for j in 0..2 {
        assert!(
            (d[j] - 2.0 * p[j]).abs() < 1e-7,
            "{d:?} vs 2 × FedProx {p:?}"
        );
    }
}

#[test]
fn loss_terms_off_and_fedcm_with_alpha_one_equal_fedavg() {
    let avg = globals_after(&["fl.algorithm=\"fedavg\""], 2);
    for (alg, off, on) in [
        ("fedlc", "fedlc.tau=0", "fedlc.tau=1"),
        ("fedntd", "fedntd.weight=0", "fedntd.weight=0.3"),
        ("feddecorr", "feddecorr.beta=0", "feddecorr.beta=0.5"),
        ("fedcm", "fedcm.alpha=1", "fedcm.alpha=0.1"),
        ("moon", "moon.mu=0", "moon.mu=1"),
    ] {
        let name = format!("fl.algorithm=\"{alg}\"");
        assert_eq!(avg, globals_after(&[&name, off], 2), "{alg} with {off}");
        assert_ne!(avg, globals_after(&[&name, on], 2), "{alg} with {on}");
    }
}

fn t2(rows: &[[f32; 3]]) -> Tensor<2> {
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), 3]), &Device::flex())
}

fn labels(y: &[i64]) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(y.to_vec(), [y.len()]), &Device::flex())
}

fn value(t: Tensor<1>) -> f64 {
    t.into_scalar::<f32>() as f64
}

#[test]
fn loss_terms_by_hand() {
    // FedLC: counts (16, 1, 0), τ = 1 → offsets (−1/2, −1, masked); logits z = (1, 2, 5), y = 0:
    // softmax over classes 0 and 1 of (0.5, 1.0) → −log(e^0.5/(e^0.5 + e^1))
    let off = fedlc::offsets(1.0, &[16, 1, 0]);
    assert_eq!(&off[..2], &[-0.5, -1.0]);
    let offsets = Tensor::<2>::from_data(TensorData::new(off, [1, 3]), &Device::flex());
    let lc = value(losses::calibrated_cross_entropy(
        t2(&[[1.0, 2.0, 5.0]]),
        offsets,
        labels(&[0]),
        None,
    ));
    let want = -(0.5f64.exp() / (0.5f64.exp() + 1f64.exp())).ln();
    assert!((lc - want).abs() < 1e-6, "FedLC {lc} vs {want}");
    // FedNTD: true class 2 dropped; local (0, ln 3) → q = (1/4, 3/4); global (0, 0) → p = ½, ½:
    // KL(p‖q) = ½ ln(½/¼) + ½ ln(½/¾)
    let kl = value(losses::not_true_kl(
        t2(&[[0.0, 3f32.ln(), 9.0]]),
        t2(&[[0.0, 0.0, -4.0]]),
        labels(&[2]),
        1.0,
        None,
    ));
    let want = 0.5 * 2f64.ln() + 0.5 * (2.0f64 / 3.0).ln();
    assert!((kl - want).abs() < 1e-6, "FedNTD {kl} vs {want}");
    // FedDecorr: features (1, 2, 0), (−1, 0, 1), (0, −2, −1): N = 3, standardised columns
    // z_j = x_j/σ_j with σ² = (unbiased) 1, 4, 1; K = zᵀz has K_01 = (1·1 + 0 + 0)·... by hand:
    // z0 = (1, −1, 0), z1 = (1, 0, −1), z2 = (0, 1, −1) → K_01 = 1, K_02 = −1, K_12 = 1
    // offdiag² mean = 1, divided by N = 3
    let dec = value(losses::decorrelation(t2(&[
        [1.0, 2.0, 0.0],
        [-1.0, 0.0, 1.0],
        [0.0, -2.0, -1.0],
    ])));
    assert!((dec - 1.0 / 3.0).abs() < 1e-5, "FedDecorr {dec} vs 1/3");
    // MOON: z = (1, 0), z_glob = (1, 0), z_prev = (0, 1): cosines 1 and 0, τ = ½ → logits
    // (2, 0) → −log(e²/(e² + 1)); with z = z_glob = z_prev the term is ln 2
    let t =
        |v: [f32; 2]| Tensor::<2>::from_data(TensorData::new(v.to_vec(), [1, 2]), &Device::flex());
    let con = value(losses::model_contrastive(
        t([1.0, 0.0]),
        t([1.0, 0.0]),
        t([0.0, 1.0]),
        0.5,
        None,
    ));
    let want = -(2f64.exp() / (2f64.exp() + 1.0)).ln();
    assert!((con - want).abs() < 1e-6, "MOON {con} vs {want}");
    let same = value(losses::model_contrastive(
        t([0.3, -2.0]),
        t([0.3, -2.0]),
        t([0.3, -2.0]),
        0.5,
        None,
    ));
    assert!(
        (same - 2f64.ln()).abs() < 1e-6,
        "MOON with equal models {same}"
    );
    // FedMLB's KD: KL(softmax(p) ‖ softmax(q)) with p = (0, 0) → ½, ½ and q = (0, ln 3) → ¼, ¾
    let kd = value(losses::kl_divergence(
        t([0.0, 0.0]),
        t([0.0, 3f32.ln()]),
        1.0,
        None,
    ));
    let want = 0.5 * 2f64.ln() + 0.5 * (2.0f64 / 3.0).ln();
    assert!((kd - want).abs() < 1e-6, "FedMLB KD {kd} vs {want}");
    // the cross-entropy these build on
    let ce = value(losses::cross_entropy(
        t2(&[[0.0, 0.0, 0.0]]),
        labels(&[1]),
        None,
    ));
    assert!((ce - 3f64.ln()).abs() < 1e-6);
}

/// A padded batch (`losses::Kept`): each batch mean over two samples and a padding row of
/// other values equals the mean over the two samples alone, and over a full batch (every row
/// kept, scale 1) it is the unpadded loss to the bit: what lets one captured graph replay a
/// training's short batches for these losses.
#[test]
fn a_padded_batchs_losses_are_its_samples_alone() {
    let dev = Device::flex();
    let rows = |v: &[[f32; 3]]| t2(v);
    let kept = |keep: &[f32], scale: f32| losses::Kept {
        keep: Tensor::from_data(TensorData::new(keep.to_vec(), [keep.len(), 1]), &dev),
        scale: Tensor::from_data(TensorData::new(vec![scale], [1]), &dev),
    };
    let (z2, g2, y2) = (
        [[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]],
        [[0.5, 0.0, 1.0], [2.0, 1.0, 0.0]],
        [0, 2],
    );
    // the padding row: other logits and target
    let (z3, g3, y3) = (
        [z2[0], z2[1], [9.0, -7.0, 4.0]],
        [g2[0], g2[1], [-3.0, 5.0, 1.0]],
        [0, 2, 1],
    );
    let pad = kept(&[1.0, 1.0, 0.0], 1.5);
    let full = kept(&[1.0, 1.0], 1.0);
    let off = || Tensor::<2>::from_data(TensorData::new(vec![-0.5f32, -1.0, 0.0], [1, 3]), &dev);
    type Loss<'a> = dyn Fn(&[[f32; 3]], &[[f32; 3]], &[i64], Option<&losses::Kept>) -> f64 + 'a;
    let all: [(&str, Box<Loss<'_>>); 5] = [
        (
            "cross-entropy",
            Box::new(|z, _, y, k| value(losses::cross_entropy(rows(z), labels(y), k))),
        ),
        (
            "FedLC",
            Box::new(|z, _, y, k| {
                value(losses::calibrated_cross_entropy(
                    rows(z),
                    off(),
                    labels(y),
                    k,
                ))
            }),
        ),
        (
            "FedNTD",
            Box::new(|z, g, y, k| value(losses::not_true_kl(rows(z), rows(g), labels(y), 2.0, k))),
        ),
        (
            "KD",
            Box::new(|z, g, _, k| value(losses::kl_divergence(rows(g), rows(z), 1.5, k))),
        ),
        (
            "MOON",
            Box::new(|z, g, _, k| {
                let prev: Vec<[f32; 3]> = z.iter().map(|r| [r[2], r[0], r[1]]).collect();
                value(losses::model_contrastive(
                    rows(z),
                    rows(g),
                    rows(&prev),
                    0.5,
                    k,
                ))
            }),
        ),
    ];
    for (name, f) in &all {
        let alone = f(&z2, &g2, &y2, None);
        let padded = f(&z3, &g3, &y3, Some(&pad));
        assert!(
            (alone - padded).abs() < 1e-6 * alone.abs().max(1.0),
            "{name}: {padded} vs {alone}"
        );
        let with = f(&z2, &g2, &y2, Some(&full));
        assert_eq!(
            with.to_bits(),
            alone.to_bits(),
            "{name}: a full batch's bits"
        );
    }
}

#[test]
fn moon_first_step_loss_is_cross_entropy_plus_mu_ln2_with_theta0_as_previous() {
    // `moon.new_client_prev = "initial"`, round 0, one client, one step: the global, previous
    // (θ_0) and local models coincide; with `own` (MOON's code) round 0 has no previous model
    // and the loss is CE alone
    let base = [
        "data.num_clients=1",
        "fl.clients_per_round=1",
        "local.steps=1",
        "model.projection=16",
    ];
    let run = |extra: &[&str]| experiment(&[&base[..], extra].concat()).round(0).unwrap();
    let a = run(&["fl.algorithm=\"fedavg\""]);
    let moon = ["fl.algorithm=\"moon\"", "moon.mu=0.7"];
    let m = run(&[&moon[..], &["moon.new_client_prev=\"initial\""]].concat());
    assert!(
        (m.train_loss - (a.train_loss + 0.7 * 2f64.ln())).abs() < 1e-5,
        "MOON {} vs CE {} + 0.7·ln 2",
        m.train_loss,
        a.train_loss
    );
    assert_eq!(
        run(&moon).train_loss,
        a.train_loss,
        "MOON's round 0 is CE alone"
    );
}

#[test]
fn moon_contrasts_nothing_in_round_zero_then_a_new_clients_own_network() {
    // MOON's code: the pool of previous models is empty in round 0 (its term, of one logit, is
    // 0: FedAvg's round bit for bit), and holds each party's own network after it, so that a
    // client first sampled later (4 clients, 2 a round) contrasts with a network of its own,
    // not θ_0, and the runs part
    let p = "model.projection=16";
    let moon = [p, "fl.algorithm=\"moon\""];
    assert_eq!(
        globals_after(&moon, 1),
        globals_after(&[p, "fl.algorithm=\"fedavg\""], 1)
    );
    let own = globals_after(&moon, 3);
    let theta0 = globals_after(
        &[&moon[..], &["moon.new_client_prev=\"initial\""]].concat(),
        3,
    );
    assert_ne!(own, theta0);
    assert_eq!(own, globals_after(&moon, 3), "the same networks again");
}

#[test]
fn moons_new_client_contrasts_with_the_network_drawn_from_its_own_stream() {
    // the strategy alone, with a draw that records what it was asked: nothing in round 0; in
    // round 1 one network a new client, from the client's own sub-stream, which is its
    // previous model; a client that has trained keeps its own previous model
    use fedrun::fl::plan::{Frozen, Report};
    use std::sync::{Arc, Mutex};
    let asked = Arc::new(Mutex::new(Vec::<Vec<u64>>::new()));
    let log = asked.clone();
    let sp = spec("moon");
    let counts = vec![vec![0usize; 10]; 3];
    let mut moon = algorithms::build(&Setup {
        spec: &sp,
        dim: 2,
        tensors: &[0..1, 1..2],
        client_sizes: &[1, 1, 1],
        federation: 3,
        class_counts: &counts,
        initial_model: Arc::new(move |keys: &[u64]| {
            log.lock().unwrap().push(keys.to_vec());
            vec![keys.iter().sum::<u64>() as f32, -1.0]
        }),
    })
    .unwrap();
    let info = |round, sampled: Vec<usize>| RoundInfo {
        round,
        lr: 0.1,
        server_lr: 1.0,
        sampled,
    };
    let prev = |m: &dyn Strategy, i| match m.plan(i).frozen.get(1) {
        Some(Frozen::Params(p)) => Some(p.to_vec()),
        _ => None,
    };
    moon.begin_round(&info(0, vec![0]), &[0.5, 0.5]).unwrap();
    assert!(asked.lock().unwrap().is_empty(), "round 0 draws nothing");
    assert_eq!(prev(moon.as_ref(), 0), None, "round 0: no previous model");
    let delta = vec![0.25f32, 0.25];
    let report = Report {
        delta: &delta,
        info: fedrun::fl::plan::ClientInfo {
            steps: 1,
            lr: 0.1,
            samples: 1,
        },
        uplink: Default::default(),
    };
    moon.receive(0, report).unwrap();
    moon.begin_round(&info(1, vec![2, 0]), &[1.0, 1.0]).unwrap();
    assert_eq!(
        *asked.lock().unwrap(),
        vec![vec![1u64, 2]],
        "client 2's own stream alone"
    );
    assert_eq!(prev(moon.as_ref(), 2), Some(vec![3.0, -1.0]));
    assert_eq!(
        prev(moon.as_ref(), 0),
        Some(vec![0.75, 0.75]),
        "client 0's trained model"
    );
}

#[test]
fn fedmlb_without_branches_is_fedavg_and_needs_resnet() {
    let r = "model.kind=\"resnet18\"";
    let avg = globals_after(&[r, "fl.algorithm=\"fedavg\""], 1);
    assert_eq!(
        avg,
        globals_after(&[r, "fl.algorithm=\"fedmlb\"", "fedmlb.branches=false"], 1)
    );
    assert_ne!(avg, globals_after(&[r, "fl.algorithm=\"fedmlb\""], 1));
    // refused when the spec is read (`fedrun check`), before any data loads
    let err = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "test",
        &["fl.algorithm=\"fedmlb\"".into()],
    )
    .map(|_| ())
    .expect_err("the CNN has no stages")
    .to_string();
    assert!(err.contains("resnet18"), "{err}");
}

#[test]
fn scaffold_over_a_federation_averages_its_members_variates() {
    // a pool of 4, a federation of clients 1 and 3: only they train, and c is their mean
    let mut q = Quadratic::new(
        vec![
            vec![1.0, 0.1],
            vec![0.1, 1.0],
            vec![2.0, 0.5],
            vec![0.5, 2.0],
        ],
        vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![-1.0, 0.5],
            vec![0.5, -1.0],
        ],
        1,
        sgd(0.0, 0.0, false),
    );
    let sp = spec("scaffold");
    let mut s = Scaffold::from_setup(&Setup {
        spec: &sp,
        dim: 2,
        tensors: &[0..1, 1..2],
        client_sizes: &[1, 1, 1, 1],
        federation: 2,
        class_counts: &[vec![0; 10], vec![0; 10], vec![0; 10], vec![0; 10]],
        initial_model: std::sync::Arc::new(|_: &[u64]| Vec::new()),
    })
    .unwrap();
    let mut x = vec![0.5f32, -0.5];
    let cfg = RoundConfig {
        active: Some(vec![1, 3]),
        ..two_per_round(0.1)
    };
    run_round(0, &cfg, &[1, 1, 1, 1], &mut x, &mut s, &mut q).unwrap();
    assert!(s.control_variate(0).is_none() && s.control_variate(2).is_none());
    let info = RoundInfo {
        round: 1,
        lr: 0.1,
        server_lr: 1.0,
        sampled: vec![1, 3],
    };
    s.begin_round(&info, &x).unwrap();
    let c1 = s.control_variate(1).unwrap().to_vec();
    let c3 = s.control_variate(3).unwrap().to_vec();
    let mean: Vec<f32> = (0..2).map(|j| 0.5 * (c1[j] + c3[j])).collect();
    assert_eq!(s.server_variate(), &mean[..]);
    // a member that leaves is forgotten, and leaves the mean
    s.leaving(3).unwrap();
    s.state().forget(3).unwrap();
    assert!(s.control_variate(3).is_none());
    s.begin_round(&info, &x).unwrap();
    let half: Vec<f32> = (0..2).map(|j| 0.5 * c1[j]).collect();
    assert_eq!(s.server_variate(), &half[..]);
}

/// FedAvgM's server links `[trace(β), scale(η)]` and ACG's `[scale(η), trace(λ)]` are the same
/// two links in the other order: with λ = β they move x alike (the closed form `m ← Δ̄ + β·m`,
/// `x ← x + η·m`, up to rounding), and ACG's momentum carries η (its state norm is η·‖m‖).
#[test]
fn fedavgm_and_acg_are_the_same_two_server_links_in_the_other_order() {
    use fedrun::fl::strategy::ServerChain;
    use fedrun::optim::{Momentum, Scale};
    let (beta, eta) = (0.5f32, 0.25f64);
    let trace = || Box::new(Momentum::trace(beta, 2));
    let mut avgm = ServerChain::new(vec![trace(), Box::new(Scale(eta))]);
    let mut acg = ServerChain::new(vec![Box::new(Scale(eta)), trace()]);
    let (mut x1, mut x2) = (vec![0f32; 2], vec![0f32; 2]);
    let (mut m, mut x) = ([0f64; 2], [0f64; 2]);
    for (t, d) in [[1.0f32, -2.0], [0.5, 0.5], [-1.0, 0.25]]
        .iter()
        .enumerate()
    {
        let agg = || Aggregate {
            mean_delta: d.to_vec(),
            mean_sq_norm: 0.0,
            clients: 1,
        };
        let (l1, l2) = (
            avgm.step(t, &mut x1, &mut agg()),
            acg.step(t, &mut x2, &mut agg()),
        );
        for j in 0..2 {
            m[j] = d[j] as f64 + beta as f64 * m[j];
            x[j] += eta * m[j];
            assert!((x1[j] as f64 - x[j]).abs() < 1e-6, "FedAvgM, round {t}");
            assert!((x2[j] as f64 - x[j]).abs() < 1e-6, "ACG, round {t}");
        }
        let norm = m[0].hypot(m[1]);
        assert!((l1.state_norm.unwrap() - norm).abs() < 1e-6);
        assert!(
            (l2.state_norm.unwrap() - eta * norm).abs() < 1e-6,
            "ACG's m carries η"
        );
        assert_eq!((l1.server_lr, l2.server_lr), (eta, eta));
    }
}

/// Two links that keep a vector of one name cannot share a server chain: the checkpoint keys
/// state by name, so the second would be restored from the first's values.
#[test]
#[should_panic(expected = "two server links keep a vector named `m`")]
fn a_server_chain_refuses_two_links_with_one_state_name() {
    use fedrun::fl::strategy::ServerChain;
    use fedrun::optim::Momentum;
    ServerChain::new(vec![
        Box::new(Momentum::trace(0.9, 2)),
        Box::new(Momentum::ema(0.5, 2)),
    ]);
}

/// A strategy's state with one name twice is refused by name, before any checkpoint.
#[test]
fn a_state_with_one_name_twice_is_refused() {
    use fedrun::fl::strategy::State;
    let (mut a, mut b) = (vec![0f32; 2], vec![1f32; 2]);
    let err = State::none()
        .vector("m", &mut a)
        .vector("m", &mut b)
        .check_names()
        .unwrap_err()
        .to_string();
    assert!(err.contains("two state vectors named `m`"), "{err}");
    let (mut a, mut b) = (vec![0f32; 2], vec![1f32; 2]);
    assert!(
        State::none()
            .vector("m", &mut a)
            .vector("v", &mut b)
            .check_names()
            .is_ok()
    );
}

/// SCAFFOLD's server step is FedAvg's, so ACG composes with it: the wrapped run's clients get
/// SCAFFOLD's correction and the server ACG's momentum; without ACG the log's state norm is ‖c‖.
#[test]
fn scaffold_logs_its_variate_norm_and_composes_with_acg() {
    let opt = || sgd(0.0, 0.0, false);
    let mut plain = build(&spec("scaffold"), 2, &[1, 1]);
    let mut q = two_clients(3, opt());
    q.lr = 0.1;
    let cfg = two_per_round(0.1);
    let mut x = vec![0f32; 2];
    let mut norms = Vec::new();
    for t in 0..3 {
        let st = run_round(t, &cfg, &[1, 1], &mut x, plain.as_mut(), &mut q).unwrap();
        norms.push(st.server.state_norm.expect("SCAFFOLD logs ‖c‖"));
    }
    assert_eq!(norms[0], 0.0, "c = 0 before any client trained");
    assert!(norms[2] > 0.0, "{norms:?}");
    let s = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "t",
        &[
            "fl.algorithm=\"scaffold\"".into(),
            "fl.acg=true".into(),
            "fl.acg_lambda=0.5".into(),
        ],
    )
    .unwrap();
    let mut acg = build(&s, 2, &[1, 1]);
    let mut q = two_clients(3, opt());
    q.lr = 0.1;
    let mut y = vec![0f32; 2];
    for t in 0..3 {
        run_round(t, &cfg, &[1, 1], &mut y, acg.as_mut(), &mut q).unwrap();
    }
    assert!(y.iter().all(|v| v.is_finite()));
    assert_ne!(x, y, "ACG's lookahead moves the model differently");
}

/// The FedExP form of Adagrad keeps no first moment: its state-norm column is empty, not a 0
/// that nothing measured; the other rules log ‖m‖.
#[test]
fn fedadagrad_code_form_logs_no_state_norm() {
    use fedrun::optim::{AdaptiveForm, ScaleByAdaptive, Transform};
    let form = AdaptiveForm::FedExp {
        eps0: 0.0,
        decay: 1.0,
    };
    let mut ada = ScaleByAdaptive::new(AdaptiveRule::Adagrad, form, 0.9, 0.99, 2);
    let mut adam = ScaleByAdaptive::new(AdaptiveRule::Adam, form, 0.9, 0.99, 2);
    let (ctx, mut log) = (Ctx::default(), fedrun::optim::Log::default());
    ada.update(&mut [1.0, -1.0], &[0.0; 2], &ctx, &mut log);
    adam.update(&mut [1.0, -1.0], &[0.0; 2], &ctx, &mut log);
    assert_eq!(ada.state_norm(), None);
    assert!(adam.state_norm().unwrap() > 0.0);
}
