//! What every step of a device training reads, drawn before its first step: each client's
//! batches (its rows and, for augmented images, its pixel maps) and dropout seeds, taken from
//! its own stream in the order the step-by-step draw takes them, so the same values. A step
//! where every client takes a full batch (a *full* step) reads them from tables on the device
//! at the step index (`[S, K·b]` rows, `[S·m, h·w]` maps, `[S, sites·K·4]` seeds), gathered
//! from the split kept on the device: it takes nothing from the host, so one captured graph
//! serves every full step. Where every client's loss is a mean over its samples
//! ([`crate::fl::plan::LocalLoss::pads`]) and the model's rows are independent, the other steps
//! (a pass's short last batch, a client past its last step) are tabled too, *padded*: each
//! client's batch filled to b rows with the split's first sample, and a
//! [`RowMask`] (`[S, K·b]` weights, `[S, K]` scales) that gives the padding no weight, so the
//! same graph serves every step. Otherwise they are gathered from the same draws with an upload
//! each and run eagerly.

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::draw::{Drawn, Group, batches_of, groups};
use super::work::{Work, step_masks};
use crate::data::{self, Augment, FedData};
use crate::kernels::ext_mask::quarters;
use crate::model::copies::RowMask;
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

/// The padded steps' row masks: `keep` `[S, K·b]` (1 a sample, 0 a padding row) and `scale`
/// `[S, K]` (b over each client's samples; 0 for a client that takes no part).
struct Masks {
    keep: Tensor<2>,
    scale: Tensor<2>,
}

