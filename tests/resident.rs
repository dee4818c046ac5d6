//! The device-resident local step (`run.local_step = "device"`) against the host step: the
//! same algorithm terms, chain and update as tensor ops give the same runs to float rounding.
//! On flex both run on the CPU, so this runs everywhere; `tests/wgpu.rs` runs it on a GPU
//! backend.

mod common;

use burn::tensor::{Device, Tensor, TensorData};
use common::{TempDir, columns, synthetic_spec};
use fedrun::fl::client::{ClipDecay, DeviceChain, HostChain, StepPlan};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::fl::plan::Rule;
use fedrun::fl::term::Term;
use fedrun::metrics::summary::Status;
use fedrun::optim::Ctx;

fn run_with(d: &TempDir, name: &str, set: &[String]) -> Vec<Vec<f64>> {
    let mut set = set.to_vec();
    set.push(format!("run.name=\"{name}\""));
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &set).unwrap();
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete, "{name}: {}", s.message);
    columns(&d.path().join(name).join("rounds.csv"))
}

/// Every algorithm's local step (SGD after the chain, the Fed-LAMB rules: AMSGrad's moments,
/// the decay and the trust ratio, and Mime's term with the starting model's gradient), with its
/// term switched on and clipping active, trains alike with host and device steps.
#[test]
fn device_step_equals_host_step_for_every_term() {
    let header: Vec<&str> = fedrun::metrics::csv::HEADER.split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let d = TempDir::new("resident");
    let cases: &[(&str, &[&str])] = &[
        ("fedavg", &[]),
        ("fedprox", &["fedprox.mu=0.1"]),
        ("scaffold", &[]),
        ("feddyn", &[]),
        ("feddc", &[]),
        ("fedcm", &["fedcm.alpha=0.5"]),
        ("fedacg", &[]),
        ("moon", &[]),
        ("fedams", &[]),
        ("fedlamb", &[]),
        ("fedlamb", &["fedlamb.zero_rule=\"paper\""]),
        // Mime's SVRG correction: the starting model's gradient on each step's batch
        (
            "mime",
            &[
                "mime.base=\"sgdm\"",
                "mime.lite=false",
                "local.max_norm=0.01",
            ],
        ),
        (
            "mime",
            &[
                "mime.base=\"frozen-amsgrad\"",
                "mime.lite=false",
                "local.max_norm=0.01",
            ],
        ),
    ];
    for (i, &(alg, keys)) in cases.iter().enumerate() {
        for nar in [false, true] {
            let mut set: Vec<String> = vec![
                format!("fl.algorithm=\"{alg}\""),
                format!("local.nar={nar}"),
                "local.max_norm=0.5".into(),
                "fl.rounds=3".into(),
            ];
            set.extend(keys.iter().map(|k| k.to_string()));
            let tag = format!("{alg}_{nar}_{i}");
            let mut host = set.clone();
            host.push("run.local_step=\"host\"".into());
            let mut dev = set.clone();
            dev.push("run.local_step=\"device\"".into());
            let a = run_with(&d, &format!("{tag}_host"), &host);
            let b = run_with(&d, &format!("{tag}_device"), &dev);
            assert_eq!(a.len(), 3);
            let clipped = col("clipped_steps");
            assert!(
                a.iter().any(|r| r[clipped] > 0.0),
                "{tag}: the test must clip some steps"
            );
            for (r, (x, y)) in a.iter().zip(&b).enumerate() {
                assert_eq!(x[clipped], y[clipped], "{tag} round {r}: clipped steps");
                for name in ["test_loss", "train_loss", "mean_clip_norm", "update_norm"] {
                    let (u, v) = (x[col(name)], y[col(name)]);
                    assert!(
                        (u - v).abs() <= 1e-4 * u.abs().max(1.0),
                        "{tag} round {r}, {name}: host {u} vs device {v}"
                    );
                }
            }
        }
    }
}

/// One step of rows with contexts `ctx`, those `active` stepping.
fn one_step<'a>(ctx: &[Ctx<'a>], active: &[bool]) -> StepPlan<'a> {
    StepPlan {
        ctx: vec![ctx.to_vec()],
        active: vec![active.to_vec()],
    }
}

/// `v` as one-row tensors `[1, n]`, cut at `cuts`.
fn split(v: &[f32], cuts: &[usize], dev: &Device) -> Vec<Tensor<2>> {
    let mut out = Vec::new();
    let mut at = 0;
    for &c in cuts.iter().chain(std::iter::once(&v.len())) {
        out.push(Tensor::<2>::from_data(
            TensorData::new(v[at..c].to_vec(), [1, c - at]),
            dev,
        ));
        at = c;
    }
    out
}

