//! What every step of a device training reads, drawn before its first step: each client's
//! batches (its rows and, for augmented images, its pixel maps) and dropout seeds, taken from
//! its own stream in the order the step-by-step draw takes them, so the same values. A step
//! where every client takes a full batch (a *full* step) reads them from tables on the device
//! at the step index (`[S, K·b]` rows, `[S·m, h·w]` maps, `[S, sites·K·4]` seeds), gathered
//! from the split kept on the device: it takes nothing from the host, so one captured graph
//! serves every full step. The other steps (a pass's short last batch, a client past its last
//! step) are gathered from the same draws with an upload each.

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::batches::Batches;
use super::draw::{Drawn, Group, groups};
use super::work::{Work, step_masks};
use crate::data::{self, Augment, FedData};
use crate::kernels::ext_mask::quarters;
use crate::model::site_seed;
use crate::optim::buffers::Buf;
use crate::rng::Rng;

/// A client's batch at a step, drawn: its rows and pixel maps (one, or one a row, and how many).
struct Planned {
    k: usize,
    rows: Vec<usize>,
    map: Option<(Vec<i64>, usize)>,
}

/// The pixel maps of the full steps: `table` `[S·m, h·w]` (m a step's), and which map each of a
/// step's K·b rows reads (`offsets`, `[K·b]`).
struct Maps {
    table: Tensor<2, Int>,
    per_step: usize,
    offsets: Tensor<1, Int>,
}

/// A training's draws, and the tables its full steps read.
pub struct Feed {
    plan: Vec<Vec<Planned>>,
    /// Each step's host seeds, one a client ([`step_masks`]).
    seeds: Vec<Vec<u64>>,
    full: Vec<bool>,
    batch: usize,
    rows: Tensor<2, Int>,
    maps: Option<Maps>,
    /// Every site's seeds at each step, once the sites are known ([`Feed::with_sites`]).
    site_seeds: Option<(Tensor<2>, usize)>,
    aug: Augment,
    device: Device,
    /// The training split on the device.
    split: data::Kept,
}

impl Feed {
    /// Every step's draws of `works`' clients from `rngs` (advanced as the steps would advance
    /// them), with the full steps' tables on `device`; None where the split is not kept on the
    /// device or the clients' batch sizes differ (the steps then draw as they go).
    pub fn new(data: &FedData, works: &[Work], rngs: &mut [Rng], device: &Device) -> Option<Feed> {
        let batch = works.first()?.batch_size;
        if works.iter().any(|w| w.batch_size != batch) {
            return None;
        }
        let split = data::kept(&data.train, device)?;
        let steps = works.iter().map(|w| w.steps).max().unwrap_or(0);
        let mut batches: Vec<Batches> = (works.iter())
            .map(|w| Batches::new(&data.clients[w.client], batch))
            .collect();
        let mut plan: Vec<Vec<Planned>> = (0..steps).map(|_| Vec::new()).collect();
        // client by client: each stream's draws in their step order
        for (k, (w, (b, rng))) in works.iter().zip(batches.iter_mut().zip(rngs)).enumerate() {
            for at in plan.iter_mut().take(w.steps) {
                let rows = b.next_batch(rng).to_vec();
                let map = data::draw_maps(&data.train, data.augment, rng, rows.len());
                at.push(Planned { k, rows, map });
            }
        }
        let k = works.len();
        let full = (plan.iter())
            .map(|p| p.len() == k && p.iter().all(|d| d.rows.len() == batch))
            .collect();
        let seeds = (0..steps)
            .map(|s| works.iter().map(|w| step_masks(w, s)).collect())
            .collect();
        let inner = device.clone().without_autodiff();
        let mut feed = Feed {
            rows: Tensor::zeros([1, 1], &inner),
            maps: None,
            plan,
            seeds,
            full,
            batch,
            site_seeds: None,
            aug: data.augment,
            device: device.clone(),
            split,
        };
        feed.rows = feed.rows_table(k, &inner);
        feed.maps = feed.maps_table(k, data::map_len(&data.train), &inner);
        Some(feed)
    }

    /// The training device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The clients' batch size.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The training's step count.
    pub fn steps(&self) -> usize {
        self.plan.len()
    }

    /// How many full steps follow one another from step `s` on (0 when `s` is not full).
    pub fn full_run(&self, s: usize) -> usize {
        self.full.iter().skip(s).take_while(|&&f| f).count()
    }

    /// Each client's host seed at step `s`.
    pub fn host_seeds(&self, s: usize) -> &[u64] {
        &self.seeds[s]
    }

    /// The groups of step `s` (each client's batch gathered on the device from its draws: the
    /// rows and maps uploaded).
    pub fn groups(&self, s: usize) -> Vec<Group> {
        let inner = self.device.clone().without_autodiff();
        let drawn: Vec<Drawn> = (self.plan[s].iter())
            .filter_map(|p| {
                let b = p.rows.len();
                let rows: Vec<i64> = p.rows.iter().map(|&i| i as i64).collect();
                let rows = Tensor::<1, Int>::from_data(TensorData::new(rows, [b]), &inner);
                let map = p.map.as_ref().map(|(m, n)| {
                    Tensor::from_data(TensorData::new(m.clone(), [*n, m.len() / n]), &inner)
                });
                let (input, y) = self.split.gather(rows, map, self.aug, &self.device)?;
                Some(Drawn {
                    k: p.k,
                    len: b,
                    input,
                    y,
                })
            })
            .collect();
        groups(drawn).iter().map(|g| Group::of(g)).collect()
    }

