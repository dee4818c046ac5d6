//! What a kernel's dummy launch takes, to define a kernel as a launch defines it with no device
//! ([`super::cuda_source`]): an H100's device properties and tensors that no device holds. Each
//! `ext_gpu_*.rs` file builds its own kernels' dummies from it.

use std::sync::Arc;

use burn_cubecl::cubecl;
use cubecl::ir::{
    DeviceIdentity, DeviceProperties, HardwareProperties, MemoryDeviceProperties, TargetProperties,
    VectorSize,
};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::zspace::{Shape, Strides};

/// The compute capability the dummies describe (an H100's and an H200's).
pub const ARCH: u32 = 90;

/// What a kernel's dummy launch takes: the device's properties and tensors that no device
/// holds (a handle is an id and a size; nothing is allocated or read).
pub struct Dummy {
    props: Arc<DeviceProperties>,
    target: Arc<TargetProperties>,
}

impl Dummy {
    /// An H100's properties, as cubecl-cuda reads them off the device (the parts a kernel's
    /// definition reads: the types, the plane and the cube's limits).
    pub fn h100() -> Self {
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
