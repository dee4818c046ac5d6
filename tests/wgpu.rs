//! The GPU code path, run for real: two rounds of a small model on each GPU backend compiled in
//! (`run.backend = "wgpu"` with `--features wgpu`, `"vulkan"` with `--features vulkan`) and on
//! flex, whose CSV columns must agree to a tolerance. On a machine without a GPU, Mesa's software Vulkan
//! driver (lavapipe, Debian's `mesa-vulkan-drivers`) runs `wgpu` on the CPU; `.ci/run` installs
//! it. (The `vulkan` backend's SPIR-V kernels crash the lavapipe of Debian 12, Mesa 22.3, and
//! `cuda` needs an NVIDIA GPU, so CI runs only `wgpu`; their tests are ignored with why, and
//! `scripts/gpu_check.sh` runs the same agreement on a real GPU.) Without a Vulkan adapter the
//! `wgpu` test fails and says what to install.
#![cfg(any(feature = "wgpu", feature = "vulkan", feature = "cuda"))]

mod common;

use common::{TempDir, columns, synthetic_spec};
use fedrun::fl::engine::{RunOptions, run};
use fedrun::metrics::summary::Status;

/// `wgpu` (WGSL kernels) on whatever Vulkan adapter there is: on a machine without a GPU, Mesa's
/// lavapipe, which `.ci/run` installs. Without an adapter the test fails and says what to
/// install: it never passes having run nothing.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn wgpu_and_flex_train_alike() {
    agree_with_flex(fedrun::config::Backend::Wgpu);
}

/// With `vulkan` in the build, `wgpu` runs burn's SPIR-V kernels too, which crash the lavapipe of
/// Debian 12 (Mesa 22.3): a real GPU runs these (`scripts/gpu_check.sh` runs the same agreement).
#[test]
#[cfg(feature = "vulkan")]
#[ignore = "needs a GPU with a Vulkan driver: SPIR-V kernels crash Debian 12's lavapipe; scripts/gpu_check.sh runs it on a GPU machine"]
fn vulkan_and_flex_train_alike() {
    agree_with_flex(fedrun::config::Backend::Wgpu);
    agree_with_flex(fedrun::config::Backend::Vulkan);
}

/// `cuda` needs an NVIDIA GPU with its driver and NVRTC. With TF32 its numbers drift from flex's
/// by about 1e-3 to 1e-2 (docs/PERFORMANCE.md): this test turns it off for the convolutions
/// (`run.tf32_conv = false`; products are f32 by default) and holds it to 1e-3 as the others.
#[test]
#[cfg(feature = "cuda")]
#[ignore = "needs an NVIDIA GPU with its driver and NVRTC; scripts/gpu_check.sh runs it on a GPU machine"]
fn cuda_and_flex_train_alike() {
    agree_with(fedrun::config::Backend::Cuda, &["run.tf32_conv=false"]);
}

/// Every kernel of fedrun's own, defined as one of its launches defines it on an H100, is
/// written as CUDA C++ by cubecl's CUDA dialect: no GPU needed, so a kernel the dialect cannot
/// write fails here, not in a GPU machine's minutes.
#[test]
#[cfg(feature = "cuda")]
fn fedruns_own_kernels_are_written_as_cuda_cpp() {
    let sources = fedrun::kernels::cuda_source::cuda_sources();
    let names: std::collections::BTreeSet<_> = sources.iter().map(|s| s.kernel.clone()).collect();
    // the columns and their adjoint, the gather (two index types), the LSTM layer both ways
    // (each with one sequence a cube and eight: one name, two definitions), the mask,
    // GroupNorm's three (each with and without the ReLU)
    assert_eq!(sources.len(), 15, "kernels: {names:?}");
    assert_eq!(names.len(), 10, "one name a kernel and type: {names:?}");
    // and no kernel of src/ is left out: each `#[cube(launch…)]` function is among them
    let launched =
        cube_launch_functions(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let defined: std::collections::BTreeSet<String> = sources
        .iter()
        .filter_map(|s| s.kernel.split('<').next()?.rsplit("::").nth(1))
        .map(str::to_string)
        .collect();
    assert!(!launched.is_empty(), "no `#[cube(launch` found under src/");
    assert_eq!(
        launched, defined,
        "src/'s launched kernels against those defined for CUDA"
    );
    for s in &sources {
        let src = s
            .source
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", s.kernel));
        assert!(
            src.contains("__global__"),
            "{}: no CUDA entry point in\n{src}",
            s.kernel
        );
        // FEDRUN_CUDA_SOURCES=DIR keeps each source, to read
        if let Some(dir) = std::env::var_os("FEDRUN_CUDA_SOURCES") {
            let name: String = s.kernel.chars().filter(|c| c.is_alphanumeric()).collect();
            let path = std::path::Path::new(&dir).join(format!("{name}-{}.cu", src.len()));
            std::fs::write(&path, src).expect("FEDRUN_CUDA_SOURCES is a writable folder");
        }
    }
}

/// The name of every function under `dir` that carries `#[cube(launch…)]`.
#[cfg(feature = "cuda")]
fn cube_launch_functions(dir: std::path::PathBuf) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            names.extend(cube_launch_functions(path));
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut after_attr = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[cube(launch") {
                after_attr = true;
            } else if after_attr && let Some(rest) = line.strip_prefix("fn ") {
                let end = rest.find(['<', '(']).unwrap_or(rest.len());
                names.insert(rest[..end].to_string());
                after_attr = false;
            }
        }
    }
    names
}