/// A training's draws, and the tables its full steps read.
pub struct Feed {
    plan: Vec<Vec<Planned>>,
    /// Each step's host seeds, one a client ([`step_masks`]).
    seeds: Vec<Vec<u64>>,
    /// The steps read from the tables: the full ones, and every one when padded.
    tabled: Vec<bool>,
    /// The row masks, when the steps are padded.
    masks: Option<Masks>,
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
    /// them), with the full steps' tables on `device` (every step's, padded, with `pad`); None
    /// where the split is not kept on the device or the clients' batch sizes differ (the steps
    /// then draw as they go).
    pub fn new(
        data: &FedData,
        works: &[Work],
        rngs: &mut [Rng],
        device: &Device,
        pad: bool,
        window: usize,
    ) -> Option<Feed> {
        let batch = works.first()?.batch_size;
        if works.iter().any(|w| w.batch_size != batch) {
            return None;
        }
        let split = data::kept(&data.train, device)?;
        let (mut batches, steps) = batches_of(data, works);
        if steps > window {
            // drawn ahead, a longer training's tables would grow with its steps: eager
            return None;
        }
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
        let tabled = (plan.iter())
            .map(|p| pad || (p.len() == k && p.iter().all(|d| d.rows.len() == batch)))
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
            tabled,
            masks: None,
            batch,
            site_seeds: None,
            aug: data.augment,
            device: device.clone(),
            split,
        };
        feed.rows = feed.rows_table(k, &inner);
        feed.maps = feed.maps_table(k, data::map_len(&data.train), &inner);
        feed.masks = pad.then(|| feed.masks_table(k, &inner));
        Some(feed)
    }

    /// The training device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The training's step count.
    pub fn steps(&self) -> usize {
        self.plan.len()
    }

    /// How many tabled steps follow one another from step `s` on (0 when `s` is not tabled).
    pub fn tabled_run(&self, s: usize) -> usize {
        self.tabled.iter().skip(s).take_while(|&&f| f).count()
    }

    /// The clients of step `s` and their batch sizes `(client, b)`, in client order.
    pub fn who(&self, s: usize) -> Vec<(usize, usize)> {
        self.plan[s].iter().map(|p| (p.k, p.rows.len())).collect()
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
        groups(drawn)
    }

    /// The tabled step at `index` (`[1]`, on the device): every client's batch gathered from
    /// the tables at the index, as one group (with its row mask when padded). None where the
    /// split is not kept.
    pub fn tabled_group(&self, index: &Tensor<1, Int>) -> Option<Group> {
        let k = self.seeds.first().map_or(0, Vec::len);
        let kb = k * self.batch;
        let rows = self.rows.clone().select(0, index.clone()).reshape([kb]);
        let map = self.maps.as_ref().map(|m| {
            let at = index.clone().mul_scalar(m.per_step as i64).expand([kb]);
            m.table.clone().select(0, m.offsets.clone() + at)
        });
        let (input, y) = self.split.gather(rows, map, self.aug, &self.device)?;
        let mask = self.masks.as_ref().map(|m| RowMask {
            keep: self.on_training(
                m.keep
                    .clone()
                    .select(0, index.clone())
                    .reshape([k, self.batch, 1]),
            ),
            scale: self.on_training(m.scale.clone().select(0, index.clone()).reshape([k])),
        });
        Some(Group {
            ks: (0..k).collect(),
            len: self.batch,
            input,
            y,
            mask,
        })
    }

    /// A table's slice as a tensor of the training device (autodiff's where it is one).
    fn on_training<const D: usize>(&self, t: Tensor<D>) -> Tensor<D> {
        match self.device.is_autodiff() {
            true => t.autodiff(),
            false => t,
        }
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
        Some(self.on_training(at))
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
        if let Some(m) = &mut self.masks {
            out.push(Buf::Host(1));
            out.extend([Buf::F2(&mut m.keep), Buf::F2(&mut m.scale)]);
        }
    }

    /// Take `new`'s draws (its tables are written into this feed's with
    /// [`crate::optim::buffers::refill`]).
    pub fn adopt(&mut self, new: &mut Feed) {
        std::mem::swap(&mut self.plan, &mut new.plan);
        std::mem::swap(&mut self.seeds, &mut new.seeds);
        std::mem::swap(&mut self.tabled, &mut new.tabled);
    }

    /// Each tabled step's client `c`'s draw, if it takes part.
    fn drawn(&self, s: usize, c: usize) -> Option<&Planned> {
        self.plan[s].iter().find(|p| p.k == c)
    }

    /// The tabled steps `s` with each client `c`'s `per` values at it (`f` of its draw, filled
    /// with 0: the split's row 0, a map of pixel 0, no weight), `[S, K·per]`, 0 elsewhere.
    fn table<T: Copy + Default>(
        &self,
        k: usize,
        per: usize,
        f: impl Fn(&Planned) -> Vec<T>,
    ) -> Vec<T> {
        let mut flat = vec![T::default(); self.steps() * k * per];
        for (s, at) in flat
            .chunks_mut(k * per)
            .enumerate()
            .filter(|(s, _)| self.tabled[*s])
        {
            for (c, out) in at.chunks_mut(per).enumerate() {
                let vals = self.drawn(s, c).map(&f).unwrap_or_default();
                out.iter_mut().zip(vals).for_each(|(o, v)| *o = v);
            }
        }
        flat
    }

    /// `[S, K·b]`: each tabled step's rows, client after client (0 elsewhere).
    fn rows_table(&self, k: usize, device: &Device) -> Tensor<2, Int> {
        let flat = self.table(k, self.batch, |d| {
            d.rows.iter().map(|&i| i as i64).collect()
        });
        Tensor::from_data(
            TensorData::new(flat, [self.steps(), k * self.batch]),
            device,
        )
    }

    /// The padded steps' row masks: 1 for each client's samples, 0 for the padding; b over its
    /// samples (1 for a full batch, 0 for a client that takes no part).
    fn masks_table(&self, k: usize, device: &Device) -> Masks {
        let b = self.batch;
        let keep = self.table(k, b, |d| vec![1.0f32; d.rows.len()]);
        let scale = self.table(k, 1, |d| vec![(b as f64 / d.rows.len() as f64) as f32]);
        Masks {
            keep: Tensor::from_data(TensorData::new(keep, [self.steps(), k * b]), device),
            scale: Tensor::from_data(TensorData::new(scale, [self.steps(), k]), device),
        }
    }

    /// The tabled steps' pixel maps (None without augmentation): `m` maps a client a step (one,
    /// or one a row), the `[S·K·m, p]` table and each row's map within its step.
    fn maps_table(&self, k: usize, p: usize, device: &Device) -> Option<Maps> {
        self.plan.iter().flatten().find_map(|d| d.map.as_ref())?;
        let m = match self.aug {
            Augment::Batch => 1,
            _ => self.batch,
        };
        let flat = self.table(k, m * p, |d| {
            d.map.as_ref().map(|(v, _)| v.clone()).unwrap_or_default()
        });
        let kb = k * self.batch;
        let offsets: Vec<i64> = (0..kb)
            .map(|r| if m == 1 { r / self.batch } else { r } as i64)
            .collect();
        Some(Maps {
            table: Tensor::from_data(TensorData::new(flat, [self.steps() * k * m, p]), device),
            per_step: k * m,
            offsets: Tensor::from_data(TensorData::new(offsets, [kb]), device),
        })
    }
}
