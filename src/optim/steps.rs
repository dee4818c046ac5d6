//! What changes between the steps of a device-resident training, held on the device: each
//! row's learning rate, the rate its update is applied at (0 for a row that does not step) and
//! whether it steps, as `[S, K]` tables for the training's S steps and K rows, uploaded once,
//! and the step index as a `[1]` device tensor that each step advances in place. A step reads
//! its column of a table at that index, so it takes no number from the host: the same launches
//! serve every step (what a captured graph needs, whose recorded launches keep any host scalar
//! they were given), and a link whose factor changes with the step (FedCM's) keeps its own table.

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

/// The step tables of a training and the step index ([`Steps::at`] reads a table there).
pub struct Steps {
    /// Each row's learning rate l at each step.
    pub lr: Tensor<2>,
    /// The factor of each row's update `x ← x − rate·u`: l, or 1 when a link of the chain applied
    /// the learning rate (the trust ratio), and 0 at a step the row takes no part in.
    pub rate: Tensor<2>,
    /// 1 where the row steps, else 0.
    active: Tensor<2>,
    /// The step index s, from 0.
    index: Tensor<1, Int>,
    rows: usize,
}

impl Steps {
    /// The tables of `lr[s][k]` (row k's learning rate at step s) and `active[s][k]` (whether
    /// it steps), `scaled`: whether the chain applies the learning rate itself.
    pub fn new(lr: &[Vec<f64>], active: &[Vec<bool>], scaled: bool, device: &Device) -> Self {
        let device = &device.clone().without_autodiff();
        let rows = lr
            .first()
            .map_or(active.first().map_or(0, Vec::len), Vec::len);
        let rate = |(&l, &a): (&f64, &bool)| match (a, scaled) {
            (false, _) => 0.0,
            (true, true) => 1.0,
            (true, false) => l as f32,
        };
        let per_step =
            |f: &dyn Fn(usize) -> Vec<f32>| -> Vec<Vec<f32>> { (0..lr.len()).map(f).collect() };
        Steps {
            lr: table(
                &per_step(&|s| lr[s].iter().map(|&l| l as f32).collect()),
                rows,
                device,
            ),
            rate: table(
                &per_step(&|s| lr[s].iter().zip(&active[s]).map(rate).collect()),
                rows,
                device,
            ),
            active: table(
                &per_step(&|s| active[s].iter().map(|&a| f32::from(u8::from(a))).collect()),
                rows,
                device,
            ),
            index: Tensor::from_data(TensorData::new(vec![0i64], [1]), device),
            rows,
        }
    }

    /// Table `t`'s column at the current step, one value a row: `[K, 1]`.
    pub fn at(&self, t: &Tensor<2>) -> Tensor<2> {
        t.clone()
            .select(0, self.index.clone())
            .reshape([self.rows, 1])
    }

    /// Which rows step now: `[K, 1]`.
    pub fn active(&self) -> Tensor<2, Bool> {
        self.at(&self.active).equal_elem(1.0)
    }

    /// The step index `[1]` (a handle: drop it before [`Steps::advance`], which then writes the
    /// index in its buffer).
    pub fn index(&self) -> Tensor<1, Int> {
        self.index.clone()
    }

    /// The tables and the index as buffers ([`super::buffers`]).
    pub fn buffers<'a>(&'a mut self, out: &mut Vec<super::buffers::Buf<'a>>) {
        use super::buffers::Buf;
        out.push(Buf::Host(self.rows as u64));
        out.extend([
            Buf::F2(&mut self.lr),
            Buf::F2(&mut self.rate),
            Buf::F2(&mut self.active),
        ]);
        out.push(Buf::I1(&mut self.index));
    }

    /// On to the next step, the index written in place.
    pub fn advance(&mut self) {
        crate::kernels::capture::in_place(&mut self.index, |i| i.add_scalar(1));
    }
}

/// The rows `v[s]` (each of `k` values) as one `[S, K]` tensor on `device` (one upload).
pub fn table(v: &[Vec<f32>], k: usize, device: &Device) -> Tensor<2> {
    let device = &device.clone().without_autodiff();
    let flat: Vec<f32> = v.iter().flatten().copied().collect();
    let s = v.len();
    Tensor::<2>::from_data(TensorData::new(flat, [s, k]), device)
}
