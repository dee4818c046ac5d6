//! The K copies' columns (im2col) as a burn backend extension: the gather of the cohort's
//! batched convolution ([`super::batched_conv`]) and its adjoint (col2im), each one kernel on the
//! GPU backends (`ext_gpu_columns.rs`), with the copies' layout the batched product takes
//! (`[K, c·kh·kw, n·L]`, the samples side by side) written directly.
//!
//! The adjoint is a gather too: each input value sums the columns that read it, at most
//! `kh·kw`, in the kernel's order. Through burn's ops the columns were an indexed `select`, whose
//! backward (`select_assign`) runs a thread per gathered row looping over the whole index
//! (ResNet-18's first stage at K = 10 and batch 50: 32,000 threads of 9,216 read-modify-write
//! steps each, at a quarter of a GPU's threads), after a zero fill, a copy out of the samples'
//! layout and a slice dropping the padding's zero. The sums here are the same as that
//! scatter-add's, in the same order (every input value starts at zero and adds its columns by
//! kernel position), so the values are too.

use burn::backend::TensorMetadata;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::ConvOptions;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Flex, Shape, backend_extension};
use burn::tensor::Tensor;

use super::ext::{tensor, with_slice};

/// The copies' columns of `x` `[n, K·c, h, w]` (copy i's maps are channels `i·c..(i+1)·c`) for
/// a `kernel` with `o`'s stride and padding (dilation 1, `o.groups` = K):
/// `[K, c·kh·kw, n·oh·ow]`, row `(channel, ky, kx)`, column `(sample, oy, ox)`, zero where the
/// kernel reads the padding. Under autodiff its backward is [`FrColumns::fr_columns_adjoint`].
pub fn columns(x: Tensor<4>, kernel: [usize; 2], o: &ConvOptions<2>) -> Tensor<3> {
    type D = burn::backend::Dispatch;
    Tensor::from_dispatch(<D as FrColumns>::fr_columns(
        x.into_dispatch(),
        kernel,
        o.clone(),
    ))
}

#[backend_extension(
    Flex,
    Cube: cfg(any(feature = "wgpu", feature = "cuda")),
    Autodiff,
    Fusion: cfg(feature = "fusion")
)]
pub trait FrColumns: Backend {
    /// The copies' columns of `x` ([`columns`]).
    #[fusion(dtype = x, shape = columns_shape(x, kernel, o))]
    fn fr_columns(x: FloatTensor<Self>, kernel: [usize; 2], o: ConvOptions<2>)
    -> FloatTensor<Self>;
    /// The columns' adjoint: from `d` of the columns' shape, the maps of `dims`
    /// (`[n, K·c, h, w]`) where each value is the sum of the columns that read it.
    #[fusion(dtype = d, shape = Shape::from(dims.to_vec()))]
    fn fr_columns_adjoint(
        d: FloatTensor<Self>,
        dims: [usize; 4],
        kernel: [usize; 2],
        o: ConvOptions<2>,
    ) -> FloatTensor<Self>;
}

/// A columns op's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cols {
    /// Copies, channels a copy, samples.
    pub k: usize,
    pub c: usize,
    pub n: usize,
    /// The input map, the kernel, the stride, the padding before, the output map.
    pub map: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub out: [usize; 2],
}

impl Cols {
    /// The sizes for maps of `dims` (`[n, K·c, h, w]`); the columns read no dilated kernel.
    pub fn new(dims: [usize; 4], kernel: [usize; 2], o: &ConvOptions<2>) -> Self {
        assert_eq!(o.dilation, [1, 1], "the copies' columns take no dilation");
        let [n, kc, h, w] = dims;
        let k = o.groups.max(1);
        let side = |i: usize, m: usize| {
            let (a, b) = o.padding[i];
            (m + a + b - kernel[i]) / o.stride[i] + 1
        };
        Cols {
            k,
            c: kc / k,
            n,
            map: [h, w],
            kernel,
            stride: o.stride,
            pad: [o.padding[0].0, o.padding[1].0],
            out: [side(0, h), side(1, w)],
        }
    }

    /// The columns' shape `[K, c·kh·kw, n·oh·ow]`.
    pub fn columns(&self) -> [usize; 3] {
        let l = self.out[0] * self.out[1];
        [self.k, self.c * self.kernel[0] * self.kernel[1], self.n * l]
    }

