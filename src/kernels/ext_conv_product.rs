//! A convolution's matrix product as a burn backend extension: the batched product of the K
//! copies' convolution ([`super::batched_conv`]), computed as convolutions are. On CUDA it runs
//! as TF32 on the tensor cores where `run.tf32_conv` allows it (PyTorch's `cudnn.allow_tf32`,
//! under which its grouped convolution runs), whatever `run.tf32` sets for plain products; the
//! autodiff side computes both gradients with the same op. Elsewhere it is burn's product.

use burn::backend::TensorMetadata;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::FloatTensorOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, Shape, backend_extension};
use burn::tensor::Tensor;

/// `a·b` over the last two axes (the leading ones alike) in a convolution's precision: TF32
/// on CUDA where `run.tf32_conv` allows it, as PyTorch's convolutions run (the cohort's batched
/// products); burn's product elsewhere.
pub fn conv_matmul<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> Tensor<D> {
    type D = burn::backend::Dispatch;
    Tensor::from_dispatch(<D as FrConvProduct>::fr_conv_matmul(
        a.into_dispatch(),
        b.into_dispatch(),
    ))
}

#[backend_extension(
    Flex,
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrConvProduct: Backend {
    /// `a·b` over the last two axes, the leading axes alike, in a convolution's precision.
    #[fusion(dtype = a, shape = product_shape(a, b))]
    fn fr_conv_matmul(a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// The shape of `a·b`: the leading axes, then `a`'s rows and `b`'s columns (the fused
/// backend's metadata).
#[allow(dead_code)]
fn product_shape(a: &Shape, b: &Shape) -> Shape {
    let r = a.num_dims();
    let mut dims: Vec<usize> = (0..r - 1).map(|i| a[i]).collect();
    dims.push(b[r - 1]);
    Shape::from(dims)
}

impl FrConvProduct for Flex {
    fn fr_conv_matmul(a: FlexTensor, b: FlexTensor) -> FlexTensor {
        Flex::float_matmul(a, b)
    }
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl FrConvProduct for burn_cubecl::CubeBackend {
    fn fr_conv_matmul(
        a: burn_cubecl::tensor::CubeTensor,
        b: burn_cubecl::tensor::CubeTensor,
    ) -> burn_cubecl::tensor::CubeTensor {
        super::conv_precision::in_conv_precision(|| burn_cubecl::CubeBackend::float_matmul(a, b))
    }
}

/// `t` with its last two axes swapped.
fn transposed<B: Backend>(t: FloatTensor<B>) -> FloatTensor<B> {
    let r = t.shape().num_dims();
    B::float_swap_dims(t, r - 2, r - 1)
}

#[derive(Debug)]
struct ProductBackward;

impl<B: Backend + FrConvProduct> Backward<B, 2> for ProductBackward {
    /// `a`'s and `b`'s nodes.
    type State = (NodeId, NodeId);
    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (an, bn) = ops.state;
        let a = ck.retrieve_node_output::<FloatTensor<B>>(an);
        let b = ck.retrieve_node_output::<FloatTensor<B>>(bn);
        let [pa, pb] = ops.parents.map(|p| p.map(|n| n.id));
        if let Some(id) = pa {
            let da = B::fr_conv_matmul(dy.clone(), transposed::<B>(b.clone()));
            grads.register::<B>(id, da);
        }
        if let Some(id) = pb {
            grads.register::<B>(id, B::fr_conv_matmul(transposed::<B>(a), dy));
        }
    }
}

impl<B: Backend + FrConvProduct, C: CheckpointStrategy> FrConvProduct for Autodiff<B, C> {
    fn fr_conv_matmul(a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        match ProductBackward
            .prepare::<C>([a.node(), b.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let (an, bn) = (prep.checkpoint(&a), prep.checkpoint(&b));
                let y = B::fr_conv_matmul(a.into_primitive(), b.into_primitive());
                prep.finish((an, bn), y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::fr_conv_matmul(a.into_primitive(), b.into_primitive()))
            }
        }
    }
}
