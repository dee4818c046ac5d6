//! fedrun's LSTM layer on the GPU backends (cubecl's runtimes: wgpu, Vulkan, CUDA), the `Cube`
//! side of [`super::ext_lstm::FrRecurrent`]. The whole recurrence is one launch each way: a cube
//! runs every time step of a few sequences of one copy in turn (1 to 8, [`MAX_PER_CUBE`]), a
//! unit per hidden unit (looping past the cube's size), and its units meet at a barrier between
//! steps, since a step reads the whole previous hidden state (forward) or the whole gate
//! gradient (backward) of its own sequence and no other's. The recurrent weights' gradient is
//! one product over all steps at the end. A sequence's steps never wait on another sequence, so
//! nothing crosses cubes. Built from burn's ops, a time step is a few dozen launches each way;
//! as a product and a cell kernel a step, it is four (docs/PERFORMANCE.md compares them).
//!
//! The layer takes `xw` (`[rows, len, 4·hidden]`, the input projections with the biases, gates
//! i, f, g, o) and `wh` (`[hidden, 4·hidden]`), or a stack of copies (`[K, rows, len, 4·hidden]`
//! and `[K, hidden, 4·hidden]`): every sequence of every copy runs in the same launch, each
//! reading its copy's weights.
//!
//! Each gate's recurrent term is summed over the hidden units in order, `Σ_k h_k·w_kj`, then
//! added to `xw`'s (and the carried hidden gradient `Σ_m dz_m·w_jm` in order), so a sequence's
//! values do not depend on how many sequences or copies share the launch: a cohort's copy gives
//! the values of the same client alone, bit for bit.

use burn::backend::ops::FloatTensorOps;
use burn::backend::{DType, Shape, TensorMetadata};
use burn_cubecl::CubeBackend;
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use cubecl::CubeDim;
use cubecl::prelude::*;

use super::ext_lstm::FrRecurrent;
use super::gpu_grid::{alloc, cubes};

/// The most units a cube of the layer's kernels has (a hidden layer wider loops over it).
const MAX_THREADS: usize = 256;

/// The most sequences a cube runs, each recurrent weight read once for all of them: a cube
/// runs 1, 2, 4 or 8, the most that leaves at least [`MIN_CUBES`] cubes (an H100 has 132
/// multiprocessors). A training step's 50 sequences run one a cube; an evaluation batch of
/// 1,000, 8 a cube. A sequence's sums are the same whatever the count.
const MAX_PER_CUBE: usize = 8;

/// See [`MAX_PER_CUBE`].
const MIN_CUBES: usize = 96;

#[cube]
fn sigmoid<F: Float>(z: F) -> F {
    F::new(1.0) / (F::new(1.0) + F::exp(-z))
}

/// The sequences of cube `cube` when each holds up to `per` of a copy's `rows` sequences:
/// `(first, end, w0)`, its first sequence, one past its copy's last sequence (the cube's are
/// those of `first .. first + per` before `end`) and where its copy's recurrent weights start.
#[cube]
fn cube_seqs(
    cube: usize,
    rows: usize,
    hidden: usize,
    #[comptime] per: usize,
) -> (usize, usize, usize) {
    // spelled out: a cube function's integers have no `div_ceil`
    #[allow(clippy::manual_div_ceil)]
    let per_copy = (rows + per - 1) / per;
    let copy = cube / per_copy;
    let first = copy * rows + (cube % per_copy) * per;
    (first, copy * rows + rows, copy * hidden * 4 * hidden)
}

