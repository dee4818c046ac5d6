//! fedrun's own cube kernels as CUDA C++, with no GPU: each kernel is defined as its launch
//! defines it (the arguments of a real launch, an H100's device properties: compute capability
//! 9.0, warps of 32), then transpiled by cubecl's CUDA dialect, the compiler cubecl-cuda runs
//! before it hands the source to NVRTC. A GPU machine is lent now and then, for minutes: a
//! kernel that the dialect cannot write, or that NVRTC refuses (`tests/wgpu.rs` compiles every
//! source to PTX where NVRTC is installed), is caught here first.

use burn_cubecl::cubecl;
use cubecl::{Compiler, CubeKernel};
use cubecl_cpp::shared::{CompilationOptions, CppCompiler, CppSupportedFeatures};
use cubecl_cpp::target::Cuda;

use super::cuda_dummy::{ARCH, Dummy};

/// One of fedrun's kernels, as CUDA C++ (or why the dialect could not write it).
pub struct CudaSource {
    /// The kernel's name, as cubecl's launch observer reports it.
    pub kernel: String,
    /// The source NVRTC would compile.
    pub source: Result<String, String>,
}

/// Every kernel of fedrun's own (`ext_gpu_*.rs`), each as one of its launches defines it.
pub fn cuda_sources() -> Vec<CudaSource> {
    let d = Dummy::h100();
    let mut kernels: Vec<Box<dyn CubeKernel>> = Vec::new();
    kernels.extend(super::ext_gpu_columns::dummies(&d));
    kernels.extend(super::ext_gpu_gather::dummies(&d));
    kernels.extend(super::ext_gpu_lstm::dummies(&d));
    kernels.extend(super::ext_gpu_mask::dummies(&d));
    kernels.extend(super::ext_gpu_norm::dummies(&d));
    kernels.iter().map(|k| transpile(k.as_ref())).collect()
}

/// `kernel` through cubecl's CUDA dialect, with the options cubecl-cuda sets on an sm_90 GPU.
fn transpile(kernel: &dyn CubeKernel) -> CudaSource {
    let name = kernel.name().to_string();
    let options = CompilationOptions {
        warp_size: 32,
        supports_features: CppSupportedFeatures {
            grid_constants: true,
            clusters: true,
            fast_math: true,
            fast_tanh: true,
            elect_sync: true,
            dp4a: true,
        },
        ..Default::default()
    };
    let source = cubecl::define_kernel(kernel)
        .map_err(|e| format!("{e:?}"))
        .and_then(|def| {
            let mut compiler = CppCompiler::<Cuda>::default();
            compiler
                .compile(def, &options)
                .map(|k| k.to_string())
                .map_err(|e| format!("{e:?}"))
        });
    CudaSource {
        kernel: name,
        source,
    }
}

/// Whether NVRTC's library can be loaded here (cudarc looks for `libnvrtc.so.12` and its other
/// names on the loader's path).
pub fn nvrtc_present() -> bool {
    // SAFETY: it only tries to `dlopen` each of the library's names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// `source` compiled by NVRTC to PTX for the compute capability [`ARCH`] (`sm_90a`, as
/// cubecl-cuda compiles for a Hopper GPU), with CUDA's headers from `include` (cubecl-cuda
/// passes its toolkit's); the PTX's size, or NVRTC's log.
pub fn nvrtc_ptx(source: &str, include: &std::path::Path) -> Result<usize, String> {
    use cudarc::nvrtc::result as nvrtc;
    let src = std::ffi::CString::new(source).map_err(|e| e.to_string())?;
    let program = nvrtc::create_program(&src, None).map_err(|e| e.to_string())?;
    let options = [
        format!("--gpu-architecture=sm_{ARCH}a"),
        format!("--include-path={}", include.display()),
        "-lineinfo".to_string(),
    ];
    // SAFETY: the program was created above and is destroyed once, after its last use.
    unsafe {
        let compiled = nvrtc::compile_program(program, &options);
        let out = match compiled {
            Ok(()) => nvrtc::get_ptx(program)
                .map(|ptx| ptx.len())
                .map_err(|e| e.to_string()),
            Err(e) => Err(nvrtc::get_program_log(program).map_or_else(
                |_| e.to_string(),
                |log| {
                    let log: Vec<u8> = log.iter().map(|&c| c as u8).collect();
                    String::from_utf8_lossy(&log)
                        .trim_end_matches('\0')
                        .to_string()
                },
            )),
        };
        let _ = nvrtc::destroy_program(program);
        out
    }
}
