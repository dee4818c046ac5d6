//! The GPU code path, run for real: two rounds of a small model on `run.backend = "wgpu"` (with
//! the device-resident local step, wgpu's default, and with the host step) and on flex, whose
//! CSV columns must agree to a tolerance. Built with `--features wgpu`. On a
//! machine without a GPU, Mesa's software Vulkan driver (lavapipe, Debian's
//! `mesa-vulkan-drivers`) runs it on the CPU; `.ci/run` installs it. Without any Vulkan adapter
//! the test says it was skipped, unless `FEDRUN_REQUIRE_WGPU` is set (CI sets it).
#![cfg(feature = "wgpu")]

mod common;

use common::{TempDir, columns, synthetic_spec};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;

#[test]
fn wgpu_and_flex_train_alike() {
    if let Err(e) = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu) {
        if std::env::var_os("FEDRUN_REQUIRE_WGPU").is_some() {
            panic!("FEDRUN_REQUIRE_WGPU is set but wgpu has no adapter: {e}");
        }
        eprintln!("skipped: no usable wgpu adapter ({e})");
        return;
    }
    let d = TempDir::new("wgpu");
    let mut rows = Vec::new();
    let runs = [("flex", "auto"), ("wgpu", "device"), ("wgpu", "host")];
    for (backend, step) in runs {
        let spec = fedrun::schema::parse(
            &synthetic_spec(""),
            "t",
            &[
                format!("run.backend=\"{backend}\""),
                format!("run.local_step=\"{step}\""),
                format!("run.name=\"{backend}_{step}\""),
                "data.augmentation=\"none\"".into(),
                "local.max_norm=0.5".into(),
            ],
        )
        .unwrap();
        let opts = RunOptions {
            out: d.path().to_path_buf(),
            ..Default::default()
        };
        let s = run(&spec, &opts).unwrap();
        assert_eq!(s.status, Status::Complete, "{backend}: {}", s.message);
        rows.push(columns(
            &d.path()
                .join(format!("{backend}_{step}"))
                .join("rounds.csv"),
        ));
    }
    let header: Vec<&str> = fedrun::metrics::csv::HEADER.split(',').collect();
    for (k, other) in rows.iter().enumerate().skip(1) {
        let (backend, step) = runs[k];
        for (r, (a, b)) in rows[0].iter().zip(other).enumerate() {
            // test_loss, train_loss, mean_clip_norm, update_norm: float rounding only
            for name in ["test_loss", "train_loss", "mean_clip_norm", "update_norm"] {
                let c = header.iter().position(|h| *h == name).unwrap();
                let (x, y) = (a[c], b[c]);
                assert!(
                    (x - y).abs() <= 1e-3 * x.abs().max(1.0),
                    "round {r}, {name}: flex {x} vs {backend} with the {step} step {y}"
                );
            }
        }
    }
}
