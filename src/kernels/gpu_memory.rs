//! What a cubecl device's memory holds: the most one buffer may take, the capacity its runtime
//! reports, and what this process's pools reserve of it now.

use burn::backend::DispatchDevice;
use burn_cubecl::cubecl::MemoryScope;

/// `f` of the cubecl client under `d` (with or without autodiff); None off cubecl.
fn with_client<T>(d: &DispatchDevice, f: &dyn Fn(&DispatchDevice) -> T) -> Option<T> {
    match d {
        DispatchDevice::Cube(_) => Some(f(d)),
        DispatchDevice::Autodiff(inner) => with_client(inner, f),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The most bytes one buffer may hold on a cubecl `device` (its runtime's largest allocation: a
/// wgpu binding's limit, a quarter of a CUDA device's memory); None elsewhere.
pub fn max_buffer(device: &burn::tensor::Device) -> Option<u64> {
    with_client(device.as_dispatch(), &|d| match d {
        DispatchDevice::Cube(c) => c.client().properties().memory.max_page_size,
        _ => unreachable!("a cube device"),
    })
}

/// The bytes a cubecl `device` may be asked to hold (CUDA's total memory, Vulkan's largest
/// heap with the SPIR-V compiler; None where the runtime states none: wgpu's WebGPU) and the
/// bytes this process's memory pools reserve on it now, every stream's; None off cubecl.
pub fn memory(device: &burn::tensor::Device) -> Option<(Option<u64>, u64)> {
    with_client(device.as_dispatch(), &|d| match d {
        DispatchDevice::Cube(c) => {
            let client = c.client();
            let capacity = client.properties().memory.max_memory();
            let reserved = client
                .memory_report(MemoryScope::Device)
                .usage()
                .bytes_reserved;
            (capacity, reserved)
        }
        _ => unreachable!("a cube device"),
    })
}