/// The layer forward, a cube per `per` sequences of a copy and a unit per hidden unit `j`: at
/// each step `t` the gates from `xw`'s step `t` plus `Σ_k h_{t−1,k}·wh_{k,·}` (the previous
/// hidden state, read from `hs`; none at `t = 0`, whose state is zero), summed in `k`'s order
/// for each sequence (each weight read once for the cube's sequences), kept after activation in
/// `gates`; the cell state in `cells`, the hidden state in `hs`. The cube's units meet after
/// each step, before the next reads the hidden state they wrote.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn lstm_forward<F: Float>(
    xw: &Tensor<F>,
    wh: &Tensor<F>,
    gates: &mut Tensor<F>,
    cells: &mut Tensor<F>,
    hs: &mut Tensor<F>,
    rows: usize,
    cubes: usize,
    #[comptime] per: usize,
) {
    if CUBE_POS >= cubes {
        terminate!();
    }
    let (len, hidden) = (hs.shape(1), hs.shape(2));
    let (first, end, w0) = cube_seqs(CUBE_POS, rows, hidden, per);
    let mut t = 0;
    while t < len {
        let mut j = UNIT_POS as usize;
        while j < hidden {
            let mut acc = Array::<F>::new(comptime!(4 * per));
            #[unroll]
            for q in 0..comptime!(4 * per) {
                acc[q] = F::new(0.0);
            }
            if t > 0 {
                let mut k = 0;
                while k < hidden {
                    let w = w0 + k * 4 * hidden + j;
                    let (wi, wf) = (wh[w], wh[w + hidden]);
                    let (wg, wo) = (wh[w + 2 * hidden], wh[w + 3 * hidden]);
                    #[unroll]
                    for s in 0..per {
                        // a cube past its copy's last sequence reads that one, and writes nothing
                        let r = min(first + s, end - 1);
                        let hk = hs[(r * len + t - 1) * hidden + k];
                        acc[4 * s] += hk * wi;
                        acc[4 * s + 1] += hk * wf;
                        acc[4 * s + 2] += hk * wg;
                        acc[4 * s + 3] += hk * wo;
                    }
                    k += 1;
                }
            }
            #[unroll]
            for s in 0..per {
                if first + s < end {
                    let z = (acc[4 * s], acc[4 * s + 1], acc[4 * s + 2], acc[4 * s + 3]);
                    cell_forward::<F>(xw, gates, cells, hs, z, first + s, t, j);
                }
            }
            j += CUBE_DIM as usize;
        }
        // the step's hidden state, written to storage, is what every unit reads next
        sync_storage();
        t += 1;
    }
}

/// Step `t`'s cell for sequence `r`'s unit `j` ([`lstm_forward`]), `z` its gates' recurrent
/// terms: the gates after activation, the cell state and the hidden state.
#[cube]
#[allow(clippy::too_many_arguments)]
fn cell_forward<F: Float>(
    xw: &Tensor<F>,
    gates: &mut Tensor<F>,
    cells: &mut Tensor<F>,
    hs: &mut Tensor<F>,
    z: (F, F, F, F),
    r: usize,
    t: usize,
    j: usize,
) {
    let (len, hidden) = (hs.shape(1), hs.shape(2));
    let g = (r * len + t) * 4 * hidden + j;
    let at = (r * len + t) * hidden + j;
    let mut before = F::new(0.0);
    if t > 0 {
        before = cells[at - hidden];
    }
    let i = sigmoid::<F>(xw[g] + z.0);
    let f = sigmoid::<F>(xw[g + hidden] + z.1);
    let c = F::tanh(xw[g + 2 * hidden] + z.2);
    let o = sigmoid::<F>(xw[g + 3 * hidden] + z.3);
    let cell = f * before + i * c;
    gates[g] = i;
    gates[g + hidden] = f;
    gates[g + 2 * hidden] = c;
    gates[g + 3 * hidden] = o;
    cells[at] = cell;
    hs[at] = o * F::tanh(cell);
}

