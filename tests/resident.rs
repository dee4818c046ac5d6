//! The local chain over the rows of device tensors (every local step's) against its formulas
//! over flat vectors, row by row, and as one closure that takes nothing from the host.

mod common;

use burn::tensor::{Device, Tensor};
use common::reference;
use common::row_chain::{RowChain, join, one_tensor, split};
use fedrun::fl::client::{ClipDecay, DeviceChain, StepPlan};
use fedrun::fl::plan::Rule;
use fedrun::fl::term::Term;
use fedrun::optim::Ctx;
use std::ops::Range;

/// One step of rows with contexts `ctx`, those `active` stepping.
fn one_step(ctx: &[Ctx], active: &[bool]) -> StepPlan {
    StepPlan {
        ctx: vec![ctx.to_vec()],
        active: vec![active.to_vec()],
    }
}

/// The rows of `vs` (one vector each) as `[K, n]` tensors, cut at `ranges`.
fn stack(vs: &[&[f32]], ranges: &[Range<usize>], dev: &Device) -> Vec<Tensor<2>> {
    let per: Vec<Vec<Tensor<2>>> = vs.iter().map(|v| split(v, ranges, dev)).collect();
    (0..ranges.len())
        .map(|t| Tensor::cat(per.iter().map(|p| p[t].clone()).collect(), 0))
        .collect()
}

/// Row `k` of `[K, n]` tensors, joined.
fn row(t: &[Tensor<2>], k: usize) -> Vec<f32> {
    join(t.iter().map(|t| t.clone().narrow(0, k, 1)).collect())
}

/// The chain over tensors against its formulas over flat vectors (`common::reference`), with
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
    let ranges = [0..100, 100..1700, 1700..n];
    let anchor: Vec<f32> = x0.iter().map(|v| v * 0.5).collect();
    let shift: Vec<f32> = g0.iter().map(|v| v - 0.25).collect();
    let ctx = Ctx::default();
    for nar in [false, true] {
        for a in [0.0, 1.0, 1e6] {
            let base = ClipDecay::new(0.05, a, nar);
            let term = Term::prox(0.3).shift(-0.5, &shift);
            let (mut x, mut g) = (x0.clone(), g0.clone());
            let rule = Rule::default();
            let mut host = reference::Chain::new(term.clone(), &anchor, base, &rule);
            let s = host.step(&mut x, &mut g, &[], &Ctx { lr: 0.1, ..ctx });
            let plan = one_step(&[Ctx { lr: 0.1, ..ctx }], &[true]);
            let mut device =
                DeviceChain::new(&[(&term, &rule)], &[&anchor], base, &ranges, &plan, &dev);
            let mut xt = split(&x0, &ranges, &dev);
            let mut gt = split(&g0, &ranges, &dev);
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
        let mut chain = DeviceChain::new(&plans, &a, base, &ranges, &plan, &dev);
        let mut xt = stack(&[&xs[0], &xs[1], &xs[2]], &ranges, &dev);
        let mut gt = stack(&[&gs[0], &gs[1], &gs[2]], &ranges, &dev);
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
            let mut alone = DeviceChain::new(&plans[k..=k], &a[k..=k], base, &ranges, &plan, &dev);
            let mut x1 = split(&xs[k], &ranges, &dev);
            let mut g1 = split(&gs[k], &ranges, &dev);
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
/// the LAMB step, the decay and the trust ratio) gives each stepping row its formulas' step
/// and moments (`common::reference`), and leaves a row that does not step, moments included, as
/// it was: AMSGrad then SGD (Fed-AMS) to the bit, with the trust ratio (f32 norms on the rows,
/// f64 in the formulas) to float rounding.
#[test]
fn the_lamb_rule_over_rows_steps_each_row_as_its_formulas() {
    let dev = Device::flex();
    let n = 1500;
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
        let mut chain = DeviceChain::new(&plans, &a, base, &ranges, &plan, &dev);
        let mut xt = stack(&[&xs[0], &xs[1], &xs[2]], &ranges, &dev);
        let mut gt = stack(&[&gs[0], &gs[1], &gs[2]], &ranges, &dev);
        chain.step(&mut xt, &mut gt, &[]);
        chain.advance();
        let (m_rows, v_rows) = chain.moments().expect("the rule's moments");
        for k in [0, 2] {
            let rule = lamb(trust, &ranges, &ms[k], &vhat[k]);
            let mut host = reference::Chain::new(Term::none(), &xs[k], base, &rule);
            let (mut x, mut g) = (xs[k].clone(), gs[k].clone());
            host.step(&mut x, &mut g, &[], &ctx[k]);
            let (m, v) = host.moments().expect("the rule's moments");
            assert_eq!(bits(&row(&m_rows, k)), bits(&m), "trust {trust}, m {k}");
            assert_eq!(bits(&row(&v_rows, k)), bits(&v), "trust {trust}, v {k}");
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
    use fedrun::optim::{AddDecayedWeights, LocalLink, ScaleByAmsgrad, ScaleByTrustRatio};
    let mut links: Vec<Box<dyn LocalLink>> =
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

/// The term over rows: `g ← scale·g + prox·(x − anchor) + Σ a_k·v_k`, element by element; no
/// term leaves `g` as it is.
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
    // at l = 1 the step returns the update itself
    let ctx = Ctx {
        lr: 1.0,
        ..Ctx::default()
    };
    let base = ClipDecay::new(0.0, 0.0, false);
    let rule = Rule::default();
    let ranges = [0..1000, 1000..n];
    let update = |t: &Term| {
        let mut chain = RowChain::new(t, &anchor, base, &rule, &ranges, ctx, 1);
        chain.step(&mut x.clone(), &g0).0
    };
    let g = update(&term);
    for i in 0..n {
        let want = 0.5 * g0[i] + (0.25 * (x[i] - anchor[i]) + 2.0 * v[i] - w[i]);
        assert_eq!(g[i], want, "element {i}");
    }
    assert_eq!(update(&Term::none()), g0);
}

/// The device chain as one closure, built once and run for N steps with nothing new from the
/// host (burn's `capture`, which on flex runs it 3 times to warm up and once more in place of a
/// recording, then `replay`), against its formulas (`common::reference`) run step by step with
/// each step's context: a learning rate that decays every step and differs between the rows, a row that
/// stops early, FedCM's factor `k/(l·K)` that follows the learning rate, AMSGrad's moments and
/// the trust ratio. The gradient is a function of the parameters computed inside the closure.
/// A step that took any of these from the host when the closure was made would repeat it.
#[test]
fn the_device_chain_replays_as_one_closure_with_nothing_from_the_host() {
    let dev = Device::flex();
    let n = 1200;
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
        let mut chain = DeviceChain::new(&plans, &a, base, &ranges, &plan, &dev);
        let mut xt = stack(&[&xs[0], &xs[1]], &ranges, &dev);
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
            let mut host = reference::Chain::new(term.clone(), &xs[k], base, &rule);
            let mut x = xs[k].clone();
            for s in (0..steps).filter(|&s| plan.active[s][k]) {
                let mut g = row(&[grad_at(stack(&[&x], &one_tensor(n), &dev).remove(0))], 0);
                host.step(&mut x, &mut g, &[], &plan.ctx[s][k]);
            }
            let xk = row(xt, k);
            if case == "fedlamb" {
                // the trust ratio's norms: f32 row sums on the device, f64 in the formulas
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
fn decaying(steps: usize) -> StepPlan {
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
