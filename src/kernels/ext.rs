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
use burn::backend::{
    Autodiff, AutodiffBackend, Backend, Bytes, DType, Flex, Shape, backend_extension,
};

use super::conv::{self, Geom};
use super::norm::{self, Gn};
use super::pool::{self, Pool};

#[backend_extension(Flex, Autodiff)]
pub trait CpuKernels: Backend {
    /// `conv2d(x, w)`.
    fn fr_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
    /// `conv2d(x, w) + b` (an `Option` argument does not pass through the 0.22.1 macro).
    fn fr_conv2d_bias(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
    /// `dL/dx`.
    fn fr_conv2d_dx(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
    /// `(dL/dw, dL/db)`.
    fn fr_conv2d_dwb(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        o: ConvOptions<2>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);
    /// `(GroupNorm(x)·gamma + beta [then max(0, ·)], each (sample, group)'s mean and 1/σ)`.
    fn fr_group_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        groups: usize,
        eps: f64,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);
    /// `(dL/dx, dL/dgamma, dL/dbeta)` of [`CpuKernels::fr_group_norm`], from its statistics.
    fn fr_group_norm_backward(
        x: FloatTensor<Self>,
        stats: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        groups: usize,
        relu: bool,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
    /// `max_pool2d(x)`, window `k`, stride `s`, no padding [ceil mode] [then `max(0, ·)`].
    fn fr_max_pool2d(
        x: FloatTensor<Self>,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FloatTensor<Self>;
    /// `dL/dx` of [`CpuKernels::fr_max_pool2d`].
    fn fr_max_pool2d_dx(
        x: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        k: [usize; 2],
        s: [usize; 2],
        relu: bool,
        ceil: bool,
    ) -> FloatTensor<Self>;
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

/// The f32 data of `t`, borrowed when contiguous.
pub(super) fn with_slice<R>(t: &FlexTensor, f: impl FnOnce(&[f32]) -> R) -> R {
    match t.as_slice::<f32>() {
        Some(s) => f(s),
        None => f(t.to_contiguous().as_slice::<f32>().expect("contiguous f32")),
    }
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

fn vector(v: Vec<f32>) -> FlexTensor {
    let n = v.len();
    tensor(v, &[n])
}

/// A contiguous f32 flex tensor of `shape` that owns `v` (no copy).
pub(super) fn tensor(v: Vec<f32>, shape: &[usize]) -> FlexTensor {
    FlexTensor::new(
        Bytes::from_elems(v),
        Layout::contiguous(Shape::from(shape.to_vec())),
        DType::F32,
    )
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

impl CpuKernels for Flex {
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
struct GnBackward;

impl<B: Backend + CpuKernels> Backward<B, 3> for GnBackward {
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

#[derive(Debug)]
struct PoolBackward;

impl<B: Backend + CpuKernels> Backward<B, 1> for PoolBackward {
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

#[derive(Debug)]
struct ConvBackward<const BIAS: bool>;

/// Registers the gradients of the parents that need one: `[x, w, b]`.
fn backward<B: Backend + CpuKernels>(
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

impl<B: Backend + CpuKernels> Backward<B, 3> for ConvBackward<true> {
    type State = (NodeId, NodeId, ConvOptions<2>);
    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let ids = ops.parents.map(|p| p.map(|n| n.id));
        backward::<B>(ids, ops.state, grads, ck, dy);
    }
}

impl<B: Backend + CpuKernels> Backward<B, 2> for ConvBackward<false> {
    type State = (NodeId, NodeId, ConvOptions<2>);
    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let [px, pw] = ops.parents.map(|p| p.map(|n| n.id));
        backward::<B>([px, pw, None], ops.state, grads, ck, dy);
    }
}

impl<B: Backend + CpuKernels, C: CheckpointStrategy> CpuKernels for Autodiff<B, C> {
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
