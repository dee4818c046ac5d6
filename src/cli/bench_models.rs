//! `fedrun bench --workload model --model NAME`: one client's local steps and a test-set
//! evaluation of each model of the three papers, in its paper's local-training setting (batch,
//! sequence length, clip and weight decay), on random inputs of the model's shape: the time of
//! a step does not depend on the values, and no data set is needed. `scripts/bench/torch_models.py`
//! times the same steps in PyTorch from the same table.

use clap::ValueEnum;
use std::time::Instant;

use crate::data::{Augment, Features, FedData, Split};
use crate::error::Result;
use crate::fl::engine::Experiment;
use crate::fl::engine::launches::count;
use crate::rng::Rng;

/// The models `fedrun bench --workload model` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchModel {
    /// The FedExP CNN (FedNAR's CIFAR-10 setting).
    Cnn,
    /// ResNet-18 with group norm (FedNAR's and FedACG's CIFAR model).
    Resnet18,
    /// The Fed-LAMB MNIST CNN.
    MnistCnn,
    /// The Fed-LAMB MNIST MLP (784 → 200 → 10).
    Mlp,
    /// The FedNAR Shakespeare transformer (6 layers, d 128).
    Transformer,
    /// The quickstart's transformer (2 layers, d 64).
    TransformerSmall,
    /// LEAF's Shakespeare LSTM (2 × 256).
    Lstm,
    /// FedDyn's Shakespeare LSTM (2 × 100).
    LstmSmall,
    /// LEAF's FEMNIST CNN.
    FemnistCnn,
    /// LEAF's CelebA CNN.
    CelebaCnn,
}

/// What one model's step reads: its input, batch, local setting and test set.
#[derive(Clone, Copy)]
struct Setting {
    /// The spec's `[data]` dataset, `[model]` and `[local]` lines besides the batch.
    dataset: &'static str,
    model: &'static str,
    local: &'static str,
    /// `(c, h, w)` of an image; None: 80 Shakespeare characters.
    image: Option<(usize, usize, usize)>,
    classes: usize,
    batch: usize,
    test: usize,
    eval_batch: usize,
}

const CIFAR: &str = "lr = 0.01\nweight_decay = 0.01\nmax_norm = 10.0\nnar = true";
const MNIST: &str = "weight_decay = 0.0\nmax_norm = 0.0\nnar = false";
const FEDACG: &str = "lr = 0.1\nweight_decay = 1e-3\nmax_norm = 10.0\nnar = false";
const FEDNAR_SHAKESPEARE: &str = "lr = 0.1\nweight_decay = 1e-4\nmax_norm = 10.0\nnar = false";
const QUICKSTART: &str = "lr = 0.5\nweight_decay = 1e-4\nmax_norm = 10.0\nnar = true";
const TRANSFORMER: &str = "kind = \"transformer\"\nlayers = 6\nd_model = 128\nheads = 4\nd_ff = 512\ndropout = 0.1\nidentical_layers = true";
const TRANSFORMER_SMALL: &str =
    "kind = \"transformer\"\nlayers = 2\nd_model = 64\nheads = 4\nd_ff = 256\ndropout = 0.0";
const CIFAR_IMAGE: Option<(usize, usize, usize)> = Some((3, 32, 32));
const MNIST_IMAGE: Option<(usize, usize, usize)> = Some((1, 28, 28));

#[allow(clippy::too_many_arguments)]
const fn st(
    dataset: &'static str,
    model: &'static str,
    local: &'static str,
    image: Option<(usize, usize, usize)>,
    classes: usize,
    batch: usize,
    test: usize,
    eval_batch: usize,
) -> Setting {
    Setting {
        dataset,
        model,
        local,
        image,
        classes,
        batch,
        test,
        eval_batch,
    }
}

