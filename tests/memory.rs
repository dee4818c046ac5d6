//! The memory a training step takes, measured, against the estimate `fedrun check` and the
//! cohort's automatic K rest on (`model::size::estimate`): every model's K copies at batch 50 on
//! flex, the bytes live at a step's peak above those live before it (the batch's copy, the
//! activations, the gradients, the temporaries; the most of three steps after a first, which
//! grows the kernels' per-thread scratch), counted by this binary's allocator. The estimate of a step
//! is its activations (`batch · activations · 4 · K`, as `check` counts them) and one gradient
//! a copy (`params · 4 · K`, which `check` counts with the model's copies). An evaluation batch
//! (one model, no autodiff) is measured against its own estimate, `batch · eval · 4`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::tensor::{Device, Int, Tensor, TensorData};
use fedrun::config::{ModelKind, ModelSpec};
use fedrun::data::Input;
use fedrun::kernels::Kernels;
use fedrun::model::copies::Stacked;
use fedrun::model::size::{Size, estimate};
use fedrun::model::{Model, Shape};

/// The system allocator, counting the bytes live now and the most live since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, size) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            let now = LIVE.fetch_add(size, Ordering::Relaxed) + size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One measurement at a time in this binary: the counts are the process's, and the test
/// harness runs tests on parallel threads.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The batch a copy (`FEDRUN_MEMORY_BATCH`, else 50, the goal's).
fn batch() -> usize {
    (std::env::var("FEDRUN_MEMORY_BATCH").ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

/// One measured step: the model, its copies, the bytes measured and estimated.
#[derive(Debug)]
struct Step {
    kind: ModelKind,
    params: u128,
    k: usize,
    measured: usize,
    estimated: u128,
}

/// `kind` for `c`×`side`×`side` images of `classes` classes (80-character sequences for `side`
/// 0), its spec and its size estimate.
fn model_of(kind: ModelKind, c: usize, side: usize, classes: usize) -> (Model, Size) {
    let spec = ModelSpec {
        kind,
        ..ModelSpec::default()
    };
    let shape = Shape {
        channels: c,
        side,
        classes,
    };
    let model = Model::build(&spec, shape, Kernels::Fedrun).unwrap();
    let size = estimate(&spec, (c * side * side) as u128, classes as u128);
    (model, size)
}

/// `n` inputs of the model's shape on `dev`.
fn inputs(n: usize, c: usize, side: usize, dev: &Device) -> Input {
    match side {
        0 => {
            let seq = fedrun::data::shakespeare::SEQ_LEN;
            let chars: Vec<i64> = (0..n * seq).map(|i| (i * 37 % 80) as i64).collect();
            Input::Tokens(Tensor::from_data(TensorData::new(chars, [n, seq]), dev))
        }
        _ => {
            let px: Vec<f32> = (0..n * c * side * side)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 48.0)
                .collect();
            Input::Images(Tensor::from_data(
                TensorData::new(px, [n, c, side, side]),
                dev,
            ))
        }
    }
}

/// A copy of `input` made now: the batch a run gathers from its split inside the step.
fn gathered(input: &Input) -> Input {
    match input {
        Input::Images(t) => Input::Images(t.clone().mul_scalar(1.0)),
        Input::Tokens(t) => Input::Tokens(t.clone().add_scalar(0)),
    }
}

/// The bytes live at `run`'s peak above those live before it: the most of three runs after a
/// first (the kernels' per-thread scratch, which only grows, is the first's; the two threads'
/// chunks interleave otherwise from run to run).
fn peak_of(run: impl Fn()) -> usize {
    run();
    (0..3)
        .map(|_| {
            let before = LIVE.load(Ordering::SeqCst);
            PEAK.store(before, Ordering::SeqCst);
            run();
            PEAK.load(Ordering::SeqCst).saturating_sub(before)
        })
        .max()
        .unwrap_or(0)
}

/// The bytes live at the peak of one training step of `k` copies of `kind` (a batch of 50 a
/// copy, copied in the step as a run gathers it) above those live before it, and the estimate.
fn step(kind: ModelKind, k: usize, c: usize, side: usize, classes: usize) -> Step {
    let dev = Device::flex().autodiff();
    let (model, size) = model_of(kind, c, side, classes);
    let x0 = vec![0.01f32; model.layout().total];
    let xs: Vec<&[f32]> = (0..k).map(|_| x0.as_slice()).collect();
    let n = k * batch();
    let input = inputs(n, c, side, &dev);
    let labels: Vec<i64> = (0..n).map(|i| (i % classes) as i64).collect();
    let y = Tensor::<1, Int>::from_data(TensorData::new(labels, [n]), &dev);
    let stacked = Stacked::new(&model, &xs, &dev);
    let seeds: Vec<u64> = (0..k as u64).collect();
    let measured = peak_of(|| {
        let logits = stacked.outputs(gathered(&input), Some(&seeds)).logits;
        drop(Stacked::losses(logits, y.clone(), None).sum().backward());
    });
    Step {
        kind,
        params: size.params,
        k,
        measured,
        estimated: (batch() as u128 * size.activations + size.params) * 4 * k as u128,
    }
}

/// The bytes live at the peak of an evaluation batch of `n` samples of `kind` (one model, no
/// autodiff: the batch's copy and the forward's logits, as `metrics::eval` takes them on flex)
/// above those live before it, and the estimate (`n · eval · 4`).
fn eval_peak(kind: ModelKind, c: usize, side: usize, classes: usize, n: usize) -> Step {
    let dev = Device::flex();
    let (model, size) = model_of(kind, c, side, classes);
    let x0 = vec![0.01f32; model.layout().total];
    let stacked = Stacked::frozen(&model, &[&x0], &dev);
    let input = inputs(n, c, side, &dev);
    let measured = peak_of(|| drop(stacked.logits(gathered(&input)).into_data()));
    Step {
        kind,
        params: size.params,
        k: 1,
        measured,
        estimated: n as u128 * size.eval * 4,
    }
}

/// Every model, as the data sets it reads give it: images (channels, side, classes) or
/// characters (side 0).
const MODELS: [(ModelKind, usize, usize, usize); 12] = [
    (ModelKind::Mlp, 1, 28, 10),
    (ModelKind::Linear, 1, 28, 10),
    (ModelKind::MnistCnn, 1, 28, 10),
    (ModelKind::FemnistCnn, 1, 28, 62),
    (ModelKind::EmnistCnn, 1, 28, 62),
    (ModelKind::TinyCnn, 3, 32, 10),
    (ModelKind::Cnn, 3, 32, 10),
    (ModelKind::CelebaCnn, 3, 84, 2),
    (ModelKind::Resnet18, 3, 32, 10),
    (ModelKind::LstmSmall, 0, 0, 80),
    (ModelKind::Lstm, 0, 0, 80),
    (ModelKind::Transformer, 0, 0, 80),
];

/// Each model that `which` takes, at each K of `ks`, measured (and its row printed).
fn table(ks: &[usize], which: impl Fn(ModelKind) -> bool) -> Vec<Step> {
    let mut out = Vec::new();
    for &(kind, c, side, classes) in MODELS.iter().filter(|m| which(m.0)) {
        for &k in ks {
            let s = step(kind, k, c, side, classes);
            eprintln!(
                "| {} | {} | {} | {:.1} | {:.1} | {:.2} |",
                s.kind,
                s.params,
                s.k,
                s.measured as f64 / 1e6,
                s.estimated as f64 / 1e6,
                s.estimated as f64 / s.measured as f64
            );
            out.push(s);
        }
    }
    out
}

/// Every step's estimate within a quarter of its measured peak, or within 2 MB: a step of a few
/// MB is within the measurement's noise (MNIST's CNN at K = 1 measured 2.9 to 4.7 MB from run to
/// run, as the two threads' chunks interleave).
fn within(steps: &[Step]) {
    let off: Vec<String> = (steps.iter())
        .filter(|s| {
            let (e, m) = (s.estimated as f64, s.measured as f64);
            !((0.75..=1.25).contains(&(e / m)) || (e - m).abs() <= 2e6)
        })
        .map(|s| format!("{} at K = {}", s.kind, s.k))
        .collect();
    assert!(off.is_empty(), "estimate off by over 25 %: {off:?}");
}

/// An evaluation batch of 100 (`fl.eval_batch_size`'s default) of every model, ResNet-18's
/// included, within a quarter of its estimate (or 2 MB).
#[test]
fn every_models_evaluation_memory_is_its_estimate_within_a_quarter() {
    let _one = one_at_a_time();
    let steps: Vec<Step> = (MODELS.iter())
        .map(|&(kind, c, side, classes)| {
            let s = eval_peak(kind, c, side, classes, 100);
            eprintln!(
                "| {} | eval 100 | {:.1} | {:.1} | {:.2} |",
                s.kind,
                s.measured as f64 / 1e6,
                s.estimated as f64 / 1e6,
                s.estimated as f64 / s.measured as f64
            );
            s
        })
        .collect();
    within(&steps);
}

#[test]
fn every_models_step_memory_is_its_estimate_within_a_quarter() {
    let _one = one_at_a_time();
    within(&table(&[1, 8], |k| k != ModelKind::Resnet18));
}

#[test]
#[ignore = "ResNet-18's 8 copies at batch 50 take minutes and about 3 GB on flex: cargo test --release --test memory -- --ignored --nocapture"]
fn resnet18s_step_memory_is_its_estimate_within_a_quarter() {
    let _one = one_at_a_time();
    within(&table(&[1, 8], |k| k == ModelKind::Resnet18));
}
