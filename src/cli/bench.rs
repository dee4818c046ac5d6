//! `fedrun bench`: the performance workloads of docs/PERFORMANCE.md, timed round by round.
//! Output keys match `torch_reference.py`'s: `round_s`, `train_s`, `eval_s`,
//! `train_images_per_s`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Instant;

use crate::data;
use crate::error::Result;
use crate::fl::engine::Experiment;

use super::bench_models::{BenchModel, ModelBench};
use super::timing::{median, threads};

/// What `fedrun bench` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Rounds of the FedExP CNN on CIFAR-10 (20 clients × 20 steps of 50).
    W1Cnn,
    /// The same with ResNet-18.
    W1Resnet,
    /// Rounds of the CNN, 50 clients × 1 epoch of batch 10.
    W2,
    /// Rounds of a spec (`--config`, default the quickstart's) on its own data, as a run
    /// trains them (with `--set run.cohort=K`, its cohorts).
    Round,
    /// The gemm ceiling.
    Gemm,
    /// Each convolution through fedrun's kernels and burn's ops.
    Ops,
    /// One model's local steps and test evaluation in its paper's setting (`--model`), on
    /// random inputs; `scripts/bench/torch_models.py` times the same in PyTorch.
    Model,
    /// Tune burn's kernels for one model (`--model`) ahead of a study, with `--features
    /// autotune`: one round of `--steps` local steps and one evaluation, timed; the results stay
    /// in the tuning cache, so the next run of the model tunes nothing.
    Tune,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[arg(long, value_enum, default_value_t = Workload::W1Cnn)]
    pub workload: Workload,
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// CIFAR-10 binary directory of the round workloads (default: the spec's `data.path`,
    /// `data/cifar10`; `scripts/fetch_cifar10.sh` fills it).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Skip the test evaluation.
    #[arg(long)]
    pub no_eval: bool,
    /// Repetitions per op (`gemm`, `ops`); the median is printed.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// The model of `--workload model`.
    #[arg(long, value_enum, default_value_t = BenchModel::Cnn)]
    pub model: BenchModel,
    /// Local steps per client and timed repetition (`--workload model`; `--rounds`
    /// repetitions).
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    /// Clients per timed repetition (`--workload model`): a round's clients, trained as a run
    /// trains them (two at once for the small models on two cores).
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// The spec of `--workload round`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra spec overrides.
    #[arg(long = "set")]
    pub set: Vec<String>,
}

/// The spec of a workload of rounds.
fn workload(w: Workload) -> String {
    let w1 = |model: &str| {
        format!(
            "[data]\ndataset = \"cifar10\"\npartition = \"dirichlet\"\nalpha = 0.3\nnum_clients = 100\n[model]\nkind = \"{model}\"\n[fl]\nclients_per_round = 20\n[local]\nsteps = 20\nbatch_size = 50\nlr = 0.01\nweight_decay = 0.01\nnar = true\n[run]\nname = \"bench\"\n"
        )
    };
    match w {
        Workload::W1Resnet => w1("resnet18"),
        Workload::W2 => "[data]\ndataset = \"cifar10\"\npartition = \"iid\"\nnum_clients = 1000\naugmentation = \"none\"\n[model]\nkind = \"cnn\"\n[fl]\nclients_per_round = 50\neval_every = 10\n[local]\nepochs = 1\nbatch_size = 10\nlr = 0.1\nlr_decay = 1.0\nweight_decay = 0.0\nmax_norm = 0.0\n[run]\nname = \"bench\"\n".into(),
        Workload::W1Cnn
        | Workload::Round
        | Workload::Gemm
        | Workload::Ops
        | Workload::Model
        | Workload::Tune => w1("cnn"),
    }
}

/// What `--workload model` times, from the arguments.
fn model_bench(a: &BenchArgs) -> ModelBench {
    ModelBench {
        model: a.model,
        steps: a.steps,
        clients: a.clients,
        reps: a.rounds,
        no_eval: a.no_eval,
    }
}

