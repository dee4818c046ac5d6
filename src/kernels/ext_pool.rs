//! fedrun's max-pooling (with its ReLU fused where the model has one) as a burn backend
//! extension: the flex side runs [`super::pool`], the autodiff side recomputes the arg-max in
//! the backward pass from the input it keeps.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, backend_extension};

use super::ext::{tensor, with_slice};
use super::pool::{self, Pool};

#[backend_extension(Flex, Autodiff)]
pub trait CpuPool: Backend {
    /// `max_pool2d(x)`, window `k`, stride `s`, no padding [ceil mode] [then `max(0, ·)`].
    fn fr_max_pool2d(
        x: FloatTensor<Self>,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FloatTensor<Self>;
    /// `dL/dx` of [`CpuPool::fr_max_pool2d`].
    fn fr_max_pool2d_dx(
        x: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FloatTensor<Self>;
}

fn pool_geom(
    x: &FlexTensor,
    k: [usize; 2],
    s: [usize; 2],
    relu: bool,
    ceil: bool,
) -> (Pool, [usize; 2]) {
    let xs = x.layout().shape();
    let p = Pool {
        planes: xs[0] * xs[1],
        h: xs[2],
        w: xs[3],
        k,
        s,
        relu,
        ceil,
    };
    (p, [xs[0], xs[1]])
}

impl CpuPool for Flex {
    fn fr_max_pool2d(
        x: FlexTensor,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FlexTensor {
        let (p, [n, c]) = pool_geom(&x, k, s, relu, ceil);
        let y = with_slice(&x, |xs| pool::forward(&p, xs));
        tensor(y, &[n, c, p.oh(), p.ow()])
    }
    fn fr_max_pool2d_dx(
        x: FlexTensor,
        dy: FlexTensor,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FlexTensor {
        let (p, [n, c]) = pool_geom(&x, k, s, relu, ceil);
        let dx = with_slice(&x, |xs| with_slice(&dy, |d| pool::backward(&p, xs, d)));
        tensor(dx, &[n, c, p.h, p.w])
    }
}

#[derive(Debug)]
struct PoolBackward;

impl<B: Backend + CpuPool> Backward<B, 1> for PoolBackward {
    type State = (NodeId, [usize; 2], [usize; 2], bool, bool);
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (xs, k, s, relu, ceil) = ops.state;
        let x = ck.retrieve_node_output::<FloatTensor<B>>(xs);
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::fr_max_pool2d_dx(x, dy, k, s, relu, ceil));
        }
    }
}

impl<B: Backend + CpuPool, C: CheckpointStrategy> CpuPool for Autodiff<B, C> {
    fn fr_max_pool2d(
        x: FloatTensor<Self>,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FloatTensor<Self> {
        match PoolBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let xs = prep.checkpoint(&x);
                let y = B::fr_max_pool2d(x.into_primitive(), k, s, relu, ceil);
                prep.finish((xs, k, s, relu, ceil), y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::fr_max_pool2d(x.into_primitive(), k, s, relu, ceil))
            }
        }
    }
    fn fr_max_pool2d_dx(
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: [usize; 2],
        _: [usize; 2],
        _: bool,
        _: bool,
    ) -> FloatTensor<Self> {
        unimplemented!("second-order gradients of fedrun's max_pool2d")
    }
}
