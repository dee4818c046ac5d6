//! fedrun's LSTM layer as a burn backend extension, beside [`super::ext`] and
//! [`super::ext_act`]: the flex side runs [`super::lstm`] on the tensors' memory, the GPU side
//! (cubecl's runtimes) one launch a layer each way (`ext_gpu_lstm.rs`); the autodiff side
//! records the whole recurrence as one node that keeps the gates, the cell states and the
//! output for its backward pass through time.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, AutodiffBackend, Backend, Flex, backend_extension};

use super::ext::{tensor, with_slice};
use super::lstm::{self, Kept, Seq};

#[backend_extension(
    Flex,
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrRecurrent: Backend {
    /// One LSTM layer over `xw` (`[batch, len, 4·hidden]`, the input projections with the
    /// biases, gates i, f, g, o) and `wh` (`[hidden, 4·hidden]`), zero initial states:
    /// `(hidden states [batch, len, hidden], gates after activation, cell states)`, the last
    /// two what the backward pass needs if `keep` (else scratch). The GPU side also takes a
    /// stack of copies, `[K, batch, len, 4·hidden]` and `[K, hidden, 4·hidden]`.
    #[fusion(meta = |xw, _wh, _keep| lstm_spec(xw))]
    fn fr_lstm(
        xw: FloatTensor<Self>,
        wh: FloatTensor<Self>,
        keep: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
    /// `(dL/dxw, dL/dwh)` of [`FrRecurrent::fr_lstm`], from its outputs.
    #[fusion(meta = |wh, _hs, gates, _cells, _dhs| (gates.clone(), wh.clone()))]
    fn fr_lstm_backward(
        wh: FloatTensor<Self>,
        hs: FloatTensor<Self>,
        gates: FloatTensor<Self>,
        cells: FloatTensor<Self>,
        dhs: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);
}

/// The GPU side's outputs' specs (the fused backend's metadata): the hidden states (`xw`'s shape,
/// a quarter as wide), the gates (`xw`'s), the cell states (the hidden states').
#[cfg(feature = "fusion")]
fn lstm_spec(xw: &burn::backend::fusion::custom::TensorSpec) -> (Spec, Spec, Spec) {
    let mut dims = xw.shape.to_vec();
    if let Some(last) = dims.last_mut() {
        *last /= 4;
    }
    let hs = Spec::new(burn::backend::Shape::from(dims), xw.dtype);
    (hs.clone(), xw.clone(), hs)
}

#[cfg(feature = "fusion")]
type Spec = burn::backend::fusion::custom::TensorSpec;

fn seq(xw: &FlexTensor) -> Seq {
    let s = xw.layout().shape();
    Seq {
        batch: s[0],
        len: s[1],
        hidden: s[2] / 4,
    }
}

impl FrRecurrent for Flex {
    fn fr_lstm(xw: FlexTensor, wh: FlexTensor, keep: bool) -> (FlexTensor, FlexTensor, FlexTensor) {
        let s = seq(&xw);
        let (hs, kept) = with_slice(&xw, |x| with_slice(&wh, |w| lstm::forward(&s, x, w, keep)));
        let (ng, nc) = (kept.gates.len(), kept.cells.len());
        (
            tensor(hs, &[s.batch, s.len, s.hidden]),
            tensor(kept.gates, &[ng]),
            tensor(kept.cells, &[nc]),
        )
    }
    fn fr_lstm_backward(
        wh: FlexTensor,
        hs: FlexTensor,
        gates: FlexTensor,
        cells: FlexTensor,
        dhs: FlexTensor,
    ) -> (FlexTensor, FlexTensor) {
        let (hs_shape, h4) = (hs.layout().shape(), 4 * wh.layout().shape()[0]);
        let s = Seq {
            batch: hs_shape[0],
            len: hs_shape[1],
            hidden: h4 / 4,
        };
        let (dxw, dwh) = with_slice(&gates, |gates| {
            with_slice(&cells, |cells| {
                let k = Kept { gates, cells };
                with_slice(&wh, |w| {
                    with_slice(&hs, |h| {
                        with_slice(&dhs, |d| lstm::backward(&s, w, h, k, d))
                    })
                })
            })
        });
        (
            tensor(dxw, &[s.batch, s.len, 4 * s.hidden]),
            tensor(dwh, &[s.hidden, 4 * s.hidden]),
        )
    }
}

#[derive(Debug)]
struct LstmBackward;

impl<B: Backend + FrRecurrent> Backward<B, 2> for LstmBackward {
    /// `wh`'s node, then the output, the gates and the cell states.
    type State = (NodeId, FloatTensor<B>, FloatTensor<B>, FloatTensor<B>);
    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dhs = grads.consume::<B>(&ops.node);
        let (ws, hs, gates, cells) = ops.state;
        let wh = ck.retrieve_node_output::<FloatTensor<B>>(ws);
        let (dxw, dwh) = B::fr_lstm_backward(wh, hs, gates, cells, dhs);
        let [px, pw] = ops.parents.map(|p| p.map(|n| n.id));
        for (id, t) in [(px, dxw), (pw, dwh)] {
            if let Some(id) = id {
                grads.register::<B>(id, t);
            }
        }
    }
}

impl<B: Backend + FrRecurrent, C: CheckpointStrategy> FrRecurrent for Autodiff<B, C> {
    fn fr_lstm(
        xw: FloatTensor<Self>,
        wh: FloatTensor<Self>,
        _keep: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let inner = <Self as AutodiffBackend>::from_inner;
        match LstmBackward
            .prepare::<C>([xw.node(), wh.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let ws = prep.checkpoint(&wh);
                let (hs, g, c) = B::fr_lstm(xw.into_primitive(), wh.into_primitive(), true);
                let state = (ws, hs.clone(), g.clone(), c.clone());
                (prep.finish(state, hs), inner(g), inner(c))
            }
            OpsKind::UnTracked(prep) => {
                let (hs, g, c) = B::fr_lstm(xw.into_primitive(), wh.into_primitive(), false);
                (prep.finish(hs), inner(g), inner(c))
            }
        }
    }
    fn fr_lstm_backward(
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        unimplemented!("second-order gradients of fedrun's LSTM")
    }
}
