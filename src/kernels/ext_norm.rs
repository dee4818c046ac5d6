//! fedrun's GroupNorm (with its ReLU fused where the model has one) as a burn backend
//! extension: the flex side runs [`super::norm`], the GPU side (cubecl's runtimes) one kernel
//! forward and two backward (`ext_gpu_norm.rs`), the autodiff side keeps each (sample,
//! group)'s statistics and computes the three gradients with the same kernels.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::{FlexTensor, Layout};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, AutodiffBackend, Backend, Bytes, DType, Flex, backend_extension};

use super::ext::{vector, with_slice};
use super::norm::{self, Gn};

#[backend_extension(
    Flex,
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrNorm: Backend {
    /// `(GroupNorm(x)·gamma + beta [then max(0, ·)], each (sample, group)'s mean and 1/σ)`.
    #[fusion(meta = |x, _gamma, _beta, groups, _eps, _relu| (x.clone(), stats_spec(x, *groups)))]
    fn fr_group_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        groups: usize,
        eps: f64,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);
    /// `(dL/dx, dL/dgamma, dL/dbeta)` of [`FrNorm::fr_group_norm`], from its statistics.
    #[fusion(meta = |x, _stats, gamma, beta, _dy, _groups, _relu| (x.clone(), gamma.clone(), beta.clone()))]
    fn fr_group_norm_backward(
        x: FloatTensor<Self>,
        stats: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        groups: usize,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
}

/// The statistics' spec, `[2·n·groups]` (the fused backend's metadata).
#[cfg(feature = "fusion")]
fn stats_spec(
    x: &burn::backend::fusion::custom::TensorSpec,
    groups: usize,
) -> burn::backend::fusion::custom::TensorSpec {
    let n = x.shape[0];
    burn::backend::fusion::custom::TensorSpec::new(
        burn::backend::Shape::from(vec![2 * n * groups]),
        x.dtype,
    )
}

fn gn_geom(x: &FlexTensor, groups: usize, eps: f64, relu: bool) -> Gn {
    let xs = x.layout().shape();
    Gn {
        n: xs[0],
        c: xs[1],
        hw: xs[2..].iter().product(),
        groups,
        eps,
        relu,
    }
}

impl FrNorm for Flex {
    fn fr_group_norm(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        groups: usize,
        eps: f64,
        relu: bool,
    ) -> (FlexTensor, FlexTensor) {
        let g = gn_geom(&x, groups, eps, relu);
        let shape = x.layout().shape().clone();
        let (y, st) = with_slice(&x, |xs| {
            with_slice(&gamma, |ga| {
                with_slice(&beta, |be| norm::forward(&g, xs, ga, be))
            })
        });
        (
            FlexTensor::new(Bytes::from_elems(y), Layout::contiguous(shape), DType::F32),
            vector(st),
        )
    }
    fn fr_group_norm_backward(
        x: FlexTensor,
        stats: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        dy: FlexTensor,
        groups: usize,
        relu: bool,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        // ε is in the statistics
        let g = gn_geom(&x, groups, 0.0, relu);
        let shape = x.layout().shape().clone();
        let (dx, dga, dbe) = with_slice(&x, |xs| {
            with_slice(&stats, |st| {
                with_slice(&gamma, |ga| {
                    with_slice(&beta, |be| {
                        with_slice(&dy, |d| norm::backward(&g, xs, st, ga, be, d))
                    })
                })
            })
        });
        (
            FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32),
            vector(dga),
            vector(dbe),
        )
    }
}

#[derive(Debug)]
struct GnBackward;

impl<B: Backend + FrNorm> Backward<B, 3> for GnBackward {
    type State = (NodeId, FloatTensor<B>, NodeId, NodeId, usize, bool);
    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (xs, stats, gs, bs, groups, relu) = ops.state;
        let x = ck.retrieve_node_output::<FloatTensor<B>>(xs);
        let gamma = ck.retrieve_node_output::<FloatTensor<B>>(gs);
        let beta = ck.retrieve_node_output::<FloatTensor<B>>(bs);
        let (dx, dg, db) = B::fr_group_norm_backward(x, stats, gamma, beta, dy, groups, relu);
        let [px, pg, pb] = ops.parents.map(|p| p.map(|n| n.id));
        for (id, t) in [(px, dx), (pg, dg), (pb, db)] {
            if let Some(id) = id {
                grads.register::<B>(id, t);
            }
        }
    }
}

impl<B: Backend + FrNorm, C: CheckpointStrategy> FrNorm for Autodiff<B, C> {
    fn fr_group_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        groups: usize,
        eps: f64,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        match GnBackward
            .prepare::<C>([x.node(), gamma.node(), beta.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let (xs, gs, bs) = (
                    prep.checkpoint(&x),
                    prep.checkpoint(&gamma),
                    prep.checkpoint(&beta),
                );
                let (y, st) = B::fr_group_norm(
                    x.into_primitive(),
                    gamma.into_primitive(),
                    beta.into_primitive(),
                    groups,
                    eps,
                    relu,
                );
                let state = (xs, st.clone(), gs, bs, groups, relu);
                (
                    prep.finish(state, y),
                    <Self as AutodiffBackend>::from_inner(st),
                )
            }
            OpsKind::UnTracked(prep) => {
                let (y, st) = B::fr_group_norm(
                    x.into_primitive(),
                    gamma.into_primitive(),
                    beta.into_primitive(),
                    groups,
                    eps,
                    relu,
                );
                (prep.finish(y), <Self as AutodiffBackend>::from_inner(st))
            }
        }
    }
    fn fr_group_norm_backward(
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: usize,
        _: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        unimplemented!("second-order gradients of fedrun's group_norm")
    }
}