/// The layer backward, a cube per `per` sequences of a copy and a unit per hidden unit `j`,
/// steps from the last: the hidden state's gradient is `dhs`'s step `t` plus the one carried
/// from step `t + 1`, the cell's the one carried (none at the last step); writes the gates'
/// pre-activation gradients `dz` into `dxw`'s step `t` and into `shifted`'s step `t − 1` (zero
/// at the last step), whose product with the hidden states is the recurrent weights' gradient.
/// After the cube's units meet, each carries its unit's hidden gradient a step back,
/// `Σ_m dz_m·wt_{m,j}` in `m`'s order (`wt` is `wh` transposed, `[K, 4·hidden, hidden]`), in
/// `carry` (`[seqs, 2, hidden]`: the hidden gradient, then the cell's), which only that unit
/// reads.
#[cube(launch, create_dummy_kernel)]
#[allow(clippy::too_many_arguments)]
fn lstm_backward<F: Float>(
    wt: &Tensor<F>,
    gates: &Tensor<F>,
    cells: &Tensor<F>,
    dhs: &Tensor<F>,
    dxw: &mut Tensor<F>,
    shifted: &mut Tensor<F>,
    carry: &mut Tensor<F>,
    rows: usize,
    cubes: usize,
    #[comptime] per: usize,
) {
    if CUBE_POS >= cubes {
        terminate!();
    }
    let (len, hidden) = (cells.shape(1), cells.shape(2));
    let (first, end, w0) = cube_seqs(CUBE_POS, rows, hidden, per);
    let mut t = len;
    while t > 0 {
        t -= 1;
        let mut j = UNIT_POS as usize;
        while j < hidden {
            #[unroll]
            for s in 0..per {
                if first + s < end {
                    cell_backward::<F>(gates, cells, dhs, dxw, shifted, carry, first + s, t, j);
                }
            }
            j += CUBE_DIM as usize;
        }
        // the step's gate gradients, written to storage, are what every unit reads next
        sync_storage();
        if t > 0 {
            let mut j = UNIT_POS as usize;
            while j < hidden {
                let mut acc = Array::<F>::new(per);
                #[unroll]
                for s in 0..per {
                    acc[s] = F::new(0.0);
                }
                let mut m = 0;
                while m < 4 * hidden {
                    let w = wt[w0 + m * hidden + j];
                    #[unroll]
                    for s in 0..per {
                        let r = min(first + s, end - 1);
                        acc[s] += dxw[(r * len + t) * 4 * hidden + m] * w;
                    }
                    m += 1;
                }
                #[unroll]
                for s in 0..per {
                    if first + s < end {
                        carry[2 * (first + s) * hidden + j] = acc[s];
                    }
                }
                j += CUBE_DIM as usize;
            }
        }
    }
}