/// The rows of `vs` (one vector each) as `[K, n]` tensors, cut at `cuts`.
fn stack(vs: &[&[f32]], cuts: &[usize], dev: &Device) -> Vec<Tensor<2>> {
    let per: Vec<Vec<Tensor<2>>> = vs.iter().map(|v| split(v, cuts, dev)).collect();
    (0..=cuts.len())
        .map(|t| Tensor::cat(per.iter().map(|p| p[t].clone()).collect(), 0))
        .collect()
}

/// Row `k` of `[K, n]` tensors, joined.
fn row(t: &[Tensor<2>], k: usize) -> Vec<f32> {
    join(t.iter().map(|t| t.clone().narrow(0, k, 1)).collect())
}

fn join(t: Vec<Tensor<2>>) -> Vec<f32> {
    t.into_iter()
        .flat_map(|t| {
            t.into_data()
                .convert::<f32>()
                .try_into_vec::<f32>()
                .unwrap()
        })
        .collect()
}

/// The chain over tensors (device step) against the chain over flat vectors (host step), with
/// and without clipping, baseline and FedNAR, with a term (prox and a shift), on vectors split
/// into three parameter tensors.
#[test]
fn the_chain_over_tensors_equals_the_chain_over_vectors() {
    let dev = Device::flex();
    let n = 3000;
    let x0: Vec<f32> = (0..n)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 40.0)
        .collect();
    let g0: Vec<f32> = (0..n)
        .map(|i| ((i * 53 % 97) as f32 - 48.0) / 30.0)
        .collect();
    let cuts = [100, 1700];
    let ranges = [0..100, 100..1700, 1700..n];
    let anchor: Vec<f32> = x0.iter().map(|v| v * 0.5).collect();
    let shift: Vec<f32> = g0.iter().map(|v| v - 0.25).collect();
    let ctx = Ctx::default();
    for nar in [false, true] {
        for a in [0.0, 1.0, 1e6] {
            let base = ClipDecay::new(0.05, a, nar);
            let term = Term::prox(0.3).shift(-0.5, &shift);
            let (mut x, mut g) = (x0.clone(), g0.clone());
            let mut host = HostChain::new(term.clone(), &anchor, base, Rule::default());
            let s = host.step(&mut x, &mut g, &Ctx { lr: 0.1, ..ctx });
            let rule = Rule::default();
            let plan = one_step(&[Ctx { lr: 0.1, ..ctx }], &[true]);
            let mut device =
                DeviceChain::new(&[(&term, &rule)], &[&anchor], base, &ranges, &plan, &dev)
                    .unwrap();
            let mut xt = split(&x0, &cuts, &dev);
            let mut gt = split(&g0, &cuts, &dev);
            let norm = device.step(&mut xt, &mut gt, &[]).unwrap();
            device.advance();
            let norm = norm.into_scalar::<f32>() as f64;
            let st = device.read_norm(norm);
            assert_eq!(st.clipped, s.clipped, "nar {nar}, A {a}");
            assert!((st.pre_clip_norm - s.pre_clip_norm).abs() < 1e-4 * s.pre_clip_norm);
            for (u, v) in x.iter().zip(join(xt)) {
                assert!((u - v).abs() < 1e-5, "nar {nar}, A {a}: {u} vs {v}");
            }
        }
    }
}