pub fn run(a: &BenchArgs) -> Result<()> {
    match a.workload {
        Workload::Gemm => {
            super::bench_ops::gemm(a.reps);
            return Ok(());
        }
        Workload::Ops => {
            super::bench_ops::ops(a.reps);
            return Ok(());
        }
        Workload::Model => return super::bench_models::run(&model_bench(a), &a.set),
        Workload::Tune => return super::bench_models::tune(&model_bench(a), &a.set),
        _ => {}
    }
    let (spec, name) = spec_of(a)?;
    time_rounds(&spec, &name, a)
}

/// The spec of a workload of rounds, `--set` and `--rounds` applied, and its name.
fn spec_of(a: &BenchArgs) -> Result<(crate::config::Spec, String)> {
    let mut set = a.set.clone();
    set.push(format!("fl.rounds={}", a.rounds));
    if a.workload == Workload::Round {
        let args = super::spec_args::SpecArgs {
            config: a.config.clone(),
            set,
        };
        let name = a
            .config
            .as_ref()
            .map_or("quickstart".into(), |p| p.display().to_string());
        return Ok((args.load()?, name));
    }
    let name = a
        .workload
        .to_possible_value()
        .map(|v| v.get_name().to_string());
    let name = name.unwrap_or_default();
    let text = workload(a.workload);
    let spec = crate::schema::parse(&text, &format!("workload {name}"), &set)?;
    Ok((spec, name))
}

/// Time `a.rounds` rounds of `spec`, each evaluated as the spec says (unless `--no-eval`).
fn time_rounds(spec: &crate::config::Spec, name: &str, a: &BenchArgs) -> Result<()> {
    let t = Instant::now();
    let data = data::load(spec, a.data_dir.as_deref())?;
    eprintln!(
        "{} (loaded in {:.2} s)",
        data.describe(),
        t.elapsed().as_secs_f64()
    );
    let threads = threads();
    let mut ex = Experiment::new(spec, data)?;
    eprintln!(
        "model {} with {} parameters, threads={threads}",
        spec.model.kind, ex.layout.total
    );
    let mut rounds = Vec::new();
    for r in 0..a.rounds {
        let t0 = Instant::now();
        let st = ex.round_stats(r)?;
        let train_s = t0.elapsed().as_secs_f64();
        let evaluate = !a.no_eval && ((r + 1) % spec.fl.eval_every == 0 || r + 1 == a.rounds);
        let t1 = Instant::now();
        let acc = match evaluate {
            true => Some(ex.evaluate()?.0),
            false => None,
        };
        let eval_s = t1.elapsed().as_secs_f64();
        let imgs = st.samples;
        let rec = serde_json::json!({
            // rounds completed, from 1, as in rounds.csv
            "round": r + 1,
            "lr": ex.lr(r),
            "test_acc": acc,
            "train_loss": st.loss_sum / st.steps.max(1) as f64,
            "round_s": t0.elapsed().as_secs_f64(),
            "train_s": train_s,
            "eval_s": eval_s,
            "train_images_per_s": imgs as f64 / train_s,
        });
        println!("{rec}");
        rounds.push((t0.elapsed().as_secs_f64(), train_s, imgs as f64 / train_s));
    }
    let med = median;
    println!(
        "{}",
        serde_json::json!({
            "summary": true,
            "workload": name,
            "median_round_s": med(rounds.iter().map(|r| r.0).collect()),
            "median_train_s": med(rounds.iter().map(|r| r.1).collect()),
            "median_train_images_per_s": med(rounds.iter().map(|r| r.2).collect()),
            "threads": threads,
            "cohort": crate::fl::engine::resources::cohort(spec).0,
            // what `check` estimates the run's peak at (data, model copies, a step's activations)
            "memory_estimate_bytes": crate::fl::engine::resources::memory(spec).peak() as f64,
        })
    );
    Ok(())
}