/// Step `t`'s cell backward for sequence `r`'s unit `j` ([`lstm_backward`]): its four gate
/// gradients into `dxw` and `shifted`, the cell's gradient for step `t − 1` into `carry`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn cell_backward<F: Float>(
    gates: &Tensor<F>,
    cells: &Tensor<F>,
    dhs: &Tensor<F>,
    dxw: &mut Tensor<F>,
    shifted: &mut Tensor<F>,
    carry: &mut Tensor<F>,
    r: usize,
    t: usize,
    j: usize,
) {
    let (len, hidden) = (cells.shape(1), cells.shape(2));
    let g = (r * len + t) * 4 * hidden + j;
    let at = (r * len + t) * hidden + j;
    let (mine_h, mine_c) = (2 * r * hidden + j, (2 * r + 1) * hidden + j);
    let last = t + 1 == len;
    let mut dht = dhs[at];
    let mut dct = F::new(0.0);
    if !last {
        dht += carry[mine_h];
        dct = carry[mine_c];
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
    carry[mine_c] = dct * f;
    dxw[g] = dzi;
    dxw[g + hidden] = dzf;
    dxw[g + 2 * hidden] = dzg;
    dxw[g + 3 * hidden] = dzo;
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

    /// The sequences of every copy.
    fn seqs(&self) -> usize {
        self.copies * self.rows
    }

    /// `[K, rows·a, b]`, the copies' products' shape.
    fn per_copy(&self, a: usize, b: usize) -> Shape {
        Shape::from(vec![self.copies, self.rows * a, b])
    }

    /// `[K·rows, len, w]`, the kernels' view of a sequence tensor.
    fn seq(&self, w: usize) -> Shape {
        Shape::from(vec![self.seqs(), self.len, w])
    }

    /// The launch: a cube per [`Launch::per`] sequences of a copy, a unit per hidden unit up
    /// to [`MAX_THREADS`] (whole planes of 32).
    fn launch(&self) -> Launch {
        let mut per = 1;
        while per < MAX_PER_CUBE && self.seqs().div_ceil(2 * per) >= MIN_CUBES {
            per *= 2;
        }
        let n = self.copies * self.rows.div_ceil(per);
        let units = self.hidden.div_ceil(32).clamp(1, MAX_THREADS / 32) * 32;
        Launch {
            count: cubes(n),
            dim: CubeDim::new_1d(units as u32),
            cubes: n,
            per,
        }
    }
}

/// A launch of the layer's kernels ([`Dims::launch`]).
struct Launch {
    count: CubeCount,
    dim: CubeDim,
    /// The cubes that run (the count may hold more, which end at once).
    cubes: usize,
    /// The sequences of one copy a cube runs, each weight read once for all of them.
    per: usize,
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
    let l = d.launch();
    let arg = |t: &CubeTensor| t.clone().into_tensor_arg();
    lstm_forward::launch::<f32>(
        &xw.client,
        l.count,
        l.dim,
        arg(&xw),
        arg(&wh),
        arg(&gates),
        arg(&cells),
        arg(&hs),
        d.rows,
        l.cubes,
        l.per,
    );
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
    let wt = into_contiguous(CubeBackend::float_transpose(wh));
    let dhs = reshape(dhs, d.seq(d.hidden));
    let (gates, cells) = (
        reshape(gates, d.seq(4 * d.hidden)),
        reshape(cells, d.seq(d.hidden)),
    );
    let (dxw, shifted, carry) = (
        alloc(&dhs, d.seq(4 * d.hidden)),
        alloc(&dhs, d.seq(4 * d.hidden)),
        alloc(&dhs, Shape::from(vec![d.seqs(), 2, d.hidden])),
    );
    let l = d.launch();
    let arg = |t: &CubeTensor| t.clone().into_tensor_arg();
    lstm_backward::launch::<f32>(
        &dhs.client,
        l.count,
        l.dim,
        arg(&wt),
        arg(&gates),
        arg(&cells),
        arg(&dhs),
        arg(&dxw),
        arg(&shifted),
        arg(&carry),
        d.rows,
        l.cubes,
        l.per,
    );
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

/// The two kernels as a training step's 50 sequences of 80 characters of FedDyn's 100-unit
/// layer launch them (one a cube) and as an evaluation batch's 1,000 do (8 a cube), for their
/// CUDA source ([`super::cuda_source`]).
#[cfg(feature = "cuda")]
pub(super) fn dummies(d: &super::cuda_dummy::Dummy) -> Vec<Box<dyn cubecl::CubeKernel>> {
    let mut kernels: Vec<Box<dyn cubecl::CubeKernel>> = Vec::new();
    for rows in [50, 1000] {
        let (len, hidden) = (80, 100);
        let dims = Dims {
            copies: 1,
            rows,
            len,
            hidden,
        };
        let seq = |w: usize| d.tensor(&[rows, len, w]);
        let l = dims.launch();
        kernels.push(Box::new(lstm_forward::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            l.count.clone(),
            l.dim,
            seq(4 * hidden),
            d.tensor(&[1, hidden, 4 * hidden]),
            seq(4 * hidden),
            seq(hidden),
            seq(hidden),
            rows,
            l.cubes,
            l.per,
        )));
        kernels.push(Box::new(lstm_backward::create_dummy_kernel::<f32>(
            d.props(),
            d.target(),
            l.count,
            l.dim,
            d.tensor(&[1, 4 * hidden, hidden]),
            seq(4 * hidden),
            seq(hidden),
            seq(hidden),
            seq(4 * hidden),
            seq(4 * hidden),
            d.tensor(&[rows, 2, hidden]),
            rows,
            l.cubes,
            l.per,
        )));
    }
    kernels
}
