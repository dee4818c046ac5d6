//! The GPU code path, run for real: two rounds of a small model on each GPU backend compiled in
//! (`run.backend = "wgpu"` with `--features wgpu`, `"vulkan"` with `--features vulkan`), with
//! the device-resident local step (the GPU default) and with the host step, and on flex, whose
//! CSV columns must agree to a tolerance. On a machine without a GPU, Mesa's software Vulkan
//! driver (lavapipe, Debian's `mesa-vulkan-drivers`) runs `wgpu` on the CPU; `.ci/run` installs
//! it. (The `vulkan` backend's SPIR-V kernels crash the lavapipe of Debian 12, Mesa 22.3, so
//! CI builds only `wgpu`; `scripts/gpu_check.sh` runs the same agreement on a real GPU.) Without
//! any Vulkan adapter the test says it was skipped, unless `FEDRUN_REQUIRE_WGPU` is set (CI
//! sets it).
#![cfg(any(feature = "wgpu", feature = "vulkan"))]

mod common;

use common::{TempDir, columns, synthetic_spec};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;

#[test]
fn gpu_backends_and_flex_train_alike() {
    use fedrun::config::Backend;
    for backend in fedrun::fl::engine::compiled_backends() {
        if backend != Backend::Flex {
            agree_with_flex(backend);
        }
    }
}

fn agree_with_flex(gpu: fedrun::config::Backend) {
    if let Err(e) = fedrun::fl::engine::devices(gpu) {
        if std::env::var_os("FEDRUN_REQUIRE_WGPU").is_some() {
            panic!("FEDRUN_REQUIRE_WGPU is set but {gpu} has no adapter: {e}");
        }
        eprintln!("skipped: no usable {gpu} adapter ({e})");
        return;
    }
    let gpu = gpu.to_string();
    let d = TempDir::new("wgpu");
    let mut rows = Vec::new();
    let runs = [("flex", "auto"), (&gpu[..], "device"), (&gpu[..], "host")];
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