/// The chain over K rows (a cohort's clients) gives each row what the chain gives it alone:
/// clients with different terms (one without SCAFFOLD's second shift), learning rates and
/// clips; a row that does not step (a client past its last step) stays as it is.
#[test]
fn the_chain_over_rows_steps_each_row_as_alone() {
    let dev = Device::flex();
    let n = 2000;
    let cuts = [300, 1100];
    let ranges = [0..300, 300..1100, 1100..n];
    let f = |k: usize, s: f32| -> Vec<f32> {
        (0..n).map(|i| ((i * k % 89) as f32 - 44.0) / s).collect()
    };
    let (xs, gs) = (
        [f(3, 40.0), f(5, 30.0), f(7, 50.0)],
        [f(11, 20.0), f(13, 9.0), f(17, 30.0)],
    );
    let (anchors, c, ci) = (
        [f(19, 60.0), f(23, 60.0), f(29, 60.0)],
        f(31, 80.0),
        f(37, 70.0),
    );
    let terms = [
        Term::prox(0.3).shift(1.0, &c).shift(-1.0, &ci),
        Term::prox(0.3).shift(1.0, &c),
        Term::prox(0.1).shift(0.5, &c),
    ];
    let rule = Rule::default();
    let rates = [0.1f32, 0.05, 0.0];
    for nar in [false, true] {
        let base = ClipDecay::new(0.05, 90.0, nar);
        let plans: Vec<_> = terms.iter().map(|t| (t, &rule)).collect();
        let a: Vec<&[f32]> = anchors.iter().map(|a| a.as_slice()).collect();
        let ctx: Vec<Ctx> = rates
            .iter()
            .map(|&r| Ctx {
                lr: f64::from(r),
                ..Ctx::default()
            })
            .collect();
        let plan = one_step(&ctx, &[true, true, false]);
        let mut chain = DeviceChain::new(&plans, &a, base, &ranges, &plan, &dev).unwrap();
        let mut xt = stack(&[&xs[0], &xs[1], &xs[2]], &cuts, &dev);
        let mut gt = stack(&[&gs[0], &gs[1], &gs[2]], &cuts, &dev);
        let norms = chain.step(&mut xt, &mut gt, &[]).unwrap();
        chain.advance();
        let norms = norms
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .unwrap();
        let mut clipped = 0;
        for k in 0..2 {
            let plan = one_step(&ctx[k..=k], &[true]);
            let mut alone =
                DeviceChain::new(&plans[k..=k], &a[k..=k], base, &ranges, &plan, &dev).unwrap();
            let mut x1 = split(&xs[k], &cuts, &dev);
            let mut g1 = split(&gs[k], &cuts, &dev);
            let n1 = alone.step(&mut x1, &mut g1, &[]);
            alone.advance();
            let n1 = f64::from(n1.unwrap().into_scalar::<f32>());
            let (log_k, log_1) = (chain.read_norm(f64::from(norms[k])), alone.read_norm(n1));
            assert_eq!(log_k.clipped, log_1.clipped, "nar {nar}, row {k}");
            clipped += usize::from(log_k.clipped);
            assert!(
                (f64::from(norms[k]) - n1).abs() < 1e-5 * n1,
                "nar {nar}, row {k}"
            );
            for (u, v) in row(&xt, k).iter().zip(join(x1)) {
                assert!((u - v).abs() < 1e-5, "nar {nar}, row {k}: {u} vs {v}");
            }
        }
        assert!(
            clipped == 1,
            "nar {nar}: one row clips, one does not ({clipped})"
        );
        assert_eq!(
            row(&xt, 2),
            xs[2],
            "nar {nar}: the row that does not step moved"
        );
    }
}