/// Each model's paper setting: the FedNAR code's CIFAR-10 step (W1) for the CNN and
/// ResNet-18, Fed-LAMB's MNIST protocol, FedNAR's Shakespeare step and the quickstart's,
/// and the FedACG code's local step for the LEAF models.
const SETTINGS: [(BenchModel, Setting); 10] = {
    use BenchModel::*;
    let lamb_cnn = "lr = 0.01\nweight_decay = 0.0\nmax_norm = 0.0\nnar = false";
    [
        (
            Cnn,
            st(
                "cifar10",
                "kind = \"cnn\"",
                CIFAR,
                CIFAR_IMAGE,
                10,
                50,
                10_000,
                500,
            ),
        ),
        (
            Resnet18,
            st(
                "cifar10",
                "kind = \"resnet18\"",
                CIFAR,
                CIFAR_IMAGE,
                10,
                50,
                10_000,
                500,
            ),
        ),
        (
            MnistCnn,
            st(
                "mnist",
                "kind = \"mnist-cnn\"\ndropout = 0.5",
                lamb_cnn,
                MNIST_IMAGE,
                10,
                128,
                10_000,
                500,
            ),
        ),
        (
            Mlp,
            st(
                "mnist",
                "kind = \"mlp\"",
                MNIST,
                MNIST_IMAGE,
                10,
                128,
                10_000,
                500,
            ),
        ),
        (
            Transformer,
            st(
                "shakespeare",
                TRANSFORMER,
                FEDNAR_SHAKESPEARE,
                None,
                80,
                100,
                4_000,
                1_000,
            ),
        ),
        (
            TransformerSmall,
            st(
                "shakespeare",
                TRANSFORMER_SMALL,
                QUICKSTART,
                None,
                80,
                25,
                2_000,
                1_000,
            ),
        ),
        (
            Lstm,
            st(
                "shakespeare",
                "kind = \"lstm\"\nhidden = 256",
                FEDACG,
                None,
                80,
                50,
                4_000,
                1_000,
            ),
        ),
        (
            LstmSmall,
            st(
                "shakespeare",
                "kind = \"lstm-small\"",
                FEDACG,
                None,
                80,
                50,
                4_000,
                1_000,
            ),
        ),
        (
            FemnistCnn,
            st(
                "femnist",
                "kind = \"femnist-cnn\"",
                FEDACG,
                MNIST_IMAGE,
                62,
                50,
                4_000,
                500,
            ),
        ),
        (
            CelebaCnn,
            st(
                "celeba",
                "kind = \"celeba-cnn\"",
                FEDACG,
                Some((3, 84, 84)),
                2,
                50,
                4_000,
                500,
            ),
        ),
    ]
};

fn setting(m: BenchModel) -> Setting {
    SETTINGS
        .iter()
        .find(|(k, _)| *k == m)
        .map(|(_, s)| *s)
        .expect("every model has a setting")
}

/// `n` random samples of the setting's shape: normal pixels or characters, uniform labels.
fn random_split(s: &Setting, n: usize, rng: &mut Rng) -> Split {
    let y = (0..n).map(|_| rng.below(s.classes) as u8).collect();
    let x = match s.image {
        Some((c, h, w)) => Features::Images {
            c,
            h,
            w,
            data: (0..n * c * h * w).map(|_| rng.normal() as f32).collect(),
        },
        None => Features::Tokens {
            len: crate::data::shakespeare::SEQ_LEN,
            data: (0..n * crate::data::shakespeare::SEQ_LEN)
                .map(|_| rng.below(crate::data::shakespeare::VOCAB) as u8)
                .collect(),
        },
    };
    Split {
        x,
        y,
        resident: Default::default(),
    }
}

/// What `fedrun bench --workload model` times.
pub struct ModelBench {
    pub model: BenchModel,
    /// Local steps per client.
    pub steps: usize,
    /// Clients per round.
    pub clients: usize,
    /// Timed rounds.
    pub reps: usize,
    pub no_eval: bool,
}

/// The spec of `clients` clients training `steps` steps each of the setting in one round, and
/// their random data (one epoch of `steps` batches each, in order).
fn experiment(
    m: BenchModel,
    steps: usize,
    clients: usize,
    set: &[String],
) -> Result<(Experiment, Setting)> {
    let s = setting(m);
    let per = steps * s.batch;
    let text = format!(
        "[data]\ndataset = \"{}\"\npartition = \"iid\"\nnum_clients = {clients}\naugmentation = \"none\"\n[model]\n{}\n[fl]\nclients_per_round = {clients}\neval_batch_size = {}\n[local]\nepochs = 0\nsteps = {steps}\nbatch_size = {}\nlr_decay = 1.0\n{}\n[run]\nname = \"bench\"\n",
        s.dataset, s.model, s.eval_batch, s.batch, s.local
    );
    let spec = crate::schema::parse(&text, "workload model", set)?;
    let mut rng = Rng::from_seed(0);
    let train = random_split(&s, clients * per, &mut rng);
    let test = random_split(&s, s.test, &mut rng);
    let data = FedData {
        name: format!("random {}", s.dataset),
        train,
        test,
        clients: (0..clients)
            .map(|c| (c * per..(c + 1) * per).collect())
            .collect(),
        num_classes: s.classes,
        augment: Augment::None,
    };
    Ok((Experiment::new(&spec, data)?, s))
}