/// The same sources compiled to PTX for sm_90a by NVRTC, as cubecl-cuda compiles them on a
/// Hopper GPU. NVRTC is a library of CUDA's toolkit and needs no GPU: with pip's
/// `nvidia-cuda-nvrtc-cu12` and `nvidia-cuda-runtime-cu12` (the headers), run
/// `LD_LIBRARY_PATH=.../nvidia/cuda_nvrtc/lib FEDRUN_CUDA_INCLUDE=.../nvidia/cuda_runtime/include
/// cargo test --profile ci --features wgpu,cuda,fusion --test wgpu -- --ignored nvrtc`.
#[test]
#[cfg(feature = "cuda")]
#[ignore = "needs NVRTC (libnvrtc.so.12 on the loader's path) and CUDA's headers (FEDRUN_CUDA_INCLUDE)"]
fn fedruns_own_kernels_compile_to_ptx_with_nvrtc() {
    use fedrun::kernels::cuda_source::{cuda_sources, nvrtc_present, nvrtc_ptx};
    assert!(
        nvrtc_present(),
        "NVRTC's library is not on the loader's path"
    );
    let include = std::env::var_os("FEDRUN_CUDA_INCLUDE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("CUDA_PATH").map(|p| std::path::Path::new(&p).join("include")))
        .expect("FEDRUN_CUDA_INCLUDE (or CUDA_PATH) names CUDA's headers");
    // NVRTC refuses what is not CUDA (so a pass below is NVRTC's word on each kernel)
    let bad = "extern \"C\" __global__ void k(float* a) { a[threadIdx.x] = undeclared; }";
    assert!(
        nvrtc_ptx(bad, &include).is_err(),
        "NVRTC took a kernel with an undeclared name"
    );
    let failed: Vec<String> = cuda_sources()
        .into_iter()
        .filter_map(|s| {
            let src = s.source.expect("written as CUDA C++");
            match nvrtc_ptx(&src, &include) {
                Ok(bytes) if bytes > 0 => None,
                Ok(_) => Some(format!("{}: empty PTX", s.kernel)),
                Err(log) => Some(format!("{}: {log}\n{src}", s.kernel)),
            }
        })
        .collect();
    assert!(failed.is_empty(), "NVRTC refused:\n{}", failed.join("\n\n"));
}

fn agree_with_flex(gpu: fedrun::config::Backend) {
    agree_with(gpu, &[]);
}

/// Two rounds on flex and on `gpu` (with `extra` keys set on the GPU) agree to 1e-3.
fn agree_with(gpu: fedrun::config::Backend, extra: &[&str]) {
    if let Err(e) = fedrun::fl::engine::devices(gpu) {
        panic!("{gpu} cannot run here: {e}");
    }
    let gpu = gpu.to_string();
    let d = TempDir::new("wgpu");
    let mut rows = Vec::new();
    let runs = ["flex", &gpu[..]];
    for backend in runs {
        let spec = fedrun::schema::parse(
            &synthetic_spec(""),
            "t",
            &[
                format!("run.backend=\"{backend}\""),
                format!("run.name=\"{backend}\""),
                "data.augmentation=\"none\"".into(),
                "local.max_norm=0.5".into(),
            ]
            .into_iter()
            .chain(
                extra
                    .iter()
                    .filter(|_| backend != "flex")
                    .map(|k| k.to_string()),
            )
            .collect::<Vec<_>>(),
        )
        .unwrap();
        let opts = RunOptions {
            out: d.path().to_path_buf(),
            ..Default::default()
        };
        let s = run(&spec, &opts).unwrap();
        assert_eq!(s.status, Status::Complete, "{backend}: {}", s.message);
        rows.push(columns(&d.path().join(backend).join("rounds.csv")));
    }
    let header: Vec<&str> = fedrun::metrics::csv::HEADER.split(',').collect();
    for (k, other) in rows.iter().enumerate().skip(1) {
        let backend = runs[k];
        for (r, (a, b)) in rows[0].iter().zip(other).enumerate() {
            // test_loss, train_loss, mean_clip_norm, update_norm: float rounding only
            for name in ["test_loss", "train_loss", "mean_clip_norm", "update_norm"] {
                let c = header.iter().position(|h| *h == name).unwrap();
                let (x, y) = (a[c], b[c]);
                assert!(
                    (x - y).abs() <= 1e-3 * x.abs().max(1.0),
                    "round {r}, {name}: flex {x} vs {backend} {y}"
                );
            }
        }
    }
}

/// The cohort step on the GPU backend (lavapipe in CI): two rounds of the MLP and of the small
/// CNN (its convolutions grouped, one group per client) with every round's clients as one
/// cohort agree with one client at a time on the same backend.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn wgpu_cohort_trains_as_one_client_at_a_time() {
    for model in ["mlp", "tiny-cnn"] {
        let sets = [
            format!("model.kind=\"{model}\""),
            "data.augmentation=\"none\"".into(),
        ];
        cohort_agrees_on_wgpu(&synthetic_spec(""), &sets);
    }
}

/// The character models' stacked forms on the GPU backend (the LSTM's gates and the
/// transformer's attention as batched products, the tables gathered with per-client offsets):
/// two rounds of the quickstart's Shakespeare clients with the device-resident cohort agree
/// with one client at a time. The test split is cut to 5 sequences a client: its evaluation, the
/// same global model's either way, took most of this test's time on lavapipe at 20 (the LSTM's
/// recurrence over 400 sequences 4–5 s a layer).
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn wgpu_character_cohorts_train_as_one_client_at_a_time() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/quickstart.toml"),
    )
    .unwrap();
    for model in ["lstm-small", "transformer"] {
        let sets = [
            format!("model.kind=\"{model}\""),
            "fl.rounds=2".into(),
            "local.steps=2".into(),
            "local.batch_size=4".into(),
            "data.crop_test=5".into(),
        ];
        cohort_agrees_on_wgpu(&base, &sets);
    }
}

/// Every model's K copies on the GPU backend (lavapipe in CI) compute each copy's logits and
/// gradient as the copy alone, with fedrun's GPU kernels (its convolution rule, LSTM layer and
/// GroupNorm): the batched products, the norms of 2K groups and the dropout models' per-copy
/// masks (each copy's own stream, the same alone and beside the others). Together with the
/// training runs above, what makes a cohort train each client as alone on every model.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn every_model_computes_each_copy_as_alone_on_wgpu_with_fedruns_kernels() {
    every_model_on_wgpu(fedrun::kernels::Kernels::Fedrun);
}

/// The same with burn's ops (`run.kernels = "burn"`): its grouped convolutions, norms and
/// products. (Two tests, not one, so that the two halves run side by side: one took 218 s.)
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn every_model_computes_each_copy_as_alone_on_wgpu_with_burns_ops() {
    every_model_on_wgpu(fedrun::kernels::Kernels::Burn);
}

#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn every_model_on_wgpu(kernels: fedrun::kernels::Kernels) {
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    common::stacked::every_model(&dev, kernels, 1e-4);
}

