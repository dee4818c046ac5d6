//! The round engine. It knows nothing about any particular algorithm: it samples clients,
//! runs the local loop, aggregates, calls the algorithm's hooks, evaluates, and writes the
//! outputs and checkpoints. Every random stream is derived from (seed, round, client), so a
//! resumed run replays exactly what the uninterrupted one would have done.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::Device;

use super::algorithm::{Aggregate, Algorithm, ClientInfo, RoundInfo, ServerLog};
use super::algorithms;
use super::client::{LocalStats, Trainer, local_steps};
use super::step::{LocalOptimizer, global_norm};
use crate::config::Spec;
use crate::data::{self, Features, FedData};
use crate::error::{Error, Result};
use crate::kernels::Kernels;
use crate::metrics::csv::{CsvWriter, Row};
use crate::metrics::eval::Evaluator;
use crate::metrics::summary::Summary;
use crate::model::params::{Layout, write_params};
use crate::model::{Model, Shape, init};
use crate::rng::{Rng, Stream};

/// How to run, besides the spec.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Results root: the run writes into `<out>/<run.name>/`.
    pub out: PathBuf,
    pub data_dir: Option<PathBuf>,
    /// Discard an existing run folder and start afresh.
    pub force: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// Stop after this many rounds of this process (tests of resume); None = run to the end.
    pub max_rounds_this_call: Option<usize>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            out: PathBuf::from("results"),
            data_dir: None,
            force: false,
            progress: false,
            max_rounds_this_call: None,
        }
    }
}

/// The device a backend name stands for, with autodiff (training) and without (evaluation).
pub fn devices(backend: &str) -> Result<(Device, Device)> {
    let base = match backend {
        "flex" => Device::flex(),
        #[cfg(feature = "wgpu")]
        "wgpu" => Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
        other => {
            return Err(Error::Config(format!(
                "key `run.backend`: \"{other}\" is not compiled into this binary (build with `--features {other}`); available: flex"
            )));
        }
    };
    Ok((base.clone().autodiff(), base))
}

pub fn shape_of(data: &FedData) -> Shape {
    match &data.train.x {
        Features::Images { c, h, .. } => Shape {
            channels: *c,
            side: *h,
            classes: data.num_classes,
        },
        Features::Tokens { .. } => Shape {
            channels: 0,
            side: 0,
            classes: data.num_classes,
        },
    }
}

/// Client workers for a run: `run.client_workers`, or with 0 (auto) one per core for models of
/// up to 2M parameters without dropout (they gain from it: the CNN), else 1 (ResNet-18 is
/// memory-bound; dropout draws from the backend's global generator).
pub fn client_workers(spec: &Spec, params: usize) -> usize {
    let cores = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
    let has_dropout = spec.model.dropout > 0.0 && spec.model.kind == "transformer";
    let w = match spec.run.client_workers {
        0 if has_dropout || params > 2_000_000 => 1,
        0 => cores,
        w => w,
    };
    w.clamp(1, spec.fl.clients_per_round.max(1))
}

/// Write a file atomically: temp file, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)
        .map_err(|e| Error::io(format!("cannot create {}", tmp.display()), e))?;
    f.write_all(bytes)
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
    f.sync_all()
        .map_err(|e| Error::io(format!("cannot sync {}", tmp.display()), e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| {
        Error::io(
            format!("cannot rename {} to {}", tmp.display(), path.display()),
            e,
        )
    })
}

/// Everything built before the first round; also used by `bench`.
pub struct Experiment {
    pub spec: Spec,
    pub data: FedData,
    pub layout: Layout,
    pub global: Vec<f32>,
    pub alg: Box<dyn Algorithm>,
    /// One trainer per client worker (`run.client_workers`).
    pub trainers: Vec<Trainer>,
    /// One single-thread pool per worker when there are several.
    pub pools: Vec<rayon::ThreadPool>,
    pub evaluator: Evaluator,
    pub device: Device,
}

