//! The quantized uplink (FedPAQ): the quantizer's statistics and bit count, and runs with it.

mod common;

use common::{TempDir, synthetic_spec};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;
use fedrun::rng::Rng;

/// FedPAQ's quantizer: unbiased over many draws, within ‖x‖/s of x per coordinate, 0 for 0,
/// and its bit count.
#[test]
fn the_uplink_quantizer_is_unbiased_and_fine_with_many_levels() {
    use fedrun::optim::quantize::{bits, quantize};
    let mut rng = Rng::from_seed(11);
    let x: Vec<f32> = (0..50).map(|_| rng.normal() as f32).collect();
    let norm = fedrun::optim::global_norm(&x) as f32;
    let mut q = vec![0f32; x.len()];
    for s in [1usize, 4] {
        let draws = 20_000;
        let mut mean = vec![0f64; x.len()];
        for _ in 0..draws {
            quantize(&x, s, &mut rng, &mut q);
            // every coordinate is a level of ‖x‖/s with x's sign
            for (v, xi) in q.iter().zip(&x) {
                let level = v.abs() * s as f32 / norm;
                assert!((level - level.round()).abs() < 1e-3 && v * xi >= 0.0);
            }
            mean.iter_mut()
                .zip(&q)
                .for_each(|(m, v)| *m += *v as f64 / draws as f64);
        }
        // the standard deviation of one draw is at most ‖x‖/(2s): the mean's is 1/√draws of it
        let tol = 5.0 * norm as f64 / (2.0 * s as f64) / (draws as f64).sqrt();
        for (m, xi) in mean.iter().zip(&x) {
            assert!((m - *xi as f64).abs() < tol, "s {s}: {m} vs {xi}");
        }
    }
    quantize(&x, 1 << 24, &mut rng, &mut q);
    for (v, xi) in q.iter().zip(&x) {
        assert!((v - xi).abs() <= norm / (1 << 24) as f32 * 1.01 + 1e-6);
    }
    quantize(&[0.0; 3], 4, &mut rng, &mut q[..3]);
    assert_eq!(&q[..3], &[0.0; 3]);
    // 32 bits per norm, a sign and ⌈log2(s + 1)⌉ level bits per coordinate
    assert_eq!(bits(1000, 1, 1), 32 + 1000 * 2);
    assert_eq!(bits(1000, 10, 15), 320 + 1000 * 5);
}

/// The synthetic spec with `sets`, run as `name` into `out`.
fn run_synthetic(
    out: &std::path::Path,
    name: &str,
    sets: &[&str],
) -> fedrun::error::Result<Status> {
    let mut all = vec![format!("run.name=\"{name}\"")];
    all.extend(sets.iter().map(|s| s.to_string()));
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &all).unwrap();
    let opts = RunOptions {
        out: out.to_path_buf(),
        ..Default::default()
    };
    run(&spec, &opts).map(|s| s.status)
}

/// FedPAQ = FedAvg with a quantized uplink: levels 0 is FedAvg bitwise, a quantized run differs
/// and is reproducible, per vector or per tensor.
#[test]
fn a_quantized_uplink_runs_reproducibly_and_off_is_fedavg() {
    let d = TempDir::new("fedpaq");
    let csv = |name: &str, sets: &[&str]| {
        assert_eq!(
            run_synthetic(d.path(), name, sets).unwrap(),
            Status::Complete
        );
        let text = std::fs::read_to_string(d.path().join(name).join("rounds.csv")).unwrap();
        // without the elapsed-time column
        text.lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string())
            .collect::<Vec<_>>()
    };
    let fedavg = csv("avg", &[]);
    assert_eq!(fedavg, csv("off", &["fl.uplink_levels=0"]));
    let paq = csv("paq", &["fl.uplink_levels=2"]);
    assert_ne!(paq, fedavg);
    assert_eq!(paq, csv("paq2", &["fl.uplink_levels=2"]));
    let tensor = csv(
        "paqt",
        &["fl.uplink_levels=2", "fl.uplink_scope=\"tensor\""],
    );
    assert_ne!(tensor, paq);
}

/// `fl.uplink_scope = "conv"` (the form of FedACG's repository's pull request #3): one norm per
/// convolution weight, every other tensor sent exact. The bytes a client sends are the
/// convolutions' bits and 4 a value of the rest; the run differs from the exact one and from the
/// per-tensor one; a model with no convolution is refused, naming the key.
#[test]
fn a_conv_scope_quantizes_the_convolution_weights_alone() {
    use fedrun::config::{ModelKind, ModelSpec};
    use fedrun::model::{Model, Shape};
    use fedrun::optim::quantize::bits;
    let d = TempDir::new("fedpaq_conv");
    let run_with = |name: &str, sets: &[&str]| {
        run_synthetic(d.path(), name, sets)
            .map(|_| common::columns(&d.path().join(name).join("rounds.csv")))
    };
    let spec = ModelSpec {
        kind: ModelKind::TinyCnn,
        ..ModelSpec::default()
    };
    let shape = Shape {
        channels: 3,
        side: 32,
        classes: 10,
    };
    let layout = Model::build(&spec, shape, fedrun::kernels::Kernels::Fedrun)
        .unwrap()
        .layout()
        .clone();
    let convs = layout.conv_weights();
    let quantized: usize = convs.iter().map(|r| r.len()).sum();
    assert!(!convs.is_empty() && quantized < layout.total);
    assert!(convs.iter().all(|r| {
        layout
            .tensors
            .iter()
            .any(|t| t.range() == *r && t.shape.len() == 4 && t.path().ends_with("weight"))
    }));
    let up = (bits(quantized, convs.len(), 15).div_ceil(8) + 4 * (layout.total - quantized) as u64)
        as f64;
    let conv = run_with("conv", &["fl.uplink_levels=15", "fl.uplink_scope=\"conv\""]).unwrap();
    // two clients a round (up_bytes is the 13th column)
    assert!(conv.iter().all(|row| row[12] == 2.0 * up), "{conv:?}");
    let exact = run_with("exact", &[]).unwrap();
    let tensor = run_with(
        "tensor",
        &["fl.uplink_levels=15", "fl.uplink_scope=\"tensor\""],
    );
    let loss = |rows: &[Vec<f64>]| rows.iter().map(|r| r[3]).collect::<Vec<_>>();
    assert_ne!(loss(&conv), loss(&exact));
    assert_ne!(loss(&conv), loss(&tensor.unwrap()));
    // with 2^24 levels the convolutions arrive within 1e-7 of their norm, and the rest exact
    let fine = ["fl.uplink_levels=16777216", "fl.uplink_scope=\"conv\""];
    let fine = run_with("fine", &fine).unwrap();
    for (f, e) in loss(&fine).iter().zip(loss(&exact)) {
        assert!((f - e).abs() <= 1e-5 * e.abs(), "{f} vs {e}");
    }
    let err = run_with(
        "mlp",
        &[
            "model.kind=\"mlp\"",
            "fl.uplink_levels=15",
            "fl.uplink_scope=\"conv\"",
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("fl.uplink_scope") && err.contains("mlp"),
        "{err}"
    );
}