    /// The full step at `index` (`[1]`, on the device): every client's batch gathered from the
    /// tables at the index, as one group. None where the split is not kept.
    pub fn full_group(&self, index: &Tensor<1, Int>) -> Option<Group> {
        let k = self.seeds.first().map_or(0, Vec::len);
        let kb = k * self.batch;
        let rows = self.rows.clone().select(0, index.clone()).reshape([kb]);
        let map = self.maps.as_ref().map(|m| {
            let at = index.clone().mul_scalar(m.per_step as i64).expand([kb]);
            m.table.clone().select(0, m.offsets.clone() + at)
        });
        let (input, y) = self.split.gather(rows, map, self.aug, &self.device)?;
        Some(Group {
            ks: (0..k).collect(),
            len: self.batch,
            input,
            y,
        })
    }

    /// Make the seeds' table for a model with `sites` dropout sites a forward (none for 0).
    pub fn with_sites(&mut self, sites: usize) {
        if sites == 0 || self.site_seeds.is_some() {
            return;
        }
        let k = self.seeds.first().map_or(0, Vec::len);
        let flat: Vec<f32> = (self.seeds.iter())
            .flat_map(|step| {
                (0..sites as u64)
                    .flat_map(move |j| step.iter().flat_map(move |&s| quarters(site_seed(s, j))))
            })
            .collect();
        let inner = self.device.clone().without_autodiff();
        let t = Tensor::from_data(TensorData::new(flat, [self.steps(), sites * k * 4]), &inner);
        self.site_seeds = Some((t, sites));
    }

    /// The model's dropout sites the seeds' table holds (0 without one).
    pub fn sites(&self) -> usize {
        self.site_seeds.as_ref().map_or(0, |t| t.1)
    }

    /// Every site's seeds at `index`, `[sites, K, 4]` on the training device; None without
    /// dropout.
    pub fn seeds_at(&self, index: &Tensor<1, Int>) -> Option<Tensor<3>> {
        let (t, sites) = self.site_seeds.as_ref()?;
        let k = self.seeds.first().map_or(0, Vec::len);
        let at = t.clone().select(0, index.clone()).reshape([*sites, k, 4]);
        Some(match self.device.is_autodiff() {
            true => at.autodiff(),
            false => at,
        })
    }

    /// The tables as buffers and the host numbers the full step is given
    /// ([`crate::optim::buffers`]).
    pub fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        out.extend([Buf::Host(self.batch as u64), Buf::Host(self.aug as u64)]);
        out.push(Buf::I2(&mut self.rows));
        if let Some(m) = &mut self.maps {
            out.push(Buf::Host(m.per_step as u64));
            out.extend([Buf::I2(&mut m.table), Buf::I1(&mut m.offsets)]);
        }
        if let Some((t, sites)) = &mut self.site_seeds {
            out.push(Buf::Host(*sites as u64));
            out.push(Buf::F2(t));
        }
    }

    /// Take `new`'s draws (its tables are written into this feed's with
    /// [`crate::optim::buffers::refill`]).
    pub fn adopt(&mut self, new: &mut Feed) {
        std::mem::swap(&mut self.plan, &mut new.plan);
        std::mem::swap(&mut self.seeds, &mut new.seeds);
        std::mem::swap(&mut self.full, &mut new.full);
    }

    /// `[S, K·b]`: each full step's rows, client after client (0 elsewhere).
    fn rows_table(&self, k: usize, device: &Device) -> Tensor<2, Int> {
        let width = k * self.batch;
        let mut flat = vec![0i64; self.steps() * width];
        for (s, p) in self.plan.iter().enumerate().filter(|(s, _)| self.full[*s]) {
            let rows = p.iter().flat_map(|d| d.rows.iter().map(|&i| i as i64));
            flat[s * width..(s + 1) * width]
                .iter_mut()
                .zip(rows)
                .for_each(|(o, r)| *o = r);
        }
        Tensor::from_data(TensorData::new(flat, [self.steps(), width]), device)
    }

    /// The full steps' pixel maps (None without augmentation): `m` maps a client a step (one,
    /// or one a row), the `[S·K·m, p]` table and each row's map within its step.
    fn maps_table(&self, k: usize, p: usize, device: &Device) -> Option<Maps> {
        let first = self.plan.iter().flatten().find_map(|d| d.map.as_ref())?;
        let m = first.1;
        let per_step = k * m;
        let mut flat = vec![0i64; self.steps() * per_step * p];
        for (s, at) in self.plan.iter().enumerate().filter(|(s, _)| self.full[*s]) {
            let maps = at
                .iter()
                .flat_map(|d| d.map.iter().flat_map(|(v, _)| v.iter()));
            flat[s * per_step * p..(s + 1) * per_step * p]
                .iter_mut()
                .zip(maps)
                .for_each(|(o, &v)| *o = v);
        }
        let kb = k * self.batch;
        let offsets: Vec<i64> = (0..kb)
            .map(|r| if m == 1 { r / self.batch } else { r } as i64)
            .collect();
        Some(Maps {
            table: Tensor::from_data(TensorData::new(flat, [self.steps() * per_step, p]), device),
            per_step,
            offsets: Tensor::from_data(TensorData::new(offsets, [kb]), device),
        })
    }
}
