//! fedrun's convolution as a burn backend extension: the flex side runs [`super::conv`] on the
//! tensors' memory (no copy when contiguous), the autodiff side records the op and computes both
//! gradients with the same kernels, as burn's own conv2d does (burn-autodiff `ops/module.rs`).

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::{FlexTensor, Layout};
use burn::backend::ops::ConvOptions;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Bytes, DType, Flex, Shape, backend_extension};

use super::conv::{self, Geom};
use super::ext::{tensor, with_slice};

#[backend_extension(
    Flex,
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrConv: Backend {
    /// `conv2d(x, w)`.
    #[fusion(dtype = x, shape = out_shape(x, w, o))]
    fn fr_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
    /// `conv2d(x, w) + b` (an `Option` argument does not pass through the 0.22.1 macro).
    #[fusion(dtype = x, shape = out_shape(x, w, o))]
    fn fr_conv2d_bias(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
    /// `dL/dx`.
    #[fusion(dtype = x, shape = x)]
    fn fr_conv2d_dx(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
    /// `(dL/dw, dL/db)`.
    #[fusion(meta = |_x, w, _dy, _o| (w.clone(), bias_spec(w)))]
    fn fr_conv2d_dwb(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);
}

/// The output shape `[n, cout, oh, ow]` of `conv2d(x, w)` (the fused backend's metadata).
#[allow(dead_code)]
fn out_shape(x: &Shape, w: &Shape, o: &ConvOptions<2>) -> Shape {
    let side = |i: usize, k: usize| {
        let (a, b) = o.padding[k - 2];
        (i + a + b - o.dilation[k - 2] * (w[k] - 1) - 1) / o.stride[k - 2] + 1
    };
    Shape::from(vec![x[0], w[0], side(x[2], 2), side(x[3], 3)])
}

/// The bias gradient's spec `[cout]` (the fused backend's metadata).
#[cfg(feature = "fusion")]
fn bias_spec(
    w: &burn::backend::fusion::custom::TensorSpec,
) -> burn::backend::fusion::custom::TensorSpec {
    burn::backend::fusion::custom::TensorSpec::new(Shape::from(vec![w.shape[0]]), w.dtype)
}

fn geom(x: &FlexTensor, w: &FlexTensor, o: &ConvOptions<2>) -> Geom {
    let (xs, ws) = (x.layout().shape(), w.layout().shape());
    Geom {
        n: xs[0],
        cin: xs[1],
        h: xs[2],
        w: xs[3],
        cout: ws[0],
        kh: ws[2],
        kw: ws[3],
        sh: o.stride[0],
        sw: o.stride[1],
        ph: o.padding[0].0,
        pw: o.padding[1].0,
    }
}

fn flex_forward(
    x: FlexTensor,
    w: FlexTensor,
    b: Option<FlexTensor>,
    o: ConvOptions<2>,
) -> FlexTensor {
    let g = geom(&x, &w, &o);
    let y = with_slice(&x, |xs| {
        with_slice(&w, |ws| match &b {
            Some(b) => with_slice(b, |bs| conv::forward(&g, xs, ws, Some(bs))),
            None => conv::forward(&g, xs, ws, None),
        })
    });
    tensor(y, &[g.n, g.cout, g.oh(), g.ow()])
}

impl FrConv for Flex {
    fn fr_conv2d(x: FlexTensor, w: FlexTensor, o: ConvOptions<2>) -> FlexTensor {
        flex_forward(x, w, None, o)
    }
    fn fr_conv2d_bias(
        x: FlexTensor,
        w: FlexTensor,
        b: FlexTensor,
        o: ConvOptions<2>,
    ) -> FlexTensor {
        flex_forward(x, w, Some(b), o)
    }
    fn fr_conv2d_dx(x: FlexTensor, w: FlexTensor, dy: FlexTensor, o: ConvOptions<2>) -> FlexTensor {
        let g = geom(&x, &w, &o);
        let dx = with_slice(&w, |ws| with_slice(&dy, |d| conv::input_grad(&g, ws, d)));
        tensor(dx, &[g.n, g.cin, g.h, g.w])
    }
    fn fr_conv2d_dwb(
        x: FlexTensor,
        w: FlexTensor,
        dy: FlexTensor,
        o: ConvOptions<2>,
    ) -> (FlexTensor, FlexTensor) {
        let g = geom(&x, &w, &o);
        let (dw, db) = with_slice(&x, |xs| with_slice(&dy, |d| conv::weight_grad(&g, xs, d)));
        let db = FlexTensor::new(
            Bytes::from_elems(db),
            Layout::contiguous(Shape::from(vec![g.cout])),
            DType::F32,
        );
        (tensor(dw, &[g.cout, g.cin, g.kh, g.kw]), db)
    }
}

#[derive(Debug)]
struct ConvBackward<const BIAS: bool>;

/// Registers the gradients of the parents that need one: `[x, w, b]`.
fn backward<B: Backend + FrConv>(
    parents: [Option<NodeId>; 3],
    state: (NodeId, NodeId, ConvOptions<2>),
    grads: &mut Gradients,
    ck: &mut Checkpointer,
    dy: FloatTensor<B>,
) {
    let (xs, ws, o) = state;
    let x = ck.retrieve_node_output::<FloatTensor<B>>(xs);
    let w = ck.retrieve_node_output::<FloatTensor<B>>(ws);
    let [nx, nw, nb] = parents;
    if let Some(id) = nx {
        grads.register::<B>(
            id,
            B::fr_conv2d_dx(x.clone(), w.clone(), dy.clone(), o.clone()),
        );
    }
    if nw.is_some() || nb.is_some() {
        let (dw, db) = B::fr_conv2d_dwb(x, w, dy, o);
        if let Some(id) = nw {
            grads.register::<B>(id, dw);
        }
        if let Some(id) = nb {
            grads.register::<B>(id, db);
        }
    }
}

impl<B: Backend + FrConv> Backward<B, 3> for ConvBackward<true> {
    type State = (NodeId, NodeId, ConvOptions<2>);
    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let ids = ops.parents.map(|p| p.map(|n| n.id));
        backward::<B>(ids, ops.state, grads, ck, dy);
    }
}

impl<B: Backend + FrConv> Backward<B, 2> for ConvBackward<false> {
    type State = (NodeId, NodeId, ConvOptions<2>);
    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let [px, pw] = ops.parents.map(|p| p.map(|n| n.id));
        backward::<B>([px, pw, None], ops.state, grads, ck, dy);
    }
}