/// The Fed-LAMB rule over K rows (AMSGrad's moments from each client's own m and v̂; with
/// the LAMB step, the decay and the trust ratio) gives each stepping row the host chain's step
/// and moments, and leaves a row that does not step, moments included, as it was: AMSGrad
/// then SGD (Fed-AMS) to the bit, with the trust ratio (f32 norms on the rows, f64 on the
/// host) to float rounding.
#[test]
fn the_lamb_rule_over_rows_steps_each_row_as_the_host_chain() {
    let dev = Device::flex();
    let n = 1500;
    let cuts = [200, 900];
    let ranges = [0..200, 200..900, 900..n];
    let f = |k: usize, s: f32| -> Vec<f32> {
        (0..n).map(|i| ((i * k % 83) as f32 - 41.0) / s).collect()
    };
    let (xs, gs, ms) = (
        [f(3, 40.0), f(5, 30.0), f(7, 50.0)],
        [f(11, 20.0), f(13, 9.0), f(17, 30.0)],
        [f(19, 90.0), f(23, 70.0), f(29, 80.0)],
    );
    let vhat: Vec<Vec<f32>> = [31, 37, 41]
        .iter()
        .map(|&k| f(k, 60.0).iter().map(|v| v.abs() + 1e-3).collect())
        .collect();
    let (term, base) = (Term::none(), ClipDecay::new(0.0, 0.0, false));
    let ctx: Vec<Ctx> = [0.1, 0.05, 0.2]
        .iter()
        .map(|&lr| Ctx {
            lr,
            ..Ctx::default()
        })
        .collect();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for trust in [false, true] {
        let rules: Vec<Rule> = (0..3)
            .map(|k| lamb(trust, &ranges, &ms[k], &vhat[k]))
            .collect();
        let plans: Vec<(&Term, &Rule)> = rules.iter().map(|r| (&term, r)).collect();
        let a: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
        let plan = one_step(&ctx, &[true, false, true]);
        let mut chain =
            DeviceChain::new(&plans, &a, base, &ranges, &plan, &dev).expect("on the device");
        let mut xt = stack(&[&xs[0], &xs[1], &xs[2]], &cuts, &dev);
        let mut gt = stack(&[&gs[0], &gs[1], &gs[2]], &cuts, &dev);
        chain.step(&mut xt, &mut gt, &[]);
        chain.advance();
        let (m_rows, v_rows) = chain.moments().expect("the rule's moments");
        for k in [0, 2] {
            let rule = lamb(trust, &ranges, &ms[k], &vhat[k]);
            let mut host = HostChain::new(Term::none(), &xs[k], base, rule);
            let (mut x, mut g) = (xs[k].clone(), gs[k].clone());
            host.step(&mut x, &mut g, &ctx[k]);
            let moments = host.into_moments().expect("the host's moments");
            assert_eq!(
                bits(&row(&m_rows, k)),
                bits(&moments.m),
                "trust {trust}, m {k}"
            );
            assert_eq!(
                bits(&row(&v_rows, k)),
                bits(&moments.v),
                "trust {trust}, v {k}"
            );
            let xk = row(&xt, k);
            if trust {
                for (u, v) in xk.iter().zip(&x) {
                    assert!(
                        (u - v).abs() <= 1e-6 * v.abs().max(1.0),
                        "row {k}: {u} vs {v}"
                    );
                }
            } else {
                assert_eq!(bits(&xk), bits(&x), "row {k}: AMSGrad then SGD");
            }
        }
        assert_eq!(
            row(&xt, 1),
            xs[1],
            "trust {trust}: the row that does not step moved"
        );
        assert_eq!(row(&m_rows, 1), ms[1], "trust {trust}: its m moved");
        assert_eq!(row(&v_rows, 1), vhat[1], "trust {trust}: its v moved");
    }
}

/// A Fed-LAMB client's rule from its first moment `m` and the broadcast `vhat` (β 0.9, 0.99):
/// AMSGrad's moments, then with `trust` the decay 0.01 and the trust ratio over `ranges`.
fn lamb(trust: bool, ranges: &[std::ops::Range<usize>], m: &[f32], vhat: &[f32]) -> Rule {
    use fedrun::optim::{AddDecayedWeights, ScaleByAmsgrad, ScaleByTrustRatio, Transform};
    let mut links: Vec<Box<dyn Transform>> =
        vec![Box::new(ScaleByAmsgrad::new(0.9, 0.99, m.to_vec(), vhat))];
    if trust {
        links.push(Box::new(AddDecayedWeights(0.01)));
        links.push(Box::new(ScaleByTrustRatio {
            tensors: ranges.to_vec(),
            on_zero: 1.0,
        }));
    }
    Rule { links }
}

/// `Term::apply`: `g ← scale·g + prox·(x − anchor) + Σ a_k·v_k`, over more than one block.
#[test]
fn the_local_term_is_its_formula() {
    let n = 2500;
    let f = |k: usize| -> Vec<f32> { (0..n).map(|i| ((i * k % 17) as f32) - 8.0).collect() };
    let (x, anchor, v, w, g0) = (f(3), f(5), f(7), f(11), f(13));
    let term = Term {
        scale: 0.5,
        prox: 0.25,
        shifts: vec![],
        anchor_grad: 0.0,
    }
    .shift(2.0, &v)
    .shift(-1.0, &w);
    let ctx = Ctx::default();
    let mut g = g0.clone();
    term.apply(&anchor, &x, &[], &mut g, &ctx);
    for i in 0..n {
        let want = 0.5 * g0[i] + (0.25 * (x[i] - anchor[i]) + 2.0 * v[i] - w[i]);
        assert_eq!(g[i], want, "element {i}");
    }
    let mut g = g0.clone();
    Term::none().apply(&anchor, &x, &[], &mut g, &ctx);
    assert_eq!(g, g0);
}

