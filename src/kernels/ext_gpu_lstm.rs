//! fedrun's LSTM layer on the GPU backends (cubecl's runtimes: wgpu, Vulkan, CUDA), the `Cube`
//! side of [`super::ext_lstm::FrRecurrent`]. A time step is two launches forward (the hidden
//! state's product with the recurrent weights, then one kernel for the whole cell: the four
//! gates' activations, the cell and hidden states) and two backward (one kernel for the cell's
//! gradients, then the product that carries the hidden state's gradient a step back); the
//! recurrent weights' gradient is one product over all steps at the end. Built from burn's ops,
//! the same step is a few dozen launches each way (docs/PERFORMANCE.md).
//!
//! The layer takes `xw` (`[rows, len, 4·hidden]`, the input projections with the biases, gates
//! i, f, g, o) and `wh` (`[hidden, 4·hidden]`), or a stack of copies (`[K, rows, len, 4·hidden]`
//! and `[K, hidden, 4·hidden]`): the rows of every copy run in the same launches.

use burn::backend::ops::FloatTensorOps;
use burn::backend::{DType, Shape, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::*;
use cubecl::{CubeDim, calculate_cube_count_elemwise};

use super::ext_lstm::FrRecurrent;

#[cube]
fn sigmoid<F: Float>(z: F) -> F {
    F::new(1.0) / (F::new(1.0) + F::exp(-z))
}

/// Step `t` of the layer, a thread per (row, unit): the gates from `xw`'s step `t` plus `hw`
/// (the previous hidden state times `wh`; unread at `t = 0`, whose state is zero), kept after
/// activation in `gates`; the cell state in `cells`, the hidden state in `hs` and in `h` (the
/// next step's product reads it whole).
#[cube(launch, create_dummy_kernel)]
fn lstm_step<F: Float>(
    xw: &Tensor<F>,
    hw: &Tensor<F>,
    gates: &mut Tensor<F>,
    cells: &mut Tensor<F>,
    hs: &mut Tensor<F>,
    h: &mut Tensor<F>,
    t: usize,
) {
    let (rows, len, hidden) = (hs.shape(0), hs.shape(1), hs.shape(2));
    if ABSOLUTE_POS >= rows * hidden {
        terminate!();
    }
    let (r, j) = (ABSOLUTE_POS / hidden, ABSOLUTE_POS % hidden);
    let g = (r * len + t) * 4 * hidden + j;
    let at = (r * len + t) * hidden + j;
    let mut zi = xw[g];
    let mut zf = xw[g + hidden];
    let mut zg = xw[g + 2 * hidden];
    let mut zo = xw[g + 3 * hidden];
    let mut before = F::new(0.0);
    if t > 0 {
        let q = r * 4 * hidden + j;
        zi += hw[q];
        zf += hw[q + hidden];
        zg += hw[q + 2 * hidden];
        zo += hw[q + 3 * hidden];
        before = cells[at - hidden];
    }
    let (i, f, c, o) = (
        sigmoid::<F>(zi),
        sigmoid::<F>(zf),
        F::tanh(zg),
        sigmoid::<F>(zo),
    );
    let cell = f * before + i * c;
    let out = o * F::tanh(cell);
    gates[g] = i;
    gates[g + hidden] = f;
    gates[g + 2 * hidden] = c;
    gates[g + 3 * hidden] = o;
    cells[at] = cell;
    hs[at] = out;
    h[r * hidden + j] = out;
}

/// The backward of step `t`, a thread per (row, unit): the hidden state's gradient is `dhs`'s
/// step `t` plus `dh` (carried from step `t + 1`; unread at the last step), the cell's is `dc`'s
/// (the same); writes the gates' pre-activation gradients into `dxw`'s step `t`, into `dg` (the
/// product that carries `dh` a step back reads it whole) and into `shifted`'s step `t − 1`
/// (zero at the last step), whose product with the hidden states is the recurrent weights'
/// gradient; leaves the cell's gradient for step `t − 1` in `dc`.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn lstm_step_back<F: Float>(
    gates: &Tensor<F>,
    cells: &Tensor<F>,
    dhs: &Tensor<F>,
    dh: &Tensor<F>,
    dc: &mut Tensor<F>,
    dxw: &mut Tensor<F>,
    dg: &mut Tensor<F>,
    shifted: &mut Tensor<F>,
    t: usize,
) {
    let (rows, len, hidden) = (cells.shape(0), cells.shape(1), cells.shape(2));
    if ABSOLUTE_POS >= rows * hidden {
        terminate!();
    }
    let (r, j) = (ABSOLUTE_POS / hidden, ABSOLUTE_POS % hidden);
    let g = (r * len + t) * 4 * hidden + j;
    let at = (r * len + t) * hidden + j;
    let mine = r * hidden + j;
    let last = t + 1 == len;
    let mut dht = dhs[at];
    let mut dct = F::new(0.0);
    if !last {
        dht += dh[mine];
        dct = dc[mine];
    }
    let mut before = F::new(0.0);
    if t > 0 {
        before = cells[at - hidden];
    }
    let (i, f, c, o) = (
        gates[g],
        gates[g + hidden],
        gates[g + 2 * hidden],
        gates[g + 3 * hidden],
    );
    let one = F::new(1.0);
    let tc = F::tanh(cells[at]);
    dct += dht * o * (one - tc * tc);
    let dzi = dct * c * i * (one - i);
    let dzf = dct * before * f * (one - f);
    let dzg = dct * i * (one - c * c);
    let dzo = dht * tc * o * (one - o);
    dc[mine] = dct * f;
    dxw[g] = dzi;
    dxw[g + hidden] = dzf;
    dxw[g + 2 * hidden] = dzg;
    dxw[g + 3 * hidden] = dzo;
    let q = r * 4 * hidden + j;
    dg[q] = dzi;
    dg[q + hidden] = dzf;
    dg[q + 2 * hidden] = dzg;
    dg[q + 3 * hidden] = dzo;
    if t > 0 {
        let p = g - 4 * hidden;
        shifted[p] = dzi;
        shifted[p + hidden] = dzf;
        shifted[p + 2 * hidden] = dzg;
        shifted[p + 3 * hidden] = dzo;
    }
    if last {
        let zero = F::new(0.0);
        shifted[g] = zero;
        shifted[g + hidden] = zero;
        shifted[g + 2 * hidden] = zero;
        shifted[g + 3 * hidden] = zero;
    }
}