/// Two rounds of `base` with `sets` on wgpu, FedProx over 3 clients a round, one at a time and
/// as one cohort: the same losses and update norms to 1e-4.
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn cohort_agrees_on_wgpu(base: &str, sets: &[String]) {
    let backend = fedrun::config::Backend::Wgpu;
    if let Err(e) = fedrun::fl::engine::devices(backend) {
        panic!("{backend} cannot run here: {e}");
    }
    let d = TempDir::new("wgpu-cohort");
    let rows: Vec<Vec<Vec<f64>>> = [1, 3]
        .iter()
        .map(|k| {
            let mut set = vec![
                "run.backend=\"wgpu\"".to_string(),
                "fl.clients_per_round=3".into(),
                "fl.algorithm=\"fedprox\"".into(),
                format!("run.cohort={k}"),
                format!("run.name=\"k{k}\""),
            ];
            set.extend_from_slice(sets);
            let spec = fedrun::schema::parse(base, "t", &set).unwrap();
            let opts = RunOptions {
                out: d.path().to_path_buf(),
                ..Default::default()
            };
            let s = run(&spec, &opts).unwrap();
            assert_eq!(s.status, Status::Complete, "cohort {k}: {}", s.message);
            columns(&d.path().join(format!("k{k}")).join("rounds.csv"))
        })
        .collect();
    let header: Vec<&str> = fedrun::metrics::csv::HEADER.split(',').collect();
    assert_eq!(rows[0].len(), 2, "two rounds");
    for (r, (a, b)) in rows[0].iter().zip(&rows[1]).enumerate() {
        for name in ["test_loss", "train_loss", "update_norm"] {
            let c = header.iter().position(|h| *h == name).unwrap();
            let (x, y) = (a[c], b[c]);
            assert!(
                (x - y).abs() <= 1e-4 * x.abs().max(1.0),
                "{sets:?}, round {r}, {name}: one at a time {x} vs the cohort {y}"
            );
        }
    }
}

/// Each row's sum over long rows on the GPU backend (a cohort's clip norms): `row_sums`
/// agrees with the host's sums in f64 (positive values, as a norm's squares), over rows of a
/// piece, of many pieces, and of a prime length (padded); burn's one-axis `sum_dim` got the
/// long rows wrong on lavapipe.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn row_sums_are_right_over_long_rows() {
    use burn::tensor::{Tensor, TensorData};
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    for n in [4000usize, 614_400, 1_000_003] {
        let v: Vec<f32> = (0..3 * n).map(|i| ((i * 37 % 101) as f32) / 40.0).collect();
        let t = Tensor::<2>::from_data(TensorData::new(v.clone(), [3, n]), &dev);
        let got = fedrun::optim::row_sums(t)
            .into_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .unwrap();
        for (k, row) in v.chunks(n).enumerate() {
            let want: f64 = row.iter().map(|&x| f64::from(x)).sum();
            let g = f64::from(got[k]);
            assert!(
                (g - want).abs() <= 1e-4 * want.abs().max(1.0),
                "row {k} of {n}: {g} vs {want}"
            );
        }
    }
}

/// The K copies' dropout mask drawn on the GPU backend (a kernel reading each copy's seed from a
/// tensor) is flex's, bit for bit: the hash's u32 arithmetic, the copies side by side along an
/// inner axis, and over 2^16 elements.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_gpu_dropout_mask_is_flexs() {
    use burn::tensor::{Device, Tensor, TensorData};
    use fedrun::kernels::ext_mask::quarters;
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    let seeds = [0xfedc_ba98_7654_3210u64, 7, 1 << 40];
    let q: Vec<f32> = seeds.iter().flat_map(|&s| quarters(s)).collect();
    for (shape, axis) in [([5, 3 * 16, 33, 31], 1), ([3 * 2, 40, 30, 30], 0)] {
        for prob in [0.1, 0.5] {
            let mask = |d: &Device| {
                let like = Tensor::<4>::zeros(shape, d);
                let st = Tensor::<2>::from_data(TensorData::new(q.clone(), [3, 4]), d);
                fedrun::kernels::dropout_mask(&like, st, axis, prob)
                    .into_data()
                    .convert::<f32>()
                    .try_to_vec::<f32>()
                    .unwrap()
            };
            let (gpu, flex) = (mask(&dev), mask(&Device::flex()));
            let differ = gpu.iter().zip(&flex).filter(|(a, b)| a != b).count();
            assert!(
                differ == 0,
                "{shape:?} axis {axis}, p {prob}: {differ} values differ"
            );
        }
    }
}

/// The K copies' convolution as batched products (a cohort's convolutions on the GPU backends)
/// is burn's grouped convolution on lavapipe, value and gradients.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_copies_convolution_as_batched_products_is_the_grouped_convolution_on_wgpu() {
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    common::conv_copies::check(&dev.autodiff(), 1e-4);
}

/// The copies' columns and their adjoint (one kernel each on a GPU backend) give flex's values
/// bit for bit on lavapipe: the columns are copies, and each input value's gradient sums its
/// columns in the same order (by kernel position) on both.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_copies_columns_and_their_adjoint_are_flexs_bit_for_bit_on_wgpu() {
    use burn::tensor::Device;
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    for case in common::conv_copies::column_cases() {
        let (d0, c0, g0) =
            common::conv_copies::columns_and_adjoint(&Device::flex().autodiff(), &case);
        let (d1, c1, g1) = common::conv_copies::columns_and_adjoint(&dev.clone().autodiff(), &case);
        assert_eq!(d1, d0, "{case:?}: the columns' shape");
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert!(bits(&c1) == bits(&c0), "{case:?}: the columns differ");
        let differ = g1
            .iter()
            .zip(&g0)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            differ, 0,
            "{case:?}: {differ} of the adjoint's values differ"
        );
    }
}