/// The device chain as one closure, built once and run for N steps with nothing new from the
/// host (burn's `capture`, which on flex runs it 3 times to warm up and once more in place of a
/// recording, then `replay`), against the host chain run step by step with each step's
/// context: a learning rate that decays every step and differs between the rows, a row that
/// stops early, FedCM's factor `k/(l·K)` that follows the learning rate, AMSGrad's moments and
/// the trust ratio. The gradient is a function of the parameters computed inside the closure.
/// A step that took any of these from the host when the closure was made would repeat it.
#[test]
fn the_device_chain_replays_as_one_closure_with_nothing_from_the_host() {
    let dev = Device::flex();
    let n = 1200;
    let cuts = [200, 700];
    let ranges = [0..200, 200..700, 700..n];
    let f = |k: usize, s: f32| -> Vec<f32> {
        (0..n).map(|i| ((i * k % 83) as f32 - 41.0) / s).collect()
    };
    let (xs, ms, shift) = (
        [f(3, 40.0), f(5, 30.0)],
        [f(19, 90.0), f(23, 70.0)],
        f(7, 60.0),
    );
    let vhat: Vec<Vec<f32>> = [31, 37]
        .iter()
        .map(|&k| f(k, 60.0).iter().map(|v| v.abs() + 1e-3).collect())
        .collect();
    let steps = 10;
    let plan = decaying(steps);
    let fedcm = Term {
        scale: 0.5,
        ..Term::none()
    }
    .shift_by(fedrun::fl::term::Coef::PerStepLength(0.5), &shift);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for (case, term, rule_of) in [
        ("fedcm", fedcm.clone(), None),
        ("fedams", Term::none(), Some(false)),
        ("fedlamb", Term::none(), Some(true)),
    ] {
        let rules: Vec<Rule> = (0..2)
            .map(|k| rule_of.map_or_else(Rule::default, |t| lamb(t, &ranges, &ms[k], &vhat[k])))
            .collect();
        let base = ClipDecay::new(0.01, 0.0, false);
        let plans: Vec<(&Term, &Rule)> = rules.iter().map(|r| (&term, r)).collect();
        let a: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
        let mut chain = DeviceChain::new(&plans, &a, base, &ranges, &plan, &dev).unwrap();
        let mut xt = stack(&[&xs[0], &xs[1]], &cuts, &dev);
        let step = move || {
            let mut g: Vec<Tensor<2>> = xt.iter().map(|x| grad_at(x.clone())).collect();
            chain.step(&mut xt, &mut g, &[]);
            chain.advance();
            xt.clone()
        };
        let mut graph = burn::tensor::capture(&dev, step);
        assert!(!graph.is_hardware(), "flex records no graph");
        // capture ran the step 4 times
        for _ in 4..steps {
            // SAFETY: the fallback path re-runs the closure, which owns every tensor it touches
            unsafe { graph.replay() };
        }
        let xt = graph.output();
        for k in 0..2 {
            let rule = rule_of.map_or_else(Rule::default, |t| lamb(t, &ranges, &ms[k], &vhat[k]));
            let mut host = HostChain::new(term.clone(), &xs[k], base, rule);
            let mut x = xs[k].clone();
            for s in (0..steps).filter(|&s| plan.active[s][k]) {
                let mut g = row(&[grad_at(stack(&[&x], &[], &dev).remove(0))], 0);
                host.step(&mut x, &mut g, &plan.ctx[s][k]);
            }
            let xk = row(xt, k);
            if case == "fedlamb" {
                // the trust ratio's norms: f32 row sums on the device, f64 on the host
                for (u, v) in xk.iter().zip(&x) {
                    assert!(
                        (u - v).abs() <= 1e-5 * v.abs().max(1.0),
                        "{case} row {k}: {u} vs {v}"
                    );
                }
            } else {
                let d = xk
                    .iter()
                    .zip(&x)
                    .map(|(u, v)| (u - v).abs())
                    .fold(0f32, f32::max);
                assert!(bits(&xk) == bits(&x), "{case}: row {k} differs by {d:e}");
            }
        }
    }
}

/// `steps` steps of two rows: row 1 stops after 6, and each row's learning rate decays by 0.8 a
/// step.
fn decaying(steps: usize) -> StepPlan<'static> {
    let ctx: Vec<Vec<Ctx>> = (0..steps)
        .map(|s| {
            (0..2)
                .map(|k| Ctx {
                    lr: 0.1 * (k + 1) as f64 * 0.8f64.powi(s as i32),
                    steps: [steps, 6][k],
                    ..Ctx::default()
                })
                .collect()
        })
        .collect();
    let active: Vec<Vec<bool>> = (0..steps).map(|s| vec![true, s < 6]).collect();
    StepPlan { ctx, active }
}

/// The closure's gradient at `x`: `x·x/2 − 0.1`, elementwise.
fn grad_at(x: Tensor<2>) -> Tensor<2> {
    (x.clone() * x).mul_scalar(0.5).sub_scalar(0.1)
}