/// Time `reps` rounds of `clients` × `steps` local steps (after one untimed warm-up round)
/// and, unless `no_eval`, one test evaluation per round; one JSON line per round and a
/// summary. `step_s` is a round's time over its steps; on a GPU backend the kernels a round
/// and an evaluation launch are counted (`launches_per_step`: a round's over its steps);
/// `warmup_s` is the time from the bench's start to the end of its warm-up round (the cold
/// start, kernels compiled and tuned on an empty cache).
pub fn run(b: &ModelBench, set: &[String]) -> Result<()> {
    let started = Instant::now();
    let (m, reps, no_eval) = (b.model, b.reps, b.no_eval);
    let steps = b.steps * b.clients.max(1);
    let (mut ex, s) = experiment(m, b.steps, b.clients.max(1), set)?;
    let name = m.to_possible_value().map(|v| v.get_name().to_string());
    let name = name.unwrap_or_default();
    let threads = super::timing::threads();
    eprintln!(
        "model {name}: {} parameters, threads={threads}",
        ex.layout.total
    );
    ex.round_stats(0)?;
    let warmup_s = started.elapsed().as_secs_f64();
    let (mut step_s, mut eval_s, mut launches) = (Vec::new(), Vec::new(), (None, None));
    let device = ex.device.clone();
    for r in 0..reps {
        let t0 = Instant::now();
        let (got, per_round) = count(&device, || ex.round_stats(r + 1));
        got?;
        let step = t0.elapsed().as_secs_f64() / steps as f64;
        let t1 = Instant::now();
        let (acc, per_eval) = match no_eval {
            true => (None, None),
            false => {
                let (acc, n) = count(&device, || ex.evaluate());
                (Some(acc?.0), n)
            }
        };
        let ev = (!no_eval).then(|| t1.elapsed().as_secs_f64());
        let per_step = per_round.map(|n| n as f64 / steps as f64);
        println!(
            "{}",
            serde_json::json!({"model": name, "rep": r, "step_s": step,
                "train_samples_per_s": s.batch as f64 / step, "eval_s": ev,
                "eval_samples_per_s": ev.map(|e| s.test as f64 / e), "test_acc": acc,
                "launches_per_step": per_step, "launches_per_eval": per_eval,
                "threads": threads, "params": ex.layout.total})
        );
        step_s.push(step);
        eval_s.extend(ev);
        launches = (per_step, per_eval);
    }
    let med = super::timing::median;
    println!(
        "{}",
        serde_json::json!({"summary": true, "model": name, "clients": b.clients.max(1), "median_step_s": med(step_s),
            "median_eval_s": (!eval_s.is_empty()).then(|| med(eval_s)),
            "warmup_s": warmup_s, "launches_per_step": launches.0, "launches_per_eval": launches.1,
            "params": ex.layout.total, "threads": threads, "batch": s.batch, "test": s.test})
    );
    Ok(())
}

/// Tune the kernels of one model ahead of a study: one round of local steps and one test
/// evaluation, timed from the model's construction. With `--features autotune` burn times its
/// candidate kernels for every op shape met here and keeps the fastest in its cache, so a second
/// call (and every run of the same model, batch and backend) tunes nothing; its time is then the
/// plain round.
pub fn tune(b: &ModelBench, set: &[String]) -> Result<()> {
    let t = Instant::now();
    let (mut ex, _) = experiment(b.model, b.steps, b.clients.max(1), set)?;
    ex.round_stats(0)?;
    let train_s = t.elapsed().as_secs_f64();
    let t1 = Instant::now();
    if !b.no_eval {
        ex.evaluate()?;
    }
    let eval_s = t1.elapsed().as_secs_f64();
    let name = b
        .model
        .to_possible_value()
        .map(|v| v.get_name().to_string());
    println!(
        "{}",
        serde_json::json!({"tune": true, "model": name.unwrap_or_default(), "steps": b.steps,
            "train_s": train_s, "eval_s": eval_s, "tune_s": train_s + eval_s,
            "cache": tune_cache()})
    );
    Ok(())
}

/// Where the tuning results are kept, or null in a build without autotuning.
fn tune_cache() -> Option<String> {
    #[cfg(feature = "autotune")]
    return Some(crate::fl::engine::tune_cache_dir().display().to_string());
    #[cfg(not(feature = "autotune"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setting builds its model at the parameter count the papers' code has (and that
    /// `scripts/bench/torch_models.py` asserts for its PyTorch twin), and trains a step.
    #[test]
    fn every_setting_builds_its_model() {
        let counts = [
            (BenchModel::Cnn, 744_330),
            (BenchModel::Resnet18, 11_173_962),
            (BenchModel::MnistCnn, 21_840),
            (BenchModel::Mlp, 159_010),
            (BenchModel::Transformer, 1_220_432),
            (BenchModel::TransformerSmall, 115_408),
            (BenchModel::Lstm, 819_920),
            (BenchModel::LstmSmall, 133_520),
            (BenchModel::FemnistCnn, 6_603_710),
            (BenchModel::CelebaCnn, 31_202),
        ];
        assert_eq!(counts.len(), BenchModel::value_variants().len());
        for (m, n) in counts {
            let (ex, s) = experiment(m, 1, 1, &[]).unwrap();
            assert_eq!(ex.layout.total, n, "{m:?}");
            assert_eq!(ex.data.clients[0].len(), s.batch, "{m:?}: one step's batch");
        }
        let (mut ex, _) = experiment(BenchModel::Mlp, 2, 3, &[]).unwrap();
        assert_eq!(ex.data.client_sizes(), [256; 3]);
        let st = ex.round_stats(0).unwrap();
        assert_eq!((st.steps, st.samples), (6, 768));
    }
}