/// fedrun's convolution rule on a GPU backend gives burn's convolution's output and its three
/// gradients: a padded and a strided 3×3 layer, a first layer of three channels with a 5×5
/// "same" kernel, and a layer whose columns take two chunks of samples. On lavapipe (f32, no
/// tensor-core product) the rule's weight gradient is the products over the samples
/// (`gpu_wgrad.rs`), which the count proves; a column gathered from the wrong position, a sum
/// over the wrong axis, a lost padding or a lost chunk fails it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_gpu_convolution_rule_is_burns_convolution() {
    use burn::backend::ops::ConvOptions;
    use burn::tensor::{Distribution, Tensor};
    use fedrun::kernels::{Kernels, conv2d_of, weight_grads_as_products};
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    // the largest difference, relative to the reference's largest value (at least 1), on the
    // host, where no device reduction over many values is trusted (wgpu's OpenGL fallback sees
    // only the first 262,132)
    let diff = |a: Tensor<4>, b: Tensor<4>| {
        let v = |t: Tensor<4>| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
        let (a, b) = (v(a), v(b));
        let scale = b.iter().fold(1f32, |m, x| m.max(x.abs()));
        let worst = a
            .iter()
            .zip(&b)
            .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        worst / scale
    };
    let normal = || Distribution::Normal(0.0, 1.0);
    let before = weight_grads_as_products();
    // (input, weight, stride, padding); the last: 16·25·96·96 floats of columns a sample, four
    // samples a chunk
    let layers = [
        ([3, 4, 9, 9], [6, 4, 3, 3], 1, 1),
        ([3, 4, 9, 9], [6, 4, 3, 3], 2, 0),
        ([2, 3, 11, 10], [5, 3, 5, 5], 1, 2),
        ([5, 16, 96, 96], [8, 16, 5, 5], 1, 2),
    ];
    for (xs, ws, stride, pad) in layers {
        let x = Tensor::<4>::random(xs, normal(), &dev).require_grad();
        let w = Tensor::<4>::random(ws, normal(), &dev).require_grad();
        let b = Tensor::<1>::random([ws[0]], normal(), &dev).require_grad();
        let o = ConvOptions::new([stride, stride], [pad, pad], [1, 1], 1);
        let ys: Vec<Tensor<4>> = [Kernels::Fedrun, Kernels::Burn]
            .into_iter()
            .map(|k| conv2d_of(x.clone(), w.clone(), Some(b.clone()), o.clone(), k))
            .collect();
        let at = format!("{xs:?} * {ws:?}, stride {stride}, padding {pad}");
        assert!(
            diff(ys[0].clone(), ys[1].clone()) < 1e-4,
            "{at}: the output"
        );
        let weight = Tensor::<4>::random(ys[0].dims(), normal(), &dev);
        let g: Vec<_> = ys
            .iter()
            .map(|y| (y.clone() * weight.clone()).sum().backward())
            .collect();
        let (gx, gw) = (
            |i: usize| x.grad(&g[i]).unwrap(),
            |i: usize| w.grad(&g[i]).unwrap(),
        );
        assert!(diff(gx(0), gx(1)) < 1e-4, "{at}: the input's gradient");
        assert!(diff(gw(0), gw(1)) < 1e-4, "{at}: the weight's gradient");
        let (b0, b1) = (b.grad(&g[0]).unwrap(), b.grad(&g[1]).unwrap());
        let db = diff(b0.reshape([1, 1, 1, ws[0]]), b1.reshape([1, 1, 1, ws[0]]));
        assert!(db < 1e-4, "{at}: the bias's gradient ({db})");
    }
    assert!(
        weight_grads_as_products() >= before + layers.len(),
        "lavapipe has no tensor-core product: each weight gradient is the products'"
    );
}

/// The norm with the batch's statistics (LEAF's CelebA CNN) on a GPU backend, whose means sum
/// each map first, gives flex's output and three gradients on the same values, over maps of an
/// odd side; a mean over the wrong axes or count fails it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_gpu_batch_statistics_norm_is_flexs() {
    use burn::tensor::{Distribution, Tensor, TensorData};
    use fedrun::kernels::batch_stat_norm;
    let gpu = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    let flex = fedrun::fl::engine::devices(fedrun::config::Backend::Flex)
        .unwrap()
        .0;
    let (n, c, side) = (4, 6, 11);
    let data = |shape: Vec<usize>, m: f64, s: f64| {
        let t = Tensor::<1>::random(
            [shape.iter().product::<usize>()],
            Distribution::Normal(m, s),
            &flex,
        );
        (t.into_data(), shape)
    };
    let (x, gamma, beta, weight) = (
        data(vec![n, c, side, side], 0.5, 2.0),
        data(vec![c], 1.0, 0.5),
        data(vec![c], 0.0, 0.5),
        data(vec![n, c, side, side], 0.0, 1.0),
    );
    let on = |dev: &burn::tensor::Device| -> Vec<Vec<f32>> {
        let t4 = |(d, s): &(TensorData, Vec<usize>)| {
            Tensor::<1>::from_data(d.clone(), dev).reshape([s[0], s[1], s[2], s[3]])
        };
        let t1 = |(d, _): &(TensorData, Vec<usize>)| Tensor::<1>::from_data(d.clone(), dev);
        let (x, g, b) = (
            t4(&x).require_grad(),
            t1(&gamma).require_grad(),
            t1(&beta).require_grad(),
        );
        let y = batch_stat_norm(x.clone(), g.clone(), b.clone(), 1e-3);
        let grads = (y.clone() * t4(&weight)).sum().backward();
        let v = |d: TensorData| d.convert::<f32>().try_to_vec::<f32>().unwrap();
        vec![
            v(y.into_data()),
            v(x.grad(&grads).unwrap().into_data()),
            v(g.grad(&grads).unwrap().into_data()),
            v(b.grad(&grads).unwrap().into_data()),
        ]
    };
    let (a, b) = (on(&gpu), on(&flex));
    for (name, (a, b)) in [
        "output",
        "input's gradient",
        "gamma's gradient",
        "beta's gradient",
    ]
    .iter()
    .zip(a.iter().zip(&b))
    {
        let scale = b.iter().fold(1f32, |m, v| m.max(v.abs()));
        let worst = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        assert!(
            worst < 1e-4 * scale,
            "the {name}: {worst} apart (scale {scale})"
        );
    }
}