impl Experiment {
    pub fn new(spec: &Spec, data: FedData) -> Result<Experiment> {
        let (device, eval_device) = devices(&spec.run.backend)?;
        let shape = shape_of(&data);
        let kernels = Kernels::parse(&spec.run.kernels).expect("validated");
        let model = Model::build(&spec.model, shape, kernels, &device)?;
        let layout = Layout::of(&model);
        let mut init_rng = Rng::derive(spec.run.seed, Stream::Init, &[]);
        let global = init::init_flat(&layout, &mut init_rng, spec.model.identical_layers);
        let model = write_params(model, &global);
        let alg = algorithms::build(spec, layout.total, &data.client_sizes())?;
        let workers = client_workers(spec, layout.total);
        let mut trainers = vec![Trainer::new(
            model,
            device.clone(),
            layout.total,
            LocalOptimizer::sgd(spec.local.weight_decay, spec.local.max_norm, spec.local.nar),
        )];
        for _ in 1..workers {
            let m = write_params(Model::build(&spec.model, shape, kernels, &device)?, &global);
            trainers.push(Trainer::new(
                m,
                device.clone(),
                layout.total,
                LocalOptimizer::sgd(spec.local.weight_decay, spec.local.max_norm, spec.local.nar),
            ));
        }
        let pools = if workers > 1 {
            (0..workers)
                .map(|_| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(1)
                        .build()
                        .map_err(|e| Error::Run(format!("cannot start a client worker: {e}")))
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let eval_model = Model::build(&spec.model, shape, kernels, &eval_device)?;
        Ok(Experiment {
            spec: spec.clone(),
            trainers,
            pools,
            evaluator: Evaluator::new(eval_model, eval_device, spec.fl.eval_batch_size),
            data,
            layout,
            global,
            alg,
            device,
        })
    }

    /// Local learning rate of round t: lr · decay^(t+1) (the FedNAR code's schedule).
    pub fn lr(&self, t: usize) -> f64 {
        self.spec.local.lr * self.spec.local.lr_decay.powi(t as i32 + 1)
    }

    /// Run round t; returns the CSV row (without evaluation fields) or the divergence.
    pub fn round(&mut self, t: usize) -> std::result::Result<Row, Divergence> {
        let st = self.round_stats(t)?;
        Ok(Row {
            round: t,
            test_acc: f64::NAN,
            test_loss: f64::NAN,
            train_loss: st.loss_sum / st.steps.max(1) as f64,
            lr: self.lr(t),
            clipped_steps: st.clipped,
            mean_clip_norm: st.clip_norm_sum / st.steps.max(1) as f64,
            update_norm: st.update_norm,
            server_lr: st.server.server_lr,
            server_state_norm: st.server.state_norm,
            elapsed_s: 0.0,
        })
    }

    /// Run round t; returns the round's raw statistics or the divergence.
    pub fn round_stats(&mut self, t: usize) -> std::result::Result<RoundStats, Divergence> {
        let lr = self.lr(t);
        let sizes = self.data.client_sizes();
        let mut client = BurnClients {
            trainers: &mut self.trainers,
            pools: &self.pools,
            data: &self.data,
            spec: &self.spec,
            device: &self.device,
        };
        let cfg = RoundConfig {
            seed: self.spec.run.seed,
            clients_per_round: self.spec.fl.clients_per_round,
            lr,
        };
        run_round(
            t,
            &cfg,
            &sizes,
            &mut self.global,
            self.alg.as_mut(),
            &mut client,
        )
    }

    /// Evaluate the algorithm's evaluation model on the test split.
    pub fn evaluate(&mut self) -> (f64, f64) {
        let params = self.alg.eval_params().unwrap_or(&self.global);
        self.evaluator.evaluate(params, &self.data.test)
    }
}

/// Where and why a run diverged: (round, client if known, message).
pub type Divergence = (usize, Option<usize>, String);

/// Local training as the round sees it: train clients from an anchor, leave each Δ_i.
pub trait LocalTrainer {
    /// How many clients `train_many` trains at once.
    fn width(&self) -> usize {
        1
    }
    /// Train `clients` (at most `width`) from `anchor`; stats in the same order, and Δ of the
    /// k-th client in `delta(k)`.
    fn train_many(
        &mut self,
        round: usize,
        clients: &[usize],
        anchor: &[f32],
        alg: &dyn Algorithm,
        lr: f64,
    ) -> Vec<LocalStats>;
    fn delta(&self, k: usize) -> &[f32];
}

/// The burn model trainers (one per worker) over a federated data set.
pub struct BurnClients<'a> {
    pub trainers: &'a mut [Trainer],
    pub pools: &'a [rayon::ThreadPool],
    pub data: &'a FedData,
    pub spec: &'a Spec,
    pub device: &'a Device,
}

/// Train client `c` of round `t` on `trainer`: its local steps, batches and augmentation are
/// drawn from the (seed, round, client) stream, whoever trains it.
#[allow(clippy::too_many_arguments)]
fn train_client(
    trainer: &mut Trainer,
    data: &FedData,
    spec: &Spec,
    t: usize,
    c: usize,
    anchor: &[f32],
    alg: &dyn Algorithm,
    lr: f64,
) -> LocalStats {
    let k = local_steps(
        spec.local.steps,
        spec.local.epochs,
        spec.local.batch_size,
        data.clients[c].len(),
    );
    let mut rng = Rng::derive(spec.run.seed, Stream::Local, &[t as u64, c as u64]);
    trainer.train(data, c, anchor, alg, k, spec.local.batch_size, lr, &mut rng)
}

impl LocalTrainer for BurnClients<'_> {
    fn width(&self) -> usize {
        self.trainers.len()
    }