impl<B: Backend + FrConv, C: CheckpointStrategy> FrConv for Autodiff<B, C> {
    fn fr_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self> {
        match ConvBackward::<false>
            .prepare::<C>([x.node(), w.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let (xs, ws) = (prep.checkpoint(&x), prep.checkpoint(&w));
                let y = B::fr_conv2d(x.into_primitive(), w.into_primitive(), o.clone());
                prep.finish((xs, ws, o), y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::fr_conv2d(x.into_primitive(), w.into_primitive(), o))
            }
        }
    }
    fn fr_conv2d_bias(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self> {
        match ConvBackward::<true>
            .prepare::<C>([x.node(), w.node(), b.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let (xs, ws) = (prep.checkpoint(&x), prep.checkpoint(&w));
                let y = B::fr_conv2d_bias(
                    x.into_primitive(),
                    w.into_primitive(),
                    b.into_primitive(),
                    o.clone(),
                );
                prep.finish((xs, ws, o), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_conv2d_bias(
                x.into_primitive(),
                w.into_primitive(),
                b.into_primitive(),
                o,
            )),
        }
    }
    fn fr_conv2d_dx(
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: ConvOptions<2>,
    ) -> FloatTensor<Self> {
        unimplemented!("second-order gradients of fedrun's conv2d")
    }
    fn fr_conv2d_dwb(
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: FloatTensor<Self>,
        _: ConvOptions<2>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        unimplemented!("second-order gradients of fedrun's conv2d")
    }
}