#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
/// The LSTM recurrence written out with burn's ops, one step at a time (gates i, f, g, o):
/// the reference for fedrun's GPU layer.
fn lstm_by_steps(
    xw: burn::tensor::Tensor<3>,
    wh: burn::tensor::Tensor<2>,
) -> burn::tensor::Tensor<3> {
    use burn::tensor::Tensor;
    use burn::tensor::activation::{sigmoid, tanh};
    let [b, len, h4] = xw.dims();
    let h = h4 / 4;
    let mut state: Tensor<2> = Tensor::zeros([b, h], &xw.device());
    let mut cell: Tensor<2> = Tensor::zeros([b, h], &xw.device());
    let mut out = Vec::new();
    for t in 0..len {
        let g = xw.clone().narrow(1, t, 1).reshape([b, h4]) + state.matmul(wh.clone());
        let part = |i: usize| g.clone().narrow(1, i * h, h);
        let (i, f) = (sigmoid(part(0)), sigmoid(part(1)));
        let (c, o) = (tanh(part(2)), sigmoid(part(3)));
        cell = f * cell + i * c;
        state = o * tanh(cell.clone());
        out.push(state.clone().unsqueeze_dim::<3>(1));
    }
    Tensor::cat(out, 1)
}

/// fedrun's LSTM layer on a GPU backend (the whole recurrence one launch each way, a cube per
/// few sequences) computes the recurrence and both its gradients as burn's ops do step by step,
/// for a layer narrower than a cube and one wider (300 units: each unit of the cube takes two),
/// for cubes of one sequence and of several, alone and as a stack of copies with their own
/// weights; a copy in the stack gives the bits of the same layer alone. A wrong gate, a lost
/// cell or hidden carry, a step that read the hidden state before every unit wrote it, a cube
/// that ran a sequence of the next cube or copy, or a copy reading another's weights fails it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_gpu_lstm_layer_is_the_step_by_step_recurrence() {
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    lstm_layer_against_burns_ops(&dev, 3, 5, 6);
    lstm_layer_against_burns_ops(&dev, 2, 4, 300);
    // 201 sequences run two a cube alone and four a cube as two copies, the last cube of each
    // copy with one: the same bits either way
    lstm_layer_against_burns_ops(&dev, 201, 3, 6);
}

#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
/// [`the_gpu_lstm_layer_is_the_step_by_step_recurrence`] at `b` sequences of `len` steps of
/// `h` units.
fn lstm_layer_against_burns_ops(dev: &burn::tensor::Device, b: usize, len: usize, h: usize) {
    use burn::tensor::{Distribution, Tensor};
    use fedrun::kernels::{lstm_layer, lstm_layers};
    let normal = |s: f64| Distribution::Normal(0.0, s);
    let wscale = 1.5 / (h as f64).sqrt();
    let xw = |_| Tensor::<3>::random([b, len, 4 * h], normal(1.0), dev).require_grad();
    let wh = |_| Tensor::<2>::random([h, 4 * h], normal(wscale), dev).require_grad();
    let (xs, ws): (Vec<_>, Vec<_>) = (0..2).map(|i| (xw(i), wh(i))).unzip();
    let weight = Tensor::<3>::random([b, len, h], normal(1.0), dev);
    let diff = |a: Tensor<3>, r: Tensor<3>| (a - r).abs().max().into_scalar::<f32>();
    let grads = |y: Tensor<3>| (y * weight.clone()).sum().backward();
    // one copy: the states and the gradients of the inputs and the recurrent weights
    let (ours, theirs) = (
        lstm_layer(xs[0].clone(), ws[0].clone()),
        lstm_by_steps(xs[0].clone(), ws[0].clone()),
    );
    assert!(
        diff(ours.clone(), theirs.clone()) < 1e-5,
        "the hidden states ({h} units)"
    );
    let (go, gt) = (grads(ours), grads(theirs));
    let dx = |g| xs[0].grad(g).unwrap();
    let sx = dx(&gt).abs().max().into_scalar::<f32>();
    assert!(
        diff(dx(&go), dx(&gt)) < 1e-4 * sx.max(1.0),
        "the inputs' gradient ({h} units)"
    );
    let dw = |g| ws[0].grad(g).unwrap().unsqueeze_dim::<3>(0);
    let scale = dw(&gt).abs().max().into_scalar::<f32>();
    assert!(scale > 0.0);
    assert!(
        diff(dw(&go), dw(&gt)) < 1e-4 * scale,
        "the recurrent weights' gradient ({h} units)"
    );
    // two copies in one stack: each is its own layer, with the bits of the layer alone
    let stacked = lstm_layers(Tensor::stack(xs.clone(), 0), Tensor::stack(ws.clone(), 0));
    let weights = Tensor::stack::<4>(vec![weight.clone(), weight.clone() * 2.0], 0);
    let gs = (stacked.clone() * weights).sum().backward();
    for k in 0..2 {
        let alone = lstm_by_steps(xs[k].clone(), ws[k].clone());
        let copy = stacked.clone().narrow(0, k, 1).reshape([b, len, h]);
        assert!(
            diff(copy.clone(), alone.clone()) < 1e-5,
            "copy {k}'s states"
        );
        let ours_alone = lstm_layer(xs[k].clone(), ws[k].clone());
        assert_eq!(
            diff(copy, ours_alone),
            0.0,
            "copy {k} against the layer alone"
        );
        let g = (alone * weight.clone() * (k as f32 + 1.0)).sum().backward();
        let (dxs, dxa) = (xs[k].grad(&gs).unwrap(), xs[k].grad(&g).unwrap());
        let s = dxa.clone().abs().max().into_scalar::<f32>();
        assert!(
            diff(dxs, dxa) < 1e-4 * s.max(1.0),
            "copy {k}'s inputs' gradient"
        );
        let d = |g| ws[k].grad(g).unwrap().unsqueeze_dim::<3>(0);
        let s = d(&g).abs().max().into_scalar::<f32>();
        assert!(
            diff(d(&gs), d(&g)) < 1e-4 * s,
            "copy {k}'s recurrent gradient"
        );
    }
}

