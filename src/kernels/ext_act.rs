//! fedrun's softmax, gate activations and dropout as a burn backend extension, beside the
//! convolution's, the norm's and the pool's: the flex side runs [`super::softmax`] and [`super::activation`]
//! on the tensors' memory, the autodiff side records the op and computes its gradient with the
//! same kernels from the output it keeps (for the softmax and σ/tanh the output is all the
//! gradient needs, so nothing is recomputed).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::{FlexTensor, Layout};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Bytes, DType, Flex, backend_extension};

use super::activation;
use super::dropout::{self, Mask};
use super::ext::with_slice;
use super::softmax;

#[backend_extension(Flex, Autodiff)]
pub trait CpuActivations: Backend {
    /// `softmax(x)` over the last axis.
    fn fr_softmax(x: FloatTensor<Self>) -> FloatTensor<Self>;
    /// `dL/dx` of [`CpuActivations::fr_softmax`], from its output `y`.
    fn fr_softmax_dx(y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self>;
    /// `tanh(x)` if `is_tanh`, else `σ(x)`.
    fn fr_activation(x: FloatTensor<Self>, is_tanh: bool) -> FloatTensor<Self>;
    /// `dL/dx` of [`CpuActivations::fr_activation`], from its output `y`.
    fn fr_activation_dx(
        y: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        is_tanh: bool,
    ) -> FloatTensor<Self>;
    /// Dropout of probability `prob` with the mask of `seed` (its own gradient: the same mask).
    fn fr_dropout(x: FloatTensor<Self>, seed: u64, prob: f64) -> FloatTensor<Self>;
}

impl CpuActivations for Flex {
    fn fr_softmax(x: FlexTensor) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let n = shape[shape.len() - 1];
        let y = with_slice(&x, |xs| softmax::forward(n, xs));
        FlexTensor::new(Bytes::from_elems(y), Layout::contiguous(shape), DType::F32)
    }
    fn fr_softmax_dx(y: FlexTensor, dy: FlexTensor) -> FlexTensor {
        let shape = y.layout().shape().clone();
        let n = shape[shape.len() - 1];
        let dx = with_slice(&y, |ys| with_slice(&dy, |d| softmax::backward(n, ys, d)));
        FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32)
    }
    fn fr_activation(x: FlexTensor, is_tanh: bool) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let y = with_slice(&x, |xs| activation::forward(xs, is_tanh));
        FlexTensor::new(Bytes::from_elems(y), Layout::contiguous(shape), DType::F32)
    }
    fn fr_activation_dx(y: FlexTensor, dy: FlexTensor, is_tanh: bool) -> FlexTensor {
        let shape = y.layout().shape().clone();
        let dx = with_slice(&y, |ys| {
            with_slice(&dy, |d| activation::backward(ys, d, is_tanh))
        });
        FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32)
    }
    fn fr_dropout(x: FlexTensor, seed: u64, prob: f64) -> FlexTensor {
        let shape = x.layout().shape().clone();
        let y = with_slice(&x, |xs| dropout::forward(xs, Mask::new(seed, prob)));
        FlexTensor::new(Bytes::from_elems(y), Layout::contiguous(shape), DType::F32)
    }
}

#[derive(Debug)]
struct DropoutBackward;

impl<B: Backend + CpuActivations> Backward<B, 1> for DropoutBackward {
    /// The seed and the probability: the mask is recomputed, not kept.
    type State = (u64, f64);
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (seed, prob) = ops.state;
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::fr_dropout(dy, seed, prob));
        }
    }
}

#[derive(Debug)]
struct SoftmaxBackward;

impl<B: Backend + CpuActivations> Backward<B, 1> for SoftmaxBackward {
    /// The output y (the gradient needs nothing else).
    type State = FloatTensor<B>;
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::fr_softmax_dx(ops.state, dy));
        }
    }
}

#[derive(Debug)]
struct ActivationBackward;

impl<B: Backend + CpuActivations> Backward<B, 1> for ActivationBackward {
    /// The output y, and which activation.
    type State = (FloatTensor<B>, bool);
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (y, is_tanh) = ops.state;
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::fr_activation_dx(y, dy, is_tanh));
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
            OpsKind::Tracked(prep) => {
                let y = B::fr_softmax(x.into_primitive());
                prep.finish(y.clone(), y)
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
            OpsKind::Tracked(prep) => {
                let y = B::fr_activation(x.into_primitive(), is_tanh);
                prep.finish((y.clone(), is_tanh), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_activation(x.into_primitive(), is_tanh)),
        }
    }
    fn fr_activation_dx(_: FloatTensor<Self>, _: FloatTensor<Self>, _: bool) -> FloatTensor<Self> {
        unimplemented!("second-order gradients of fedrun's activations")
    }
    fn fr_dropout(x: FloatTensor<Self>, seed: u64, prob: f64) -> FloatTensor<Self> {
        match DropoutBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                prep.finish((seed, prob), B::fr_dropout(x.into_primitive(), seed, prob))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_dropout(x.into_primitive(), seed, prob)),
        }
    }
}