/// The layer's sizes: copies, rows a copy, steps, hidden units.
#[derive(Clone, Copy)]
struct Dims {
    copies: usize,
    rows: usize,
    len: usize,
    hidden: usize,
}

impl Dims {
    /// The sizes read off `s` (`[rows, len, w·H]` or `[K, rows, len, w·H]`): `w` is 4 for
    /// `xw`, 1 for the hidden states.
    fn of(s: &Shape, w: usize) -> Self {
        let (copies, at) = match s.num_dims() {
            3 => (1, 0),
            4 => (s[0], 1),
            n => panic!("fedrun's LSTM layer takes a rank-3 or rank-4 input, not rank {n}"),
        };
        Dims {
            copies,
            rows: s[at],
            len: s[at + 1],
            hidden: s[at + 2] / w,
        }
    }

    /// `[K, rows·a, b]`, the copies' products' shape.
    fn per_copy(&self, a: usize, b: usize) -> Shape {
        Shape::from(vec![self.copies, self.rows * a, b])
    }

    /// `[K·rows, len, w]`, the kernels' view of a sequence tensor.
    fn seq(&self, w: usize) -> Shape {
        Shape::from(vec![self.copies * self.rows, self.len, w])
    }

    /// The launch geometry: a thread per (row, unit).
    fn launch(&self, like: &CubeTensor) -> (CubeCount, CubeDim) {
        let n = self.copies * self.rows * self.hidden;
        let dim = CubeDim::new(&like.client, n);
        (calculate_cube_count_elemwise(&like.client, n, dim), dim)
    }
}

/// A new contiguous f32 tensor of `shape` beside `like`.
fn alloc(like: &CubeTensor, shape: Shape) -> CubeTensor {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, DType::F32)
}

fn reshape(t: CubeTensor, shape: Shape) -> CubeTensor {
    CubeBackend::float_reshape(into_contiguous(t), shape)
}

fn f32_only(t: &CubeTensor) {
    assert!(
        t.dtype == DType::F32,
        "fedrun's LSTM layer runs in f32, not {:?}",
        t.dtype
    );
}

/// The layer forward: `(hs, gates, cells)`, the hidden states shaped as `xw` with `hidden`
/// last, the gates after activation and the cell states kept for the backward pass.
fn forward(xw: CubeTensor, wh: CubeTensor) -> (CubeTensor, CubeTensor, CubeTensor) {
    f32_only(&xw);
    let (d, out_shape) = (Dims::of(&xw.shape(), 4), hidden_shape(&xw.shape()));
    let xw_shape = xw.shape();
    let xw = reshape(xw, d.seq(4 * d.hidden));
    let wh = reshape(wh, Shape::from(vec![d.copies, d.hidden, 4 * d.hidden]));
    let (hs, gates, cells) = (
        alloc(&xw, d.seq(d.hidden)),
        alloc(&xw, d.seq(4 * d.hidden)),
        alloc(&xw, d.seq(d.hidden)),
    );
    let (count, dim) = d.launch(&xw);
    let mut hw = xw.clone();
    for t in 0..d.len {
        let h = alloc(&xw, d.per_copy(1, d.hidden));
        lstm_step::launch::<f32>(
            &xw.client,
            count.clone(),
            dim,
            xw.clone().into_tensor_arg(),
            hw.clone().into_tensor_arg(),
            gates.clone().into_tensor_arg(),
            cells.clone().into_tensor_arg(),
            hs.clone().into_tensor_arg(),
            h.clone().into_tensor_arg(),
            t,
        );
        if t + 1 < d.len {
            hw = into_contiguous(CubeBackend::float_matmul(h, wh.clone()));
        }
    }
    // shaped as `xw` and the hidden states (as the fused backend's metadata says)
    (
        CubeBackend::float_reshape(hs, out_shape.clone()),
        CubeBackend::float_reshape(gates, xw_shape),
        CubeBackend::float_reshape(cells, out_shape),
    )
}