/// fedrun's GroupNorm on a GPU backend (one kernel forward, two backward) gives burn's formula's
/// output and its three gradients, with and without the fused ReLU, on blocks and channels longer
/// than a cube's threads; a wrong statistic, a lost mask or a gradient summed over the wrong
/// axis fails it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_gpu_group_norm_is_burns_formula() {
    use burn::tensor::{Distribution, Tensor};
    use fedrun::kernels::{Kernels, group_norm_of};
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    let diff = |a: Tensor<4>, b: Tensor<4>| (a - b).abs().max().into_scalar::<f32>();
    let diff1 = |a: Tensor<1>, b: Tensor<1>| (a - b).abs().max().into_scalar::<f32>();
    let (n, c, side, groups) = (3, 8, 12, 4);
    let normal = |m: f64, s: f64| Distribution::Normal(m, s);
    for relu in [false, true] {
        let x = Tensor::<4>::random([n, c, side, side], normal(0.5, 2.0), &dev).require_grad();
        let gamma = Tensor::<1>::random([c], normal(1.0, 0.5), &dev).require_grad();
        let beta = Tensor::<1>::random([c], normal(0.0, 0.5), &dev).require_grad();
        let ys: Vec<Tensor<4>> = [Kernels::Fedrun, Kernels::Burn]
            .into_iter()
            .map(|k| {
                group_norm_of(
                    x.clone(),
                    gamma.clone(),
                    beta.clone(),
                    groups,
                    1e-5,
                    relu,
                    k,
                )
            })
            .collect();
        assert!(
            diff(ys[0].clone(), ys[1].clone()) < 1e-4,
            "relu {relu}: the output"
        );
        let weight = Tensor::<4>::random([n, c, side, side], normal(0.0, 1.0), &dev);
        let g: Vec<_> = ys
            .iter()
            .map(|y| (y.clone() * weight.clone()).sum().backward())
            .collect();
        let dx = |i: usize| x.grad(&g[i]).unwrap();
        assert!(
            diff(dx(0), dx(1)) < 1e-4,
            "relu {relu}: the input's gradient"
        );
        for (name, p) in [("gamma", &gamma), ("beta", &beta)] {
            let (a, b) = (p.grad(&g[0]).unwrap(), p.grad(&g[1]).unwrap());
            let scale = b.clone().abs().max().into_scalar::<f32>();
            assert!(scale > 0.0);
            assert!(
                diff1(a, b) < 1e-4 * scale.max(1.0),
                "relu {relu}: {name}'s gradient"
            );
        }
    }
}

/// A split resident on a GPU backend gives the batches the host gathers, bit for bit: the same
/// rows, labels and augmentation draws (one crop and flip a batch, one a sample, FedACG's
/// rotation, none), for normalised floats, for bytes normalised as they are gathered (FedACG's
/// black fill in pixel space) and for tokens; and it was the device that gathered them. A map off
/// by a pixel, a draw out of order or the wrong fill fails it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_resident_split_gathers_the_host_batches_bit_for_bit() {
    use burn::tensor::Device;
    use fedrun::data::{Augment, Features, Input, Split, batch};
    use fedrun::rng::Rng;
    let gpu = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    let flex = Device::flex().autodiff();
    let (n, c, side) = (12, 3, 8);
    let mut r = Rng::from_seed(3);
    let bytes: Vec<u8> = (0..n * c * side * side)
        .map(|_| r.below(256) as u8)
        .collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    let floats = Features::Images {
        c,
        h: side,
        w: side,
        data: bytes.iter().map(|&b| b as f32 / 25.0 - 4.0).collect(),
    };
    let pixels = Features::Pixels {
        c,
        h: side,
        w: side,
        data: bytes.clone(),
        mean: vec![0.49, 0.48, 0.45],
        std: vec![0.25, 0.24, 0.26],
    };
    let tokens = Features::Tokens {
        len: 16,
        data: bytes[..n * 16].to_vec(),
    };
    let idx = [7, 0, 11, 3, 3];
    let bits = |x: Input| -> Vec<u32> {
        match x {
            Input::Images(t) => t.into_data().iter::<f32>().map(f32::to_bits).collect(),
            Input::Tokens(t) => t.into_data().iter::<i64>().map(|v| v as u32).collect(),
        }
    };
    for x in [floats, pixels, tokens] {
        let split = Split {
            x,
            y: labels.clone(),
            resident: Default::default(),
        };
        for aug in [
            Augment::None,
            Augment::Batch,
            Augment::Sample,
            Augment::Fedacg,
        ] {
            let gather = |device: &Device| {
                let mut rng = Rng::from_seed(11);
                let (x, y) = batch(&split, &idx, aug, Some(&mut rng), device);
                let y: Vec<i64> = y.into_data().iter::<i64>().collect();
                (bits(x), y, rng.below(1 << 30))
            };
            let (host, device) = (gather(&flex), gather(&gpu));
            assert_eq!(host.0, device.0, "{aug:?}: the features");
            assert_eq!(host.1, device.1, "{aug:?}: the labels");
            assert_eq!(host.2, device.2, "{aug:?}: the stream after the draws");
        }
        assert_eq!(
            format!("{:?}", split.resident),
            "Resident(true)",
            "gathered on the device"
        );
    }
}

/// A split whose features would take more than the device's largest buffer (lavapipe's binding
/// limit) is not kept on the device: its batches are gathered on the host, the same bits.
/// Kept, one buffer past the limit fails the step's first read ("an error happened during
/// execution": MNIST's 188 MB on lavapipe did).
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_split_past_the_devices_largest_buffer_stays_on_the_host() {
    use burn::tensor::Device;
    use fedrun::data::{Augment, Features, Split, batch, kept};
    let gpu = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    let max = fedrun::kernels::max_buffer(&gpu).expect("a GPU runtime's largest buffer");
    // tokens take 8 bytes each on the device
    let len = 64;
    let n = (max / (8 * len as u64)) as usize + 1;
    let split = Split {
        x: Features::Tokens {
            len,
            data: (0..n * len).map(|i| (i % 80) as u8).collect(),
        },
        y: (0..n).map(|i| (i % 10) as u8).collect(),
        resident: Default::default(),
    };
    assert!(
        kept(&split, &gpu).is_none(),
        "{n} rows past {max} bytes kept"
    );
    let idx = [n - 1, 0, n / 2];
    let tokens = |device: &Device| -> Vec<i64> {
        match batch(&split, &idx, Augment::None, None, device).0 {
            fedrun::data::Input::Tokens(t) => t.into_data().iter::<i64>().collect(),
            _ => unreachable!("tokens"),
        }
    };
    assert_eq!(tokens(&gpu), tokens(&Device::flex()));
}

