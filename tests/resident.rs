//! The device-resident local step (`run.local_step = "device"`) against the host step: the
//! same algorithm terms, chain and update as tensor ops give the same runs to float rounding.
//! On flex both run on the CPU, so this runs everywhere; `tests/wgpu.rs` runs it on a GPU
//! backend.

mod common;

use burn::tensor::{Device, Tensor, TensorData};
use common::{TempDir, columns, synthetic_spec};
use fedrun::fl::client::{ClipDecay, DeviceChain, HostChain};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::fl::plan::Rule;
use fedrun::fl::term::Term;
use fedrun::metrics::summary::Status;
use fedrun::optim::{Ctx, RowFactor};

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

/// Every algorithm whose local step is SGD after the chain, with its term switched on and
/// clipping active, trains alike with host and device steps.
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
    ];
    for &(alg, keys) in cases {
        for nar in [false, true] {
            let mut set: Vec<String> = vec![
                format!("fl.algorithm=\"{alg}\""),
                format!("local.nar={nar}"),
                "local.max_norm=0.5".into(),
                "fl.rounds=3".into(),
            ];
            set.extend(keys.iter().map(|k| k.to_string()));
            let tag = format!("{alg}_{nar}");
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

/// An algorithm with its own update rule keeps the host step: `device` changes nothing.
#[test]
fn an_algorithm_with_its_own_rule_steps_on_the_host() {
    let d = TempDir::new("resident-rule");
    let set = vec!["fl.algorithm=\"fedlamb\"".to_string()];
    let mut dev = set.clone();
    dev.push("run.local_step=\"device\"".into());
    let a = run_with(&d, "host", &set);
    let b = run_with(&d, "device", &dev);
    let strip = |r: &Vec<Vec<f64>>| -> Vec<Vec<u64>> {
        r.iter()
            .map(|row| row[..row.len() - 1].iter().map(|v| v.to_bits()).collect())
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
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
            let device =
                DeviceChain::new(&[(&term, &rule)], &[&anchor], base, &ranges, &dev).unwrap();
            let mut xt = split(&x0, &cuts, &dev);
            let mut gt = split(&g0, &cuts, &dev);
            let c = [Ctx { lr: 0.1, ..ctx }];
            let norm = device
                .step(&mut xt, &mut gt, &c, &RowFactor::One(0.1))
                .unwrap();
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
/// clips; a row with rate 0 (a client past its last step) stays as it is.
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
        let chain = DeviceChain::new(&plans, &a, base, &ranges, &dev).unwrap();
        let mut xt = stack(&[&xs[0], &xs[1], &xs[2]], &cuts, &dev);
        let mut gt = stack(&[&gs[0], &gs[1], &gs[2]], &cuts, &dev);
        let ctx: Vec<Ctx> = rates
            .iter()
            .map(|&r| Ctx {
                lr: f64::from(r),
                ..Ctx::default()
            })
            .collect();
        let norms = chain
            .step(&mut xt, &mut gt, &ctx, &RowFactor::new(&rates, &dev))
            .unwrap();
        let norms = norms
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .unwrap();
        let mut clipped = 0;
        for k in 0..2 {
            let alone = DeviceChain::new(&plans[k..=k], &a[k..=k], base, &ranges, &dev).unwrap();
            let mut x1 = split(&xs[k], &cuts, &dev);
            let mut g1 = split(&gs[k], &cuts, &dev);
            let n1 = alone.step(&mut x1, &mut g1, &ctx[k..=k], &RowFactor::One(rates[k]));
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
        assert_eq!(row(&xt, 2), xs[2], "nar {nar}: the row at rate 0 moved");
    }
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