/// `xw`'s shape with its last axis a quarter as long: the hidden states'.
fn hidden_shape(xw: &Shape) -> Shape {
    let mut dims = xw.to_vec();
    if let Some(last) = dims.last_mut() {
        *last /= 4;
    }
    Shape::from(dims)
}

/// The layer backward from the forward's outputs: `(dL/dxw, dL/dwh)`, shaped as `xw` and `wh`.
fn backward(
    wh: CubeTensor,
    hs: CubeTensor,
    gates: CubeTensor,
    cells: CubeTensor,
    dhs: CubeTensor,
) -> (CubeTensor, CubeTensor) {
    let (wh_shape, d) = (wh.shape(), Dims::of(&hs.shape(), 1));
    let mut xw_shape = hs.shape().to_vec();
    if let Some(last) = xw_shape.last_mut() {
        *last *= 4;
    }
    let wh = reshape(wh, Shape::from(vec![d.copies, d.hidden, 4 * d.hidden]));
    let wt = CubeBackend::float_transpose(wh);
    let dhs = reshape(dhs, d.seq(d.hidden));
    let (gates, cells) = (
        reshape(gates, d.seq(4 * d.hidden)),
        reshape(cells, d.seq(d.hidden)),
    );
    let (dxw, shifted, dc) = (
        alloc(&dhs, d.seq(4 * d.hidden)),
        alloc(&dhs, d.seq(4 * d.hidden)),
        alloc(&dhs, d.per_copy(1, d.hidden)),
    );
    let (count, dim) = d.launch(&dhs);
    let mut dh = dhs.clone();
    for t in (0..d.len).rev() {
        let dg = alloc(&dhs, d.per_copy(1, 4 * d.hidden));
        lstm_step_back::launch::<f32>(
            &dhs.client,
            count.clone(),
            dim,
            gates.clone().into_tensor_arg(),
            cells.clone().into_tensor_arg(),
            dhs.clone().into_tensor_arg(),
            dh.into_tensor_arg(),
            dc.clone().into_tensor_arg(),
            dxw.clone().into_tensor_arg(),
            dg.clone().into_tensor_arg(),
            shifted.clone().into_tensor_arg(),
            t,
        );
        dh = match t {
            0 => dhs.clone(),
            _ => into_contiguous(CubeBackend::float_matmul(dg, wt.clone())),
        };
    }
    // Σ_t h_{t−1}ᵀ·dg_t: the hidden states against the gradients shifted a step back
    let hs = reshape(hs, d.per_copy(d.len, d.hidden));
    let shifted = CubeBackend::float_reshape(shifted, d.per_copy(d.len, 4 * d.hidden));
    let dwh = CubeBackend::float_matmul(CubeBackend::float_transpose(hs), shifted);
    (
        CubeBackend::float_reshape(dxw, Shape::from(xw_shape)),
        CubeBackend::float_reshape(into_contiguous(dwh), wh_shape),
    )
}

impl FrRecurrent for CubeBackend {
    fn fr_lstm(
        xw: CubeTensor,
        wh: CubeTensor,
        _keep: bool,
    ) -> (CubeTensor, CubeTensor, CubeTensor) {
        forward(xw, wh)
    }
    fn fr_lstm_backward(
        wh: CubeTensor,
        hs: CubeTensor,
        gates: CubeTensor,
        cells: CubeTensor,
        dhs: CubeTensor,
    ) -> (CubeTensor, CubeTensor) {
        backward(wh, hs, gates, cells, dhs)
    }
}

/// The two kernels as a time step of 4 sequences of 80 characters of FedDyn's 100-unit layer
/// launches them, for their CUDA source ([`super::cuda_source`]).
#[cfg(feature = "cuda")]
pub(super) fn dummies(d: &super::cuda_dummy::Dummy) -> Vec<Box<dyn cubecl::CubeKernel>> {
    let (rows, len, hidden) = (4, 80, 100);
    let seq = |w: usize| d.tensor(&[rows, len, w]);
    let step = |w: usize| d.tensor(&[1, rows, w]);
    vec![
        Box::new(lstm_step::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            d.count(rows * hidden),
            d.dim(),
            seq(4 * hidden),
            step(4 * hidden),
            seq(4 * hidden),
            seq(hidden),
            seq(hidden),
            step(hidden),
            1,
        )),
        Box::new(lstm_step_back::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            d.count(rows * hidden),
            d.dim(),
            seq(4 * hidden),
            seq(hidden),
            seq(hidden),
            step(hidden),
            step(hidden),
            seq(4 * hidden),
            step(4 * hidden),
            seq(4 * hidden),
            1,
        )),
    ]
}