    fn train_many(
        &mut self,
        t: usize,
        clients: &[usize],
        anchor: &[f32],
        alg: &dyn Algorithm,
        lr: f64,
    ) -> Vec<LocalStats> {
        let (data, spec) = (self.data, self.spec);
        if clients.len() == 1 || self.pools.is_empty() {
            return clients
                .iter()
                .zip(self.trainers.iter_mut())
                .map(|(&c, tr)| {
                    // dropout draws from the backend's global generator: seed it per client
                    self.device.seed(
                        Rng::derive(spec.run.seed, Stream::Dropout, &[t as u64, c as u64])
                            .next_u64(),
                    );
                    train_client(tr, data, spec, t, c, anchor, alg, lr)
                })
                .collect();
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = clients
                .iter()
                .zip(self.trainers.iter_mut().zip(self.pools))
                .map(|(&c, (tr, pool))| {
                    s.spawn(move || {
                        pool.install(|| train_client(tr, data, spec, t, c, anchor, alg, lr))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("client worker panicked"))
                .collect()
        })
    }

    fn delta(&self, k: usize) -> &[f32] {
        self.trainers[k].delta()
    }
}

/// What a round needs besides the algorithm and the trainer.
pub struct RoundConfig {
    pub seed: u64,
    pub clients_per_round: usize,
    pub lr: f64,
}

/// What a round reports.
#[derive(Clone, Debug, Default)]
pub struct RoundStats {
    pub loss_sum: f64,
    pub steps: usize,
    pub clipped: usize,
    pub clip_norm_sum: f64,
    /// Training samples processed (short batches counted as they are).
    pub samples: usize,
    pub update_norm: f64,
    pub server: ServerLog,
}

/// Clients sampled in round t: `clients_per_round` distinct of `n`, from the round's stream.
pub fn sample_clients(seed: u64, t: usize, n: usize, k: usize) -> Vec<usize> {
    Rng::derive(seed, Stream::Sampling, &[t as u64]).choose_distinct(n, k)
}

/// One round (§1): sample, train each client from the broadcast model, aggregate
/// Δ̄ = Σ p_i Δ_i / Σ p_i and G = Σ p_i ‖Δ_i‖² / Σ p_i (p_i = n_i / Σ n) in sampling order,
/// and let the algorithm update the global model.
pub fn run_round(
    t: usize,
    cfg: &RoundConfig,
    client_sizes: &[usize],
    global: &mut [f32],
    alg: &mut dyn Algorithm,
    trainer: &mut dyn LocalTrainer,
) -> std::result::Result<RoundStats, Divergence> {
    let sampled = sample_clients(cfg.seed, t, client_sizes.len(), cfg.clients_per_round);
    let info = RoundInfo {
        round: t,
        lr: cfg.lr,
        sampled: sampled.clone(),
    };
    alg.begin_round(&info, global);
    let anchor: Vec<f32> = alg
        .broadcast()
        .map(|b| b.to_vec())
        .unwrap_or_else(|| global.to_vec());
    let total: usize = client_sizes.iter().sum();
    let mut acc = vec![0f64; global.len()];
    let (mut wsum, mut sq) = (0f64, 0f64);
    let mut st = RoundStats::default();
    // Clients are trained `width` at a time and aggregated strictly in sampling order, so the
    // result does not depend on the width.
    for chunk in sampled.chunks(trainer.width().max(1)) {
        let stats = trainer.train_many(t, chunk, &anchor, &*alg, cfg.lr);
        for (k, (&c, ls)) in chunk.iter().zip(stats).enumerate() {
            if let Some(s) = ls.diverged_at {
                return Err((
                    t,
                    Some(c),
                    format!("non-finite training loss in round {t}, client {c}, local step {s}"),
                ));
            }
            let delta = trainer.delta(k);
            let p = client_sizes[c] as f64 / total as f64;
            wsum += p;
            sq += p * global_norm(delta).powi(2);
            acc.iter_mut()
                .zip(delta)
                .for_each(|(a, d)| *a += p * *d as f64);
            alg.client_done(
                c,
                delta,
                &ClientInfo {
                    steps: ls.steps,
                    lr: cfg.lr,
                    samples: ls.samples,
                },
            );
            st.loss_sum += ls.loss_sum;
            st.steps += ls.steps;
            st.clipped += ls.clipped;
            st.clip_norm_sum += ls.clip_norm_sum;
            st.samples += ls.samples;
        }
    }
    let agg = Aggregate {
        mean_delta: acc.iter().map(|a| (a / wsum) as f32).collect(),
        mean_sq_norm: sq / wsum,
        clients: sampled.len(),
    };
    let before = global.to_vec();
    st.server = alg.server_update(&info, global, &agg);
    if global.iter().any(|v| !v.is_finite()) {
        return Err((
            t,
            None,
            format!("the global model became non-finite in round {t}"),
        ));
    }
    st.update_norm = global
        .iter()
        .zip(&before)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    Ok(st)
}

/// The checkpoint file: a JSON header line, then the raw little-endian f32 vectors.
pub mod checkpoint {
    use super::*;
    use serde::{Deserialize, Serialize};

    pub const MAGIC: &str = "FEDRUN-CHECKPOINT-1";

    #[derive(Serialize, Deserialize)]
    pub struct Header {
        pub magic: String,
        pub next_round: usize,
        pub csv_bytes: u64,
        pub elapsed_s: f64,
        pub best: Option<(f64, usize)>,
        pub last: Option<(f64, f64)>,
        pub spec: String,
        pub vectors: Vec<(String, usize)>,
    }

    pub fn write(path: &Path, header: &Header, vectors: &[(String, &[f32])]) -> Result<()> {
        let mut out = serde_json::to_vec(header).expect("json");
        out.push(b'\n');
        for (_, v) in vectors {
            for x in v.iter() {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        write_atomic(path, &out)
    }

    /// Named vectors of a checkpoint.
    pub type Vectors = Vec<(String, Vec<f32>)>;

    pub fn read(path: &Path) -> Result<(Header, Vectors)> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::io(format!("cannot read checkpoint {}", path.display()), e))?;
        let nl = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| Error::Run(format!("{}: not a fedrun checkpoint", path.display())))?;
        let header: Header = serde_json::from_slice(&bytes[..nl])
            .map_err(|e| Error::Run(format!("{}: bad checkpoint header: {e}", path.display())))?;
        if header.magic != MAGIC {
            return Err(Error::Run(format!(
                "{}: not a fedrun checkpoint",
                path.display()
            )));
        }
        let mut pos = nl + 1;
        let mut vecs = Vec::new();
        for (name, len) in &header.vectors {
            let end = pos + len * 4;
            if end > bytes.len() {
                return Err(Error::Run(format!(
                    "{}: truncated checkpoint",
                    path.display()
                )));
            }
            let v = bytes[pos..end]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            vecs.push((name.clone(), v));
            pos = end;
        }
        Ok((header, vecs))
    }
}

/// Run the experiment a spec describes, writing `<out>/<name>/`: `spec.toml`, `rounds.csv`,
/// `summary.json` and `checkpoint.bin`. An existing folder with a checkpoint is resumed (its
/// spec must match); `force` starts afresh. Nothing is written before the spec and the data
/// have been checked.
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<Summary> {
    let dir = opts.out.join(&spec.run.name);
    let ckpt_path = dir.join("checkpoint.bin");
    let csv_path = dir.join("rounds.csv");
    // A finished run is not run again.
    if !opts.force
        && let Ok(s) = Summary::read(&dir)
        && s.status != "interrupted"
    {
        check_same_spec(&dir, spec)?;
        eprintln!(
            "{} is already {} (use --force to run it again)",
            dir.display(),
            s.status
        );
        return Ok(s);
    }
    let resume = !opts.force && ckpt_path.exists();
    if resume {
        check_same_spec(&dir, spec)?;
    }
    let data = data::load(spec, opts.data_dir.as_deref())?;
    eprintln!("{}", data.describe());
    let mut ex = Experiment::new(spec, data)?;
    eprintln!(
        "model {}: {} parameters; algorithm {}{}",
        spec.model.kind,
        ex.layout.total,
        spec.fl.algorithm,
        if spec.local.nar { " + FedNAR" } else { "" }
    );

    // Only now touch the output folder.
    if opts.force && dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot remove {}", dir.display()), e))?;
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create output folder {}", dir.display()), e))?;
    let (mut start, mut elapsed0, mut best, mut last, mut csv) =
        (0usize, 0f64, None::<(f64, usize)>, None::<(f64, f64)>, None);
    if resume {
        let (h, mut vecs) = checkpoint::read(&ckpt_path)?;
        let gi = vecs
            .iter()
            .position(|(n, _)| n == "global")
            .ok_or_else(|| Error::Run("checkpoint has no global model".into()))?;
        let g = vecs.swap_remove(gi).1;
        if g.len() != ex.layout.total {
            return Err(Error::Run(format!(
                "checkpoint model has {} parameters, the spec's model {}",
                g.len(),
                ex.layout.total
            )));
        }
        ex.global = g;
        ex.alg.load_state(vecs)?;
        start = h.next_round;
        elapsed0 = h.elapsed_s;
        best = h.best;
        last = h.last;
        csv = Some(CsvWriter::resume(&csv_path, h.csv_bytes)?);
        eprintln!("resuming {} at round {start}", dir.display());
    } else {
        write_atomic(&dir.join("spec.toml"), spec.to_toml().as_bytes())?;
    }
    let mut csv = match csv {
        Some(c) => c,
        None => CsvWriter::create(&csv_path)?,
    };
    let mut summary = Summary {
        status: "interrupted".into(),
        name: spec.run.name.clone(),
        message: "running, or stopped before the end".into(),
        ..Default::default()
    };
    summary.write(&dir)?;

    let rounds = spec.fl.rounds;
    let bar = opts.progress.then(|| {
        let b = indicatif::ProgressBar::new(rounds as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} rounds [{elapsed_precise} < {eta_precise}] {msg}",
            )
            .expect("style"),
        );
        b.set_position(start as u64);
        b
    });
    let t0 = Instant::now();
    let stop_at = opts
        .max_rounds_this_call
        .map(|m| (start + m).min(rounds))
        .unwrap_or(rounds);
    let mut done = start;
    let write_ckpt = |ex: &Experiment,
                      csv: &mut CsvWriter,
                      next: usize,
                      elapsed: f64,
                      best,
                      last|
     -> Result<()> {
        let csv_bytes = csv.sync()?;
        let state = ex.alg.state();
        let mut vectors: Vec<(String, &[f32])> = vec![("global".into(), &ex.global)];
        vectors.extend(state.iter().map(|(n, v)| (n.clone(), v.as_slice())));
        let header = checkpoint::Header {
            magic: checkpoint::MAGIC.into(),
            next_round: next,
            csv_bytes,
            elapsed_s: elapsed,
            best,
            last,
            spec: ex.spec.to_toml(),
            vectors: vectors.iter().map(|(n, v)| (n.clone(), v.len())).collect(),
        };
        checkpoint::write(&ckpt_path, &header, &vectors)
    };
    for t in start..stop_at {
        let is_last = t + 1 == rounds;
        let evaluate = (t + 1) % spec.fl.eval_every == 0 || is_last;
        // A non-finite loss in training or evaluation ends the run the same way.
        let outcome = ex.round(t).and_then(|row| {
            if !evaluate {
                return Ok((row, None));
            }
            let (acc, loss) = ex.evaluate();
            if loss.is_finite() {
                Ok((row, Some((acc, loss))))
            } else {
                Err((t, None, format!("non-finite test loss in round {t}")))
            }
        });
        let (mut row, eval) = match outcome {
            Ok(r) => r,
            Err((round, client, msg)) => {
                if let Some(b) = &bar {
                    b.abandon();
                }
                summary.status = "diverged".into();
                summary.rounds = round;
                summary.diverged_round = Some(round);
                summary.diverged_client = client;
                summary.message = msg.clone();
                summary.best_test_acc = best.map(|b| b.0);
                summary.best_round = best.map(|b| b.1);
                summary.final_test_acc = last.map(|l| l.0);
                summary.final_test_loss = last.map(|l| l.1);
                summary.elapsed_s = elapsed0 + t0.elapsed().as_secs_f64();
                summary.write(&dir)?;
                eprintln!("diverged: {msg}");
                return Ok(summary);
            }
        };
        done = t + 1;
        if let Some((acc, loss)) = eval {
            row.test_acc = acc;
            row.test_loss = loss;
            row.elapsed_s = elapsed0 + t0.elapsed().as_secs_f64();
            if best.is_none_or(|b| acc > b.0) {
                best = Some((acc, t));
            }
            last = Some((acc, loss));
            csv.write(&row)?;
            if let Some(b) = &bar {
                b.set_message(format!("test acc {acc:.2}%"));
            }
        }
        if let Some(b) = &bar {
            b.set_position(done as u64);
        }
        let every = spec.run.checkpoint_every;
        if is_last || (every > 0 && done % every == 0) {
            write_ckpt(
                &ex,
                &mut csv,
                done,
                elapsed0 + t0.elapsed().as_secs_f64(),
                best,
                last,
            )?;
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let elapsed = elapsed0 + t0.elapsed().as_secs_f64();
    summary.rounds = done;
    summary.elapsed_s = elapsed;
    summary.seconds_per_round = if done > start {
        t0.elapsed().as_secs_f64() / (done - start) as f64
    } else {
        0.0
    };
    summary.best_test_acc = best.map(|b| b.0);
    summary.best_round = best.map(|b| b.1);
    summary.final_test_acc = last.map(|l| l.0);
    summary.final_test_loss = last.map(|l| l.1);
    if done == rounds {
        summary.status = "complete".into();
        summary.message = String::new();
    } else {
        write_ckpt(&ex, &mut csv, done, elapsed, best, last)?;
    }
    summary.write(&dir)?;
    Ok(summary)
}

/// Refuse to continue a run folder whose spec differs, naming the keys.
fn check_same_spec(dir: &Path, spec: &Spec) -> Result<()> {
    let p = dir.join("spec.toml");
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(());
    };
    let old = Spec::from_str_with(&text, &p.display().to_string(), &[])?;
    let diff = old.diff_keys(spec);
    if diff.is_empty() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{} holds a run with a different spec (keys that differ: {}); use --force to start afresh, or another run.name",
            dir.display(),
            diff.join(", ")
        )))
    }
}