/// The GPU runtime reports what the process reserves on it, which grows when a tensor is made
/// there, and its capacity where it states one (wgpu's WebGPU states none, so on `wgpu`
/// `run.cohort = "auto"` keeps to `run.cohort_mb`; CUDA and Vulkan's SPIR-V state theirs):
/// what `run.cohort = "auto"` reads.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn the_gpu_reports_what_the_process_reserves() {
    let gpu = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .1;
    let (capacity, before) = fedrun::kernels::device_memory(&gpu).expect("a cubecl device");
    assert_eq!(capacity, None, "WebGPU states no capacity");
    // tensors of 32 MiB, all kept, until the reserve grows: the first may land in memory the
    // process's earlier tests reserved and freed (the pool keeps it), 16 cannot. Each is summed
    // by rows of 8,192 (wgpu's OpenGL fallback, without a Vulkan driver, sums only the first
    // 262,132 values of a long axis)
    let mut held = Vec::new();
    let mut after = before;
    while after < before + (32 << 20) && held.len() < 16 {
        let t = burn::tensor::Tensor::<1>::ones([8 << 20], &gpu);
        let rows: burn::tensor::Tensor<2> = t.clone().reshape([1024, 8192]);
        let sum = rows.sum_dim(1).sum().into_scalar::<f32>();
        assert_eq!(sum, (8 << 20) as f32);
        held.push(t);
        after = fedrun::kernels::device_memory(&gpu).unwrap().1;
    }
    assert!(
        after >= before + (32 << 20),
        "{before} → {after} after {} tensors of 32 MiB",
        held.len()
    );
    assert!(fedrun::kernels::device_memory(&burn::tensor::Device::flex()).is_none());
}

/// With no Vulkan driver in sight (`VK_ICD_FILENAMES` pointing at nothing), a `wgpu` run stops
/// before its first round with an error naming `run.backend`: wgpu's OpenGL fallback on Mesa
/// sums only the first 262,132 values of a long axis, so it is refused (the device's probe sums
/// 2^19 ones), and a machine without that fallback has no adapter at all. Without the probe the
/// run would train on the fallback, its long reductions wrong.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_wgpu_run_without_a_vulkan_driver_stops_with_a_named_error() {
    let dir = TempDir::new("no-vulkan");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fedrun"))
        .args([
            "--quiet",
            "--set",
            "run.backend=\"wgpu\"",
            "--set",
            "fl.rounds=1",
            "--out",
        ])
        .arg(dir.path())
        .env("VK_ICD_FILENAMES", "/dev/null")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the run trained: {err}");
    assert!(err.contains("key `run.backend` = \"wgpu\""), "{err}");
    assert!(
        err.contains("long reductions are wrong") || err.contains("no usable GPU adapter"),
        "{err}"
    );
}

/// The CIFAR CNN on lavapipe, over synthetic images, one round of one step, with `sets`
/// (clients, batch, cohort) on top: the process's output.
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn cifar_on_lavapipe(name: &str, sets: &[&str]) -> std::process::Output {
    let dir = TempDir::new(name);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fedrun"));
    cmd.args(["--quiet", "--config"]).arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/configs/cifar_fedavg.toml"
    ));
    let common = [
        "data.dataset=\"synthetic\"",
        "fl.rounds=1",
        "local.steps=1",
        "run.backend=\"wgpu\"",
    ];
    for s in common.iter().chain(sets) {
        cmd.args(["--set", s]);
    }
    cmd.arg("--out")
        .arg(dir.path())
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap()
}

/// The run stopped with exit status 1 and an error holding every one of `parts` and burn's
/// failed allocation, without a panic.
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn stopped_naming(out: &std::process::Output, parts: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for part in parts.iter().chain(&["can't allocate buffer"]) {
        assert!(err.contains(part), "{part:?} not in {err}");
    }
}

/// A device that fails while training (here a cohort whose maps outgrow a buffer: lavapipe,
/// which CI runs this file on, binds at most 128 MiB, and the first layer's maps of 20 copies of
/// the CIFAR CNN at batch 70 take 140 MB) stops the run with an error that names `run.backend`,
/// the round's clients, `run.cohort`, `local.batch_size` and burn's innermost cause, not a panic:
/// the failure shows when the training's numbers are read back, which used to unwrap it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_device_that_fails_while_training_stops_the_run_with_a_named_error() {
    let out = cifar_on_lavapipe(
        "device-fails",
        &[
            "data.synthetic_train=1400",
            "data.synthetic_test=10",
            "data.num_clients=20",
            "fl.clients_per_round=20",
            "local.batch_size=70",
            "run.cohort=20",
        ],
    );
    stopped_naming(
        &out,
        &[
            "run.backend = \"wgpu\": the device failed while training round 1's clients",
            "as a cohort of 20 (run.cohort), at local.batch_size = 70",
        ],
    );
}