    /// The maps' shape `[n, K·c, h, w]`.
    pub fn maps(&self) -> [usize; 4] {
        [self.n, self.k * self.c, self.map[0], self.map[1]]
    }

    /// The input position read at output `(oy, ox)` by kernel position `(ky, kx)`, None in the
    /// padding.
    fn read(&self, [oy, ox]: [usize; 2], [ky, kx]: [usize; 2]) -> Option<usize> {
        let y = (oy * self.stride[0] + ky).checked_sub(self.pad[0])?;
        let x = (ox * self.stride[1] + kx).checked_sub(self.pad[1])?;
        (y < self.map[0] && x < self.map[1]).then_some(y * self.map[1] + x)
    }

    /// Calls `f(column index, map index)` for every column value that reads the maps, in the
    /// columns' order (so each map value's columns come by kernel position).
    fn each(&self, mut f: impl FnMut(usize, usize)) {
        let ([kh, kw], [oh, ow], hw) = (self.kernel, self.out, self.map[0] * self.map[1]);
        let mut at = 0;
        for k in 0..self.k {
            for ci in 0..self.c {
                for (ky, kx) in (0..kh).flat_map(|ky| (0..kw).map(move |kx| (ky, kx))) {
                    for s in 0..self.n {
                        let base = (s * self.k * self.c + k * self.c + ci) * hw;
                        for (oy, ox) in (0..oh).flat_map(|oy| (0..ow).map(move |ox| (oy, ox))) {
                            if let Some(p) = self.read([oy, ox], [ky, kx]) {
                                f(at, base + p);
                            }
                            at += 1;
                        }
                    }
                }
            }
        }
    }
}

/// The fused backend's metadata: the columns' shape.
#[allow(dead_code)]
fn columns_shape(x: &Shape, kernel: &[usize; 2], o: &ConvOptions<2>) -> Shape {
    let g = Cols::new(dims4(x), *kernel, o);
    Shape::from(g.columns().to_vec())
}

/// A four-axis shape's dims.
pub(super) fn dims4(s: &Shape) -> [usize; 4] {
    [s[0], s[1], s[2], s[3]]
}

impl FrColumns for Flex {
    fn fr_columns(x: FlexTensor, kernel: [usize; 2], o: ConvOptions<2>) -> FlexTensor {
        let g = Cols::new(dims4(&x.shape()), kernel, &o);
        let dims = g.columns();
        let mut out = vec![0f32; dims.iter().product()];
        with_slice(&x, |xs| g.each(|at, from| out[at] = xs[from]));
        tensor(out, &dims)
    }
    fn fr_columns_adjoint(
        d: FlexTensor,
        dims: [usize; 4],
        kernel: [usize; 2],
        o: ConvOptions<2>,
    ) -> FlexTensor {
        let g = Cols::new(dims, kernel, &o);
        let mut dx = vec![0f32; g.maps().iter().product()];
        with_slice(&d, |ds| g.each(|at, to| dx[to] += ds[at]));
        tensor(dx, &g.maps())
    }
}

#[derive(Debug)]
struct ColumnsBackward;

impl<B: Backend + FrColumns> Backward<B, 1> for ColumnsBackward {
    /// The maps' dims, the kernel and the options.
    type State = ([usize; 4], [usize; 2], ConvOptions<2>);
    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let d = grads.consume::<B>(&ops.node);
        let (dims, kernel, o) = ops.state;
        if let [Some(parent)] = ops.parents {
            grads.register::<B>(parent.id, B::fr_columns_adjoint(d, dims, kernel, o));
        }
    }
}

impl<B: Backend + FrColumns, C: CheckpointStrategy> FrColumns for Autodiff<B, C> {
    fn fr_columns(
        x: FloatTensor<Self>,
        kernel: [usize; 2],
        o: ConvOptions<2>,
    ) -> FloatTensor<Self> {
        let dims = dims4(&x.shape());
        match ColumnsBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let y = B::fr_columns(x.into_primitive(), kernel, o.clone());
                prep.finish((dims, kernel, o), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fr_columns(x.into_primitive(), kernel, o)),
        }
    }
    fn fr_columns_adjoint(
        _: FloatTensor<Self>,
        _: [usize; 4],
        _: [usize; 2],
        _: ConvOptions<2>,
    ) -> FloatTensor<Self> {
        unimplemented!("second-order gradients of the copies' columns")
    }
}
