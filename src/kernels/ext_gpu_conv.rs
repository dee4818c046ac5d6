//! fedrun's convolution on the GPU backends (cubecl's runtimes: wgpu, Vulkan, CUDA), the `Cube`
//! side of [`super::ext_conv::FrConv`]: a fixed rule instead of burn's tuning. Each convolution
//! and both its gradients take cubek's implicit GEMM (the convolution as a matrix product on the
//! tensor cores). Where it does not apply (grouped convolutions, a strided input gradient, or a
//! device or element type without the tensor-core product: f32 on wgpu and lavapipe, f32 on CUDA
//! unless TF32 is allowed for convolutions, `run.tf32_conv`), the weight gradient is products
//! over the samples ([`super::gpu_wgrad`]) and the rest burn's direct kernels. The products, the
//! implicit GEMM's and the weight gradient's, take `run.tf32_conv`'s precision
//! ([`super::conv_precision`]).
//! Without burn's `autotune` feature, burn itself always takes the direct kernels; with it, it
//! tunes each shape at run time (the slow first runs of docs/PERFORMANCE.md).

use burn::backend::TensorMetadata;
use burn::backend::ops::ConvOptions;
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::conv::{
    ConvStrategy, conv_data_backward, conv_forward, conv_weight_backward,
};
use burn_cubecl::tensor::CubeTensor;

use super::conv_precision::{tf32_conv, tf32_scope};
use super::ext_conv::FrConv;

/// The shapes (an op, its tensors' shapes, stride and padding) whose implicit GEMM could not be
/// set up: a failed setup has already queued a layout copy, so it is not tried twice.
static NO_GEMM: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// `f(strategy)` with implicit GEMM, else (implicit GEMM cannot be set up for this shape and
/// device: its setup fails before it computes anything) `instead()`, else burn's direct kernel;
/// `key` names the shape.
fn rule<E>(
    key: String,
    f: impl Fn(ConvStrategy) -> Result<CubeTensor, E>,
    instead: impl FnOnce() -> Option<CubeTensor>,
) -> CubeTensor {
    let known = NO_GEMM.lock().map(|v| v.contains(&key)).unwrap_or(false);
    let tf32 = tf32_conv();
    if !known {
        match tf32_scope(tf32, || f(ConvStrategy::ImplicitGemm)) {
            Ok(t) => return t,
            Err(_) => {
                if let Ok(mut v) = NO_GEMM.lock() {
                    v.push(key.clone());
                }
            }
        }
    }
    match tf32_scope(tf32, instead)
        .map(Ok)
        .unwrap_or_else(|| f(ConvStrategy::Direct))
    {
        Ok(t) => t,
        Err(_) => panic!("burn's direct convolution failed for {key}"),
    }
}

/// A shape's key for [`rule`].
fn key(op: &str, a: &CubeTensor, b: &CubeTensor, o: &ConvOptions<2>) -> String {
    format!(
        "{op} {:?} {:?} {:?} {:?}",
        a.shape(),
        b.shape(),
        o.stride,
        o.padding
    )
}

fn forward(x: CubeTensor, w: CubeTensor, b: Option<CubeTensor>, o: ConvOptions<2>) -> CubeTensor {
    rule(
        key("forward", &x, &w, &o),
        |s| conv_forward::<2>(x.clone(), w.clone(), b.clone(), o.clone(), s),
        || None,
    )
}

/// The bias gradient: `dy` summed over the batch and the map, `[cout]`: one reduction over each
/// map (its rows and columns are contiguous: cubecl folds them into one axis), then one over
/// the batch, where three one axis at a time first summed across the batch, the strided axis.
fn bias_grad(dy: CubeTensor) -> CubeTensor {
    use burn::backend::ops::FloatTensorOps;
    let c = dy.shape()[1];
    let s = CubeBackend::float_sum_dims(dy, &[0, 2, 3]);
    CubeBackend::float_reshape(s, burn::backend::Shape::from(vec![c]))
}

impl FrConv for CubeBackend {
    fn fr_conv2d(x: CubeTensor, w: CubeTensor, o: ConvOptions<2>) -> CubeTensor {
        forward(x, w, None, o)
    }
    fn fr_conv2d_bias(
        x: CubeTensor,
        w: CubeTensor,
        b: CubeTensor,
        o: ConvOptions<2>,
    ) -> CubeTensor {
        forward(x, w, Some(b), o)
    }
    fn fr_conv2d_dx(x: CubeTensor, w: CubeTensor, dy: CubeTensor, o: ConvOptions<2>) -> CubeTensor {
        let shape = x.shape();
        rule(
            key("data", &x, &w, &o),
            |s| conv_data_backward::<2>(dy.clone(), w.clone(), shape.clone(), o.clone(), s),
            || None,
        )
    }
    fn fr_conv2d_dwb(
        x: CubeTensor,
        w: CubeTensor,
        dy: CubeTensor,
        o: ConvOptions<2>,
    ) -> (CubeTensor, CubeTensor) {
        let shape = w.shape();
        let dw = rule(
            key("weight", &x, &w, &o),
            |s| conv_weight_backward::<2>(x.clone(), dy.clone(), shape.clone(), o.clone(), s),
            || super::gpu_wgrad::weight_grad(x.clone(), dy.clone(), shape.clone(), &o),
        );
        (dw, bias_grad(dy))
    }
}

/// Whether `device` is one of cubecl's runtimes (with or without autodiff).
pub fn is_cube(device: &burn::tensor::Device) -> bool {
    use burn::backend::DispatchDevice;
    match device.as_dispatch() {
        DispatchDevice::Cube(_) => true,
        DispatchDevice::Autodiff(inner) => matches!(**inner, DispatchDevice::Cube(_)),
        #[allow(unreachable_patterns)]
        _ => false,
    }
}
