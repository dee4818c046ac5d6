//! fedrun's own cube kernels as CUDA C++, with no GPU: each kernel is defined as its launch
//! defines it (the arguments of a real launch, an H100's device properties: compute capability
//! 9.0, warps of 32), then transpiled by cubecl's CUDA dialect, the compiler cubecl-cuda runs
//! before it hands the source to NVRTC. A GPU machine is lent now and then, for minutes: a
//! kernel that the dialect cannot write, or that NVRTC refuses (`tests/wgpu.rs` compiles every
//! source to PTX where NVRTC is installed), is caught here first.

use std::sync::Arc;

use burn_cubecl::cubecl;
use cubecl::ir::{
    DeviceIdentity, DeviceProperties, HardwareProperties, MemoryDeviceProperties, TargetProperties,
    VectorSize,
};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::zspace::{Shape, Strides};
use cubecl::{Compiler, CubeKernel};
use cubecl_cpp::shared::{CompilationOptions, CppCompiler, CppSupportedFeatures};
use cubecl_cpp::target::Cuda;

/// One of fedrun's kernels, as CUDA C++ (or why the dialect could not write it).
pub struct CudaSource {
    /// The kernel's name, as cubecl's launch observer reports it.
    pub kernel: String,
    /// The source NVRTC would compile.
    pub source: Result<String, String>,
}

/// The compute capability the sources are written for (an H100's and an H200's).
pub const ARCH: u32 = 90;

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

/// What a kernel's dummy launch takes: the device's properties and tensors that no device
/// holds (a handle is an id and a size; nothing is allocated or read).
pub struct Dummy {
    props: Arc<DeviceProperties>,
    target: Arc<TargetProperties>,
}

impl Dummy {
    /// An H100's properties, as cubecl-cuda reads them off the device (the parts a kernel's
    /// definition reads: the types, the plane and the cube's limits).
    fn h100() -> Self {
        let hardware = HardwareProperties {
            load_width: 128,
            vector_register_count: None,
            plane_size_min: 32,
            plane_size_max: 32,
            max_bindings: 1024,
            max_shared_memory_size: 232_448,
            max_cube_count: (i32::MAX as u32, 65_535, 65_535),
            max_units_per_cube: 1024,
            max_cube_dim: (1024, 1024, 64),
            num_streaming_multiprocessors: Some(132),
            num_cpu_cores: None,
            last_level_cache_size: None,
            num_tensor_cores: Some(4),
            min_tensor_cores_dim: Some(8),
            max_vector_size: VectorSize::MAX,
            cube_mma_reserved_shared_memory: 0,
        };
        let mut props = DeviceProperties::new(
            Default::default(),
            MemoryDeviceProperties::new(20 << 30, 512),
            hardware,
            cubecl::profile::TimingMethod::Device,
            DeviceIdentity {
                name: "NVIDIA H100 (dummy)".into(),
                fingerprint: format!("ptx_sm{ARCH}"),
                physical: None,
            },
        );
        cubecl_cpp::register_supported_types(&mut props);
        Self {
            props: Arc::new(props),
            // the runtime trait is named where the kernel macros name it
            target: Arc::new(
                <cubecl_cuda::CudaRuntime as cubecl::__private::Runtime>::target_properties(),
            ),
        }
    }

    /// The device's properties, for a kernel's `create_dummy_kernel`.
    pub fn props(&self) -> Arc<DeviceProperties> {
        self.props.clone()
    }

    /// The runtime's target properties, for a kernel's `create_dummy_kernel`.
    pub fn target(&self) -> Arc<TargetProperties> {
        self.target.clone()
    }

    /// A contiguous tensor of `dims` of 4-byte values that no device holds.
    pub fn tensor(&self, dims: &[usize]) -> TensorArg {
        let mut strides = vec![1; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1];
        }
        let bytes = 4 * dims.iter().product::<usize>() as u64;
        let device = cubecl_common::device::DeviceId {
            type_id: 0,
            index_id: 0,
        };
        let service = cubecl_common::device::ServiceId::of::<Dummy>(device);
        let stream = cubecl_environment::stream::StreamId { value: 0 };
        let handle = Handle::new(service, stream, bytes);
        // SAFETY: nothing launches it; the shape and strides describe the handle's size.
        unsafe { TensorArg::from_raw_parts(handle, Strides::from(strides), Shape::from(dims)) }
    }

    /// A launch's cube count for a thread per value of `n` (cubes of 256).
    pub fn count(&self, n: usize) -> CubeCount {
        CubeCount::Static(n.div_ceil(256) as u32, 1, 1)
    }

    /// A launch's cube of 256 units.
    pub fn dim(&self) -> CubeDim {
        CubeDim::new_1d(256)
    }
}

/// Whether NVRTC's library can be loaded here (cudarc looks for `libnvrtc.so.12` and its other
/// names on the loader's path).
pub fn nvrtc_present() -> bool {
    // SAFETY: it only tries to `dlopen` each of the library's names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// `source` compiled by NVRTC to PTX for [`ARCH`] (`sm_90a`, as cubecl-cuda compiles for a
/// Hopper GPU), with CUDA's headers from `include` (cubecl-cuda passes its toolkit's); the PTX's
/// size, or NVRTC's log.
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
