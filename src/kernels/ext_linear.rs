//! fedrun's dense layer for small batches ([`super::linear`]) as a burn backend extension, beside
//! [`super::ext`]'s: the flex side runs the kernel on the tensors' memory; the autodiff side
//! records the op and computes the three gradients with the same kernel.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, backend_extension};

use super::ext::{tensor, with_slice};
use super::linear::{self, Dense};

#[backend_extension(Flex, Autodiff)]
pub trait CpuLinear: Backend {
    /// `x·w + b` for `x` `[m, k]`, `w` `[k, n]` (burn's `Linear` layout), `b` `[n]`.
    fn fr_linear(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
    /// `(dL/dx, dL/dw, dL/db)` of [`CpuLinear::fr_linear`].
    fn fr_linear_backward(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
}

fn dense(x: &FlexTensor, w: &FlexTensor) -> Dense {
    let (xs, ws) = (x.layout().shape(), w.layout().shape());
    Dense {
        m: xs[0],
        k: xs[1],
        n: ws[1],
    }
}

impl CpuLinear for Flex {
    fn fr_linear(x: FlexTensor, w: FlexTensor, b: FlexTensor) -> FlexTensor {
        let d = dense(&x, &w);
        let y = with_slice(&x, |xs| {
            with_slice(&w, |ws| {
                with_slice(&b, |bs| linear::forward(&d, xs, ws, bs))
            })
        });
        tensor(y, &[d.m, d.n])
    }
    fn fr_linear_backward(
        x: FlexTensor,
        w: FlexTensor,
        dy: FlexTensor,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        let d = dense(&x, &w);
        let (dx, dw, db) = with_slice(&x, |xs| {
            with_slice(&w, |ws| {
                with_slice(&dy, |g| linear::backward(&d, xs, ws, g))
            })
        });
        (
            tensor(dx, &[d.m, d.k]),
            tensor(dw, &[d.k, d.n]),
            tensor(db, &[d.n]),
        )
    }
}

#[derive(Debug)]
struct LinearBackward;

impl<B: Backend + CpuLinear> Backward<B, 3> for LinearBackward {
    /// `x`'s and `w`'s nodes.
    type State = (NodeId, NodeId);
    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let (xs, ws) = ops.state;
        let x = ck.retrieve_node_output::<FloatTensor<B>>(xs);
        let w = ck.retrieve_node_output::<FloatTensor<B>>(ws);
        let (dx, dw, db) = B::fr_linear_backward(x, w, dy);
        let [px, pw, pb] = ops.parents.map(|p| p.map(|n| n.id));
        for (id, t) in [(px, dx), (pw, dw), (pb, db)] {
            if let Some(id) = id {
                grads.register::<B>(id, t);
            }
        }
    }
}

impl<B: Backend + CpuLinear, C: CheckpointStrategy> CpuLinear for Autodiff<B, C> {
    fn fr_linear(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        match LinearBackward
            .prepare::<C>([x.node(), w.node(), b.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let (xs, ws) = (prep.checkpoint(&x), prep.checkpoint(&w));
                let y = B::fr_linear(x.into_primitive(), w.into_primitive(), b.into_primitive());
                prep.finish((xs, ws), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_linear(
                x.into_primitive(),
                w.into_primitive(),
                b.into_primitive(),
            )),
        }
    }
    fn fr_linear_backward(
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        unimplemented!("second-order gradients of fedrun's linear layer")
    }
}
