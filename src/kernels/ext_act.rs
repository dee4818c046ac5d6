//! fedrun's softmax and gate activations as a burn backend extension, beside [`super::ext`]'s
//! convolution, norm and pool: the flex side runs [`super::softmax`] and [`super::activation`]
//! on the tensors' memory, the autodiff side records the op and computes its gradient with the
//! same kernels from the checkpointed input.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::{FlexTensor, Layout};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Bytes, DType, Flex, backend_extension};

use super::activation;
use super::ext::with_slice;
use super::softmax;

#[backend_extension(Flex, Autodiff)]
pub trait CpuActivations: Backend {
    /// `softmax(x)` over the last axis.
    fn fr_softmax(x: FloatTensor<Self>) -> FloatTensor<Self>;
    /// `dL/dx` of [`CpuActivations::fr_softmax`].
    fn fr_softmax_dx(x: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self>;
    /// `tanh(x)` if `is_tanh`, else `σ(x)`.
    fn fr_activation(x: FloatTensor<Self>, is_tanh: bool) -> FloatTensor<Self>;
    /// `dL/dx` of [`CpuActivations::fr_activation`].
    fn fr_activation_dx(
        x: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        is_tanh: bool,
    ) -> FloatTensor<Self>;
}

impl CpuActivations for Flex {
    fn fr_softmax(x: FlexTensor) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let n = shape[shape.len() - 1];
        let y = with_slice(&x, |xs| softmax::forward(n, xs));
        FlexTensor::new(Bytes::from_elems(y), Layout::contiguous(shape), DType::F32)
    }
    fn fr_softmax_dx(x: FlexTensor, dy: FlexTensor) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let n = shape[shape.len() - 1];
        let dx = with_slice(&x, |xs| with_slice(&dy, |d| softmax::backward(n, xs, d)));
        FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32)
    }
    fn fr_activation(x: FlexTensor, is_tanh: bool) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let y = with_slice(&x, |xs| activation::forward(xs, is_tanh));
        FlexTensor::new(Bytes::from_elems(y), Layout::contiguous(shape), DType::F32)
    }
    fn fr_activation_dx(x: FlexTensor, dy: FlexTensor, is_tanh: bool) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let dx = with_slice(&x, |xs| {
            with_slice(&dy, |d| activation::backward(xs, d, is_tanh))
        });
        FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32)
    }
}

#[derive(Debug)]
struct SoftmaxBackward;

impl<B: Backend + CpuActivations> Backward<B, 1> for SoftmaxBackward {
    type State = NodeId;
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let x = ck.retrieve_node_output::<FloatTensor<B>>(ops.state);
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::fr_softmax_dx(x, dy));
        }
    }
}

#[derive(Debug)]
struct ActivationBackward;

impl<B: Backend + CpuActivations> Backward<B, 1> for ActivationBackward {
    type State = (NodeId, bool);
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (xs, is_tanh) = ops.state;
        let x = ck.retrieve_node_output::<FloatTensor<B>>(xs);
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::fr_activation_dx(x, dy, is_tanh));
        }
    }
}

impl<B: Backend + CpuActivations, C: CheckpointStrategy> CpuActivations for Autodiff<B, C> {
    fn fr_softmax(x: FloatTensor<Self>) -> FloatTensor<Self> {
        match SoftmaxBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let xs = prep.checkpoint(&x);
                let y = B::fr_softmax(x.into_primitive());
                prep.finish(xs, y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_softmax(x.into_primitive())),
        }
    }
    fn fr_softmax_dx(_: FloatTensor<Self>, _: FloatTensor<Self>) -> FloatTensor<Self> {
        unimplemented!("second-order gradients of fedrun's softmax")
    }
    fn fr_activation(x: FloatTensor<Self>, is_tanh: bool) -> FloatTensor<Self> {
        match ActivationBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let xs = prep.checkpoint(&x);
                let y = B::fr_activation(x.into_primitive(), is_tanh);
                prep.finish((xs, is_tanh), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_activation(x.into_primitive(), is_tanh)),
        }
    }
    fn fr_activation_dx(_: FloatTensor<Self>, _: FloatTensor<Self>, _: bool) -> FloatTensor<Self> {
        unimplemented!("second-order gradients of fedrun's activations")
    }
}