/// A cohort whose parameter rows outgrow one of the device's buffers is read back in pieces: 50
/// copies of the CIFAR CNN's 744,330 parameters take 149 MB, over lavapipe's 128 MiB (the W2
/// benchmark's cohort), and the round completes (read at once, it stopped with "can't allocate
/// buffer").
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_cohort_whose_rows_outgrow_a_buffer_is_read_in_pieces() {
    let out = cifar_on_lavapipe(
        "rows-in-pieces",
        &[
            "data.synthetic_train=100",
            "data.synthetic_test=10",
            "data.num_clients=50",
            "fl.clients_per_round=50",
            "local.batch_size=2",
            "run.cohort=50",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

/// A cohort whose convolution's columns outgrow one of the device's buffers takes its samples in
/// runs: 20 copies of the CIFAR CNN at batch 32 gather 205 MB of columns in their second layer,
/// over lavapipe's 128 MiB, and the round completes (in one run it stopped with "can't allocate
/// buffer").
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_cohort_whose_columns_outgrow_a_buffer_trains_in_runs_of_samples() {
    let out = cifar_on_lavapipe(
        "columns-in-runs",
        &[
            "data.synthetic_train=640",
            "data.synthetic_test=100",
            "data.num_clients=20",
            "fl.clients_per_round=20",
            "local.batch_size=32",
            "run.cohort=20",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

/// A device that fails while evaluating (an evaluation batch of 2,000 images whose first layer's
/// maps take 201 MB, over lavapipe's 128 MiB buffers) stops the run with an error that names
/// `run.backend`, `fl.eval_batch_size` and burn's innermost cause, not a panic.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_device_that_fails_while_evaluating_stops_the_run_with_a_named_error() {
    let out = cifar_on_lavapipe(
        "eval-fails",
        &[
            "data.synthetic_train=20",
            "data.synthetic_test=2000",
            "data.num_clients=2",
            "fl.clients_per_round=1",
            "local.batch_size=2",
            "fl.eval_batch_size=2000",
        ],
    );
    stopped_naming(
        &out,
        &[
            "run.backend = \"wgpu\": the device failed while evaluating the test split in batches of fl.eval_batch_size = 2000",
        ],
    );
}

/// A GPU cohort's memory estimate counts what its batched convolutions keep: for every
/// convolutional model, the columns that K copies' forward gathers on lavapipe are exactly the
/// estimate's columns a copy's sample (`Size::columns`) times the samples, so `run.cohort =
/// "auto"` and `fedrun check` see the memory that the GPU's cohort takes beyond flex's.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
fn a_gpu_cohorts_estimate_counts_the_columns_its_convolutions_gather() {
    use burn::tensor::{Tensor, TensorData};
    use fedrun::config::{ModelKind, ModelSpec};
    use fedrun::model::copies::Stacked;
    use fedrun::model::{Model, Shape};
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0
        .autodiff();
    let (k, b) = (3, 2);
    for (kind, c, side, classes) in [
        (ModelKind::Cnn, 3, 32, 10usize),
        (ModelKind::TinyCnn, 3, 32, 10),
        (ModelKind::MnistCnn, 1, 28, 10),
        (ModelKind::EmnistCnn, 1, 28, 62),
        (ModelKind::FemnistCnn, 1, 28, 62),
        (ModelKind::CelebaCnn, 3, 84, 2),
        (ModelKind::Resnet18, 3, 32, 10),
    ] {
        let spec = ModelSpec {
            kind,
            ..ModelSpec::default()
        };
        let size = fedrun::model::size::estimate(&spec, (c * side * side) as u128, classes as u128);
        let shape = Shape {
            channels: c,
            side,
            classes,
        };
        let model = Model::build(&spec, shape, fedrun::kernels::Kernels::Fedrun).unwrap();
        let flat = vec![0.1f32; model.layout().total];
        let copies: Vec<&[f32]> = (0..k).map(|_| flat.as_slice()).collect();
        let stacked = Stacked::new(&model, &copies, &dev);
        let x = vec![0.5f32; k * b * c * side * side];
        let x = Tensor::<4>::from_data(TensorData::new(x, [k * b, c, side, side]), &dev);
        let before = fedrun::kernels::columns_gathered();
        let _ = stacked.outputs(fedrun::data::Input::Images(x), Some(&[1, 2, 3]));
        let gathered = fedrun::kernels::columns_gathered() - before;
        assert!(size.columns > 0, "{kind}: no columns estimated");
        assert_eq!(
            u128::from(gathered),
            size.columns * (k * b) as u128,
            "{kind}: the columns gathered against the estimate's"
        );
    }
}

/// A measurement, run alone (the device's pools are the process's, and other tests grow them):
/// `cargo test --release --features wgpu,cuda,fusion --test wgpu -- --ignored --nocapture
/// a_gpu_cohorts_step`. The memory that lavapipe's pools reserve for two training steps of a
/// ResNet-18 cohort (K = 2, batch 8) is its estimate (the activations with the batched
/// convolutions' columns, `fedrun check`'s) within a third; the flex-sized estimate, without
/// the columns, is a fifth of it.
#[test]
#[cfg(all(feature = "wgpu", not(feature = "vulkan")))]
#[ignore = "a measurement of the device's pools: run alone, as the comment says"]
fn a_gpu_cohorts_step_reserves_its_estimate() {
    use burn::tensor::{Int, Tensor, TensorData};
    use fedrun::config::{ModelKind, ModelSpec};
    use fedrun::model::copies::Stacked;
    use fedrun::model::{Model, Shape};
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0
        .autodiff();
    let reserved = || {
        fedrun::kernels::device_memory(&dev)
            .expect("a cubecl device")
            .1
    };
    let (k, b, side) = (2, 8, 32);
    let spec = ModelSpec {
        kind: ModelKind::Resnet18,
        ..ModelSpec::default()
    };
    let size = fedrun::model::size::estimate(&spec, (3 * side * side) as u128, 10);
    let shape = Shape {
        channels: 3,
        side,
        classes: 10,
    };
    let model = Model::build(&spec, shape, fedrun::kernels::Kernels::Fedrun).unwrap();
    let flat = vec![0.01f32; model.layout().total];
    let copies: Vec<&[f32]> = (0..k).map(|_| flat.as_slice()).collect();
    let stacked = Stacked::new(&model, &copies, &dev);
    let x = vec![0.5f32; k * b * 3 * side * side];
    let x = Tensor::<4>::from_data(TensorData::new(x, [k * b, 3, side, side]), &dev);
    let y = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64; k * b], [k * b]), &dev);
    let before = reserved();
    for _ in 0..2 {
        let x = fedrun::data::Input::Images(x.clone());
        let logits = stacked.outputs(x, Some(&[1, 2])).logits;
        let _ = Stacked::losses(logits, y.clone(), None).sum().backward();
    }
    let step = (reserved() - before) as f64;
    let samples = (k * b) as u128;
    let with = samples * (size.activations + size.columns + size.columns_transient) * 4;
    let flex = samples * size.activations * 4;
    let (with, flex) = (with as f64, flex as f64);
    println!(
        "ResNet-18, K = {k}, batch {b}: the pools reserved {:.1} MB for two steps; estimate {:.1} MB ({:.2}), flex-sized {:.1} MB ({:.2})",
        step / 1e6,
        with / 1e6,
        with / step,
        flex / 1e6,
        flex / step
    );
    assert!(
        (0.75..=1.33).contains(&(with / step)),
        "estimate {with} against {step} reserved"
    );
}
