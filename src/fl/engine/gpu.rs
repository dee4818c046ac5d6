//! GPU devices: made lazily and probed with one small computation (a missing driver panics inside
//! cubecl, which becomes an error naming `run.backend` and what to install), the CUDA libraries
//! looked for before cudarc would panic on their absence, and where burn's autotuning keeps what
//! it measured so that a machine tunes each kernel once.
#![allow(dead_code)]

use burn::tensor::Device;

use crate::config::Backend;
use crate::error::{Error, Result};

/// The values of the probe's long sum: more than wgpu's OpenGL fallback reduces right.
const LONG: usize = 1 << 19;

/// A GPU device (`make` builds it lazily), checked with two small computations: 1 + 2, and a
/// sum of [`LONG`] ones (wgpu on Mesa's OpenGL driver, its fallback where no Vulkan driver is
/// installed, sums only the first 262,132 values of a long axis: every such reduction of a run
/// would be wrong).
pub fn device(backend: Backend, make: fn() -> Device) -> Result<Device> {
    tune_cache();
    let probe = move || {
        let dev = make();
        let t = burn::tensor::Tensor::<1>::from_data([1.0f32, 2.0], &dev);
        let v = t.sum().into_scalar::<f32>();
        let long = burn::tensor::Tensor::<1>::ones([LONG], &dev);
        (dev, v, long.sum().into_scalar::<f32>())
    };
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let got = std::panic::catch_unwind(probe);
    std::panic::set_hook(hook);
    match got {
        Ok((dev, 3.0, long)) if long == LONG as f32 => Ok(dev),
        Ok((_, 3.0, long)) => Err(Error::Config(format!(
            "key `run.backend` = \"{backend}\": the device summed {LONG} ones to {long}: its \
             long reductions are wrong, and a run's would be too (wgpu on Mesa's OpenGL driver, \
             its fallback without a Vulkan driver, does this). {}",
            what_to_do(backend)
        ))),
        Ok((_, v, _)) => Err(Error::Config(format!(
            "key `run.backend` = \"{backend}\": the device computed 1 + 2 = {v}; it is not usable"
        ))),
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::Config(format!(
                "key `run.backend` = \"{backend}\": {} (burn said: {why}). {}",
                what_failed(backend),
                what_to_do(backend)
            )))
        }
    }
}

fn what_failed(backend: Backend) -> String {
    match backend {
        Backend::Cuda => "no usable CUDA device".into(),
        _ => {
            let chosen = std::env::var("CUBECL_WGPU_DEFAULT_DEVICE")
                .map(|v| format!("CUBECL_WGPU_DEFAULT_DEVICE = {v}"))
                .unwrap_or_else(|_| "CUBECL_WGPU_DEFAULT_DEVICE is not set".into());
            format!("no usable GPU adapter ({chosen})")
        }
    }
}

fn what_to_do(backend: Backend) -> &'static str {
    match backend {
        Backend::Cuda => {
            "Install the NVIDIA driver (libcuda.so.1) and the CUDA toolkit's NVRTC (libnvrtc.so), or pick another backend: flex (CPU) or vulkan"
        }
        _ => {
            "Install a Vulkan driver and loader (an NVIDIA GPU: the NVIDIA driver with its Vulkan ICD, and Debian's `libvulkan1`; a machine without a GPU: Mesa's software driver lavapipe, Debian package `mesa-vulkan-drivers`), or pick the adapter with CUBECL_WGPU_DEFAULT_DEVICE = DiscreteGpu(0) | IntegratedGpu(0) | VirtualGpu(0) | Cpu | DefaultDevice (cubecl reads this variable, not wgpu's WGPU_* ones)"
        }
    }
}

/// The library names cudarc tries for `lib` (a subset of `cudarc::get_lib_name_candidates`:
/// the unversioned name and the sonames of CUDA 13 to 11).
fn candidates(lib: &str) -> Vec<String> {
    let mut v = vec![format!("lib{lib}.so"), format!("lib{lib}.so.1")];
    v.extend(
        ["13", "12", "11"]
            .iter()
            .map(|m| format!("lib{lib}.so.{m}")),
    );
    v
}

/// Whether the dynamic loader finds one of `names` (opened and closed again at once).
#[cfg(unix)]
fn loadable(names: &[String]) -> bool {
    names.iter().any(|n| {
        let Ok(c) = std::ffi::CString::new(n.as_str()) else {
            return false;
        };
        // SAFETY: dlopen with a valid C string; the handle is closed at once.
        unsafe {
            let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
            if !h.is_null() {
                libc::dlclose(h);
            }
            !h.is_null()
        }
    })
}

#[cfg(not(unix))]
fn loadable(_names: &[String]) -> bool {
    true
}

/// The CUDA driver and NVRTC, looked for as cudarc would: cudarc panics inside a cubecl thread
/// when either is missing, so its absence is named here first.
pub fn cuda_libraries() -> Result<()> {
    for (lib, what) in [
        (
            "cuda",
            "the NVIDIA driver's libcuda.so.1 (install the NVIDIA driver)",
        ),
        (
            "nvrtc",
            "NVRTC's libnvrtc.so (install the CUDA toolkit, or the pip package nvidia-cuda-nvrtc, and put its lib folder on LD_LIBRARY_PATH)",
        ),
    ] {
        if !loadable(&candidates(lib)) {
            return Err(Error::Config(format!(
                "key `run.backend` = \"cuda\": {what} was not found by the dynamic loader; pick another backend (flex, or vulkan) on a machine without it"
            )));
        }
    }
    Ok(())
}

/// Where cubecl keeps what it learns of a machine: the user's cache folder
/// (`$XDG_CACHE_HOME/cubecl`, else `~/.cache/cubecl`) rather than cubecl's default, a
/// `target/environment` folder beside the outermost Cargo.toml, so that a machine tunes a
/// kernel once whatever folder fedrun runs in; and the compiled kernels are kept there too
/// (cubecl's `[compilation] cache`: CUDA's PTX, Vulkan's SPIR-V), so that a second process
/// compiles nothing it compiled before (with the same fedrun binary: the key holds the build).
/// A `cubecl.toml` found from the working directory still decides where it says.
#[cfg(feature = "kernel-cache")]
pub fn configure() {
    tune_cache();
}

#[cfg(feature = "kernel-cache")]
fn tune_cache() {
    use burn::cubecl::config::cache::CacheConfig;
    use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut c = CubeClRuntimeConfig::from_current_dir().override_from_env();
        if matches!(c.environment.path, CacheConfig::Target) {
            c.environment.path = CacheConfig::Global;
        }
        c.compilation.cache = true;
        // Ignored when cubecl was configured already (a device made earlier in the process).
        let _ = CubeClRuntimeConfig::try_set(c);
    });
}

#[cfg(not(feature = "kernel-cache"))]
fn tune_cache() {}

/// The folder burn's autotuning keeps its results in (`fedrun check` and the docs name it).
#[cfg(feature = "autotune")]
pub fn tune_cache_dir() -> std::path::PathBuf {
    use burn::cubecl::config::cache::CacheConfig;
    CacheConfig::Global.root()
}

/// Put `run.tf32` in force for this process's CUDA products (the patched cubek-matmul's switch,
/// vendor/cubek-matmul), before the first product.
#[cfg(feature = "cuda")]
pub fn set_tf32(on: bool) {
    cubek_matmul::set_allow_tf32(on);
}
