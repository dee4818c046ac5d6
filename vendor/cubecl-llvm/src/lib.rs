//! fedrun's stand-in for `cubecl-llvm` 0.11.3 (Cargo.toml says why): the items `cubecl-cuda`
//! names, with the same shapes, and an LLVM lowering that refuses to run. `cubecl-cuda`'s `cpp`
//! feature makes CUDA C++ through NVRTC its default compiler, so the refusal is never reached
//! unless a program asks for the LLVM backend by name.

use cubecl_core::ir::nvidia::SmArch;
use cubecl_core::prelude::KernelDefinition;
use cubecl_runtime::compiler::{CompilationError, Compiler};
use cubecl_runtime::kernel::BufferIOAttr;

/// What `cubecl-cuda` imports from `cubecl_llvm::nvptx`.
pub mod nvptx {
    /// The PTX version a driver loads.
    pub mod ptx_version {
        use core::fmt;

        /// A PTX ISA version, as in the real crate (`ptx86` for 8.6).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct PtxVersion(u32);

        impl PtxVersion {
            /// The newest version a driver of CUDA `driver` loads (12.8 is `12080`), as the
            /// real crate maps it; only the LLVM lowering reads it.
            pub fn for_driver(driver: i32) -> Option<Self> {
                DRIVER_PTX
                    .iter()
                    .find(|(first, _)| driver >= *first)
                    .map(|(_, ptx)| Self(*ptx))
            }
        }

        impl fmt::Display for PtxVersion {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "ptx{}", self.0)
            }
        }

        /// The first CUDA release to load each PTX version, newest first (clang's table).
        const DRIVER_PTX: &[(i32, u32)] = &[
            (13030, 93),
            (13020, 92),
            (13010, 91),
            (13000, 90),
            (12090, 88),
            (12080, 87),
            (12070, 85),
            (12060, 85),
            (12050, 85),
            (12040, 84),
            (12030, 83),
            (12020, 82),
            (12010, 81),
            (12000, 80),
            (11080, 78),
            (11000, 70),
            (10000, 63),
        ];
    }
}

/// What `cubecl-cuda` imports from `cubecl_llvm::shared`.
pub mod shared {
    /// Narrowing a device's features to what the LLVM lowering supports.
    pub mod lowered_features {
        use cubecl_core::ir::DeviceProperties;

        /// The GPU target features are narrowed for.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum GpuTarget {
            Nvptx,
        }

        /// Called by `cubecl-cuda` only when the LLVM backend compiles, which never happens with
        /// this stand-in: the C++ backend keeps every feature the device advertises.
        pub fn restrict_features(_props: &mut DeviceProperties, _target: GpuTarget) {}
    }
}

/// The LLVM targets; only NVPTX is named by `cubecl-cuda`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LlvmTarget {
    #[default]
    Cpu,
    Nvptx,
}

/// The LLVM compiler's options, with the fields `cubecl-cuda` sets.
#[derive(Clone, Debug, Default)]
pub struct PlironOptions {
    pub arch: Option<()>,
    pub sm_arch: Option<SmArch>,
    pub ptx_version: Option<nvptx::ptx_version::PtxVersion>,
    pub grid_constants: bool,
}

/// A PTX module as the LLVM lowering would return it (never built here).
#[derive(Clone, Debug)]
pub struct NvptxModule {
    pub ptx: Vec<core::ffi::c_char>,
    pub entrypoint: String,
    pub ir: String,
    pub shared_memory_size: usize,
    pub io: Vec<BufferIOAttr>,
}

/// The LLVM compiler's artifact.
#[derive(Clone, Debug)]
pub enum PlironArtifact {
    NvptxCode(NvptxModule),
}

impl core::fmt::Display for PlironArtifact {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PlironArtifact::NvptxCode(m) => f.write_str(&m.ir),
        }
    }
}

/// The LLVM compiler: it refuses every kernel, naming why.
#[derive(Clone, Debug, Default)]
pub struct PlironCompiler {
    pub target: LlvmTarget,
}

impl Compiler for PlironCompiler {
    type Representation = PlironArtifact;
    type CompilationOptions = PlironOptions;

    fn compile(
        &mut self,
        _kernel: KernelDefinition,
        _options: &Self::CompilationOptions,
    ) -> Result<Self::Representation, CompilationError> {
        Err(CompilationError::Generic {
            reason: "this fedrun build has no LLVM lowering (vendor/cubecl-llvm is a stand-in \
                     that needs no LLVM at build time); CUDA kernels compile as CUDA C++ \
                     through NVRTC"
                .to_string(),
            backtrace: cubecl_environment::backtrace::BackTrace::capture(),
        })
    }

    fn extension(&self) -> &'static str {
        "ll"
    }

    fn lang_tag(&self) -> &'static str {
        "llvm"
    }
}
