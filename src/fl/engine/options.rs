//! How to run besides the spec: output options, the devices a backend name stands for, the
//! model shape a data set implies, and how many clients train at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use burn::tensor::Device;

use crate::config::{Backend, GraphChoice, RunSpec, Spec};
use crate::data::FedData;
use crate::error::{Error, Result};
use crate::model::Shape;

/// How to run, besides the spec.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Results root: the run writes into `<out>/<run.name>/`.
    pub out: PathBuf,
    pub data_dir: Option<PathBuf>,
    /// Discard an existing run folder and start afresh.
    pub force: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Stop after this many rounds of this process (tests of resume); None = run to the end.
    pub max_rounds_this_call: Option<usize>,
    /// Set from outside (SIGINT, SIGTERM): the run stops after its current round, with a
    /// checkpoint, as `interrupted`.
    pub stop: Option<Arc<AtomicBool>>,
    /// Bytes the run may use; None: the machine's available memory.
    pub memory_budget: Option<u64>,
    /// How the run folder's `spec.toml` is read back, to compare it with the spec: the command
    /// line passes `schema::parse_resolved` (every default filled in, so a folder written by an
    /// older fedrun compares equal); the default reads the text as written.
    pub parse_spec: fn(&str, &str) -> Result<Spec>,
}

impl RunOptions {
    /// Whether the run was asked to stop.
    pub fn stopping(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            out: PathBuf::from("results"),
            data_dir: None,
            force: false,
            progress: false,
            max_rounds_this_call: None,
            stop: None,
            memory_budget: None,
            parse_spec: Spec::from_resolved,
        }
    }
}

/// The backend's check of a whole spec (part of the schema): it is compiled into this binary.
pub fn check_backend(s: &Spec) -> Result<()> {
    match compiled_backends().contains(&s.run.backend) {
        true => Ok(()),
        false => Err(not_compiled(s.run.backend)),
    }
}

/// The backends compiled into this binary.
pub fn compiled_backends() -> Vec<Backend> {
    let mut v = vec![Backend::Flex];
    if cfg!(feature = "wgpu") {
        v.push(Backend::Wgpu);
    }
    if cfg!(feature = "vulkan") {
        v.push(Backend::Vulkan);
    }
    if cfg!(feature = "cuda") {
        v.push(Backend::Cuda);
    }
    v
}

/// The error of a backend this binary was built without: the README's build of every GPU
/// backend (`--features gpu`), or the backend's own feature.
fn not_compiled(b: Backend) -> Error {
    let have: Vec<String> = compiled_backends().iter().map(|b| b.to_string()).collect();
    Error::Config(format!(
        "key `run.backend`: \"{b}\" is not compiled into this binary (build with `cargo build --release --features gpu`, every GPU backend, or `--features {b}`); available: {}",
        have.join(", ")
    ))
}

/// What a GPU backend computes its products in (`fedrun check` prints it); None on flex.
pub fn precision(run: &RunSpec) -> Option<String> {
    let products = match run.tf32 {
        false => "matrix products in f32 (`run.tf32 = false`: PyTorch's default)",
        true => "matrix products as TF32 on the tensor cores (`run.tf32 = true`)",
    };
    let convs = match run.tf32_conv {
        true => {
            "convolutions as TF32 on the tensor cores, by implicit GEMM or, in a cohort, batched products (`run.tf32_conv = true`: PyTorch's default)"
        }
        false => {
            "convolutions in f32, by burn's direct kernels or, in a cohort, batched products (`run.tf32_conv = false`: flex's numbers, slower)"
        }
    };
    match run.backend {
        Backend::Flex => None,
        Backend::Cuda => Some(format!(
            "{products}; {convs}; TF32 moves the numbers from flex's by about 1e-3 in a few rounds"
        )),
        b => Some(format!(
            "f32 (`{b}` has no TF32; `run.tf32` and `run.tf32_conv` are CUDA's)"
        )),
    }
}

/// The device a backend name stands for, with autodiff (training) and without (evaluation),
/// with `run.tf32` and `run.tf32_conv` in force on CUDA and `run.device_data_mb` on the GPU
/// backends.
pub fn devices_for(run: &RunSpec) -> Result<(Device, Device)> {
    crate::data::resident::set_budget_mb(run.device_data_mb);
    #[cfg(feature = "cuda")]
    super::gpu::set_tf32(run.tf32);
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    crate::kernels::conv_precision::set_tf32_conv(run.tf32_conv);
    devices(run.backend)
}

/// The device a backend name stands for, with autodiff (training) and without (evaluation).
pub fn devices(backend: Backend) -> Result<(Device, Device)> {
    let base = match backend {
        Backend::Flex => Device::flex(),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => super::gpu::device(backend, || {
            Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)
        })?,
        #[cfg(feature = "vulkan")]
        Backend::Vulkan => super::gpu::device(backend, || {
            Device::vulkan(burn::tensor::DeviceKind::DefaultDevice)
        })?,
        #[cfg(feature = "cuda")]
        Backend::Cuda => {
            super::gpu::cuda_libraries()?;
            super::gpu::device(backend, || Device::cuda(0))?
        }
        #[allow(unreachable_patterns)]
        other => return Err(not_compiled(other)),
    };
    Ok((base.clone().autodiff(), base))
}

/// Whether the local steps (the full ones, and the padded ones: `fl/client/feed.rs`), and a GPU
/// evaluation's full batches, run as one captured graph each (`run.graph`; `auto`: on `cuda`).
pub fn graph(spec: &Spec) -> bool {
    match spec.run.graph {
        GraphChoice::On => true,
        GraphChoice::Off => false,
        GraphChoice::Auto => spec.run.backend == Backend::Cuda,
    }
}

/// What `run.graph` does with `spec`, in a line (`fedrun check`).
pub fn graph_line(spec: &Spec) -> String {
    let how = match spec.run.backend {
        Backend::Cuda => {
            "recorded as a CUDA graph, one launch a step; a capture that fails is said once in the log and the steps run eagerly"
        }
        _ => "captured as one closure that runs again each step (no hardware graph off cuda)",
    };
    match graph(spec) {
        true => format!(
            "run.graph = \"{}\": the local steps (a short batch or a stopped client padded with weightless rows where no loss or norm reads the batch's statistics, else run eagerly), and on a GPU backend the evaluation's full batches, are {how}; the split must fit run.device_data_mb on the device, else they run eagerly",
            spec.run.graph.as_str()
        ),
        false => format!(
            "run.graph = \"{}\": each local step runs eagerly",
            spec.run.graph.as_str()
        ),
    }
}

pub fn shape_of(data: &FedData) -> Shape {
    let (channels, side) = data
        .train
        .x
        .image_shape()
        .map_or((0, 0), |(c, h, _)| (c, h));
    Shape {
        channels,
        side,
        classes: data.num_classes,
    }
}

/// Client workers for a run: `run.client_workers`, or with 0 (auto) one per core for models of
/// up to 2M parameters (they gain from it: the CNN), else 1 (ResNet-18 is memory-bound).
pub fn client_workers(spec: &Spec, params: usize) -> usize {
    let cores = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
    let w = match spec.run.client_workers {
        // a cohort trains on every core
        0 if super::resources::cohort(spec).0 > 1 => 1,
        0 if params > 2_000_000 => 1,
        0 => cores,
        w => w,
    };
    w.clamp(1, spec.fl.clients_per_round.max(1))
}
