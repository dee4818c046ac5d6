//! How to run besides the spec: output options, the devices a backend name stands for, the
//! model shape a data set implies, and how many clients train at once.

use std::path::PathBuf;

use burn::tensor::Device;

use crate::config::Spec;
use crate::data::{Features, FedData};
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
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            out: PathBuf::from("results"),
            data_dir: None,
            force: false,
            progress: false,
            max_rounds_this_call: None,
        }
    }
}

/// The device a backend name stands for, with autodiff (training) and without (evaluation).
pub fn devices(backend: &str) -> Result<(Device, Device)> {
    let base = match backend {
        "flex" => Device::flex(),
        #[cfg(feature = "wgpu")]
        "wgpu" => Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
        other => {
            return Err(Error::Config(format!(
                "key `run.backend`: \"{other}\" is not compiled into this binary (build with `--features {other}`); available: flex"
            )));
        }
    };
    Ok((base.clone().autodiff(), base))
}

pub fn shape_of(data: &FedData) -> Shape {
    match &data.train.x {
        Features::Images { c, h, .. } => Shape {
            channels: *c,
            side: *h,
            classes: data.num_classes,
        },
        Features::Tokens { .. } => Shape {
            channels: 0,
            side: 0,
            classes: data.num_classes,
        },
    }
}

/// Client workers for a run: `run.client_workers`, or with 0 (auto) one per core for models of
/// up to 2M parameters without dropout (they gain from it: the CNN), else 1 (ResNet-18 is
/// memory-bound; dropout draws from the backend's global generator).
pub fn client_workers(spec: &Spec, params: usize) -> usize {
    let cores = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
    let has_dropout = crate::model::Model::has_dropout(&spec.model);
    let w = match spec.run.client_workers {
        0 if has_dropout || params > 2_000_000 => 1,
        0 => cores,
        w => w,
    };
    w.clamp(1, spec.fl.clients_per_round.max(1))
}
