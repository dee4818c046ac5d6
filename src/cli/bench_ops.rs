//! `fedrun bench --workload gemm|ops`: the gemm ceiling of this machine, and each convolution
//! of the CNN and ResNet-18 (batch 50) through fedrun's kernels (forward, input gradient,
//! weight gradient) and through burn's reference ops (forward + both gradients), in ms and
//! GFLOP/s (direct-convolution count, 2 FLOP per multiply-add). The layer table is
//! `torch_ops.py layers`'s, so the rows compare one to one. Threads: `RAYON_NUM_THREADS`.

use std::time::Instant;

use burn::nn::PaddingConfig2d;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::tensor::{Device, Distribution, Tensor};

use crate::kernels::conv::{self, Geom};
use crate::kernels::gemm::{View, matmul};
use crate::kernels::{Kernels, conv2d};

/// name, cin, h, cout, k, stride, pad, bias, count in the model, first layer (no input gradient)
#[allow(clippy::type_complexity)]
const LAYERS: &[(
    &str,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    bool,
    usize,
    bool,
)] = &[
    (
        "cnn.conv1 3->32 5x5 32x32",
        3,
        32,
        32,
        5,
        1,
        0,
        true,
        1,
        true,
    ),
    (
        "cnn.conv2 32->64 5x5 14x14",
        32,
        14,
        64,
        5,
        1,
        0,
        true,
        1,
        false,
    ),
    ("rn.64ch 32x32 3x3", 64, 32, 64, 3, 1, 1, false, 4, false),
    ("rn.128ch 16x16 3x3", 128, 16, 128, 3, 1, 1, false, 3, false),
    ("rn.512ch 4x4 3x3", 512, 4, 512, 3, 1, 1, false, 3, false),
    ("rn.stem 3->64 32x32", 3, 32, 64, 3, 1, 1, false, 1, true),
    ("rn.64->128 s2 3x3", 64, 32, 128, 3, 2, 1, false, 1, false),
    ("rn.64->128 s2 1x1", 64, 32, 128, 1, 2, 0, false, 1, false),
    ("rn.128->256 s2 3x3", 128, 16, 256, 3, 2, 1, false, 1, false),
    ("rn.128->256 s2 1x1", 128, 16, 256, 1, 2, 0, false, 1, false),
    ("rn.256ch 8x8 3x3", 256, 8, 256, 3, 1, 1, false, 3, false),
    ("rn.256->512 s2 3x3", 256, 8, 512, 3, 2, 1, false, 1, false),
    ("rn.256->512 s2 1x1", 256, 8, 512, 1, 2, 0, false, 1, false),
];

const BATCH: usize = 50;

/// Median seconds of `reps` calls after one warm-up.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut ts: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[ts.len() / 2]
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32
                / (1u32 << 24) as f32
                - 0.5
        })
        .collect()
}

/// GFLOP/s of a square sgemm of side `n` (what the convolutions are measured against).
pub fn gemm_ceiling(n: usize, reps: usize) -> f64 {
    let (a, b) = (data(n * n, 1), data(n * n, 2));
    let mut c = vec![0.0f32; n * n];
    let th = rayon::current_num_threads();
    let t = time(reps, || {
        matmul(
            n,
            n,
            n,
            &mut c,
            n,
            false,
            View::rows(&a, n),
            View::rows(&b, n),
            th,
        )
    });
    2.0 * (n * n * n) as f64 / t / 1e9
}

pub fn gemm(reps: usize) {
    let th = rayon::current_num_threads();
    for n in [256, 512, 1024, 2048] {
        println!(
            "gemm {n}^3, {th} thread(s): {:.1} GFLOP/s",
            gemm_ceiling(n, reps)
        );
    }
}

pub fn ops(reps: usize) {
    let th = rayon::current_num_threads();
    // the best of a few measurements: the first runs of a process are slower (clock ramp-up)
    let ceiling = (0..3).map(|_| gemm_ceiling(1024, reps)).fold(0.0, f64::max);
    println!("threads {th}; gemm 1024^3 ceiling {ceiling:.1} GFLOP/s; batch {BATCH}");
    println!(
        "| layer | × | fwd ms | dx ms | dw ms | fedrun fwd+bwd ms | GFLOP/s | % of gemm | burn fwd+bwd ms | burn / fedrun |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let dev = Device::flex().autodiff();
    let (mut tot_fr, mut tot_burn) = (0.0, 0.0);
    for &(name, cin, h, cout, k, s, p, bias, count, first) in LAYERS {
        let g = Geom {
            n: BATCH,
            cin,
            h,
            w: h,
            cout,
            kh: k,
            kw: k,
            sh: s,
            sw: s,
            ph: p,
            pw: p,
        };
        let (fwd, dx, dw) = time_fedrun(&g, reps, first, bias);
        let fr = fwd + dx + dw;
        let flops = 2.0 * g.macs() as f64 * if first { 2.0 } else { 3.0 };
        // burn's reference: forward and backward through autodiff
        let module: Conv2d = Conv2dConfig::new([cin, cout], [k, k])
            .with_stride([s, s])
            .with_padding(PaddingConfig2d::Explicit(p, p, p, p))
            .with_bias(bias)
            .init(&dev);
        let xt = Tensor::<4>::random([BATCH, cin, h, h], Distribution::Default, &dev);
        let burn = time(reps.min(3), || {
            let xt = if first {
                xt.clone()
            } else {
                xt.clone().require_grad()
            };
            let y = conv2d(&module, xt, Kernels::Burn);
            let grads = y.sum().backward();
            std::hint::black_box(module.weight.grad(&grads));
        });
        tot_fr += fr * count as f64;
        tot_burn += burn * count as f64;
        let gf = flops / fr / 1e9;
        println!(
            "| {name} | {count} | {:.2} | {:.2} | {:.2} | {:.2} | {gf:.1} | {:.0} % | {:.2} | {:.2} |",
            fwd * 1e3,
            dx * 1e3,
            dw * 1e3,
            fr * 1e3,
            100.0 * gf / ceiling,
            burn * 1e3,
            burn / fr
        );
    }
    println!(
        "ResNet-18 + CNN convolutions, weighted by count: fedrun {:.1} ms, burn {:.1} ms",
        tot_fr * 1e3,
        tot_burn * 1e3
    );
    pools(reps, &dev);
}

/// fedrun's convolution of `g`: forward, input gradient (none for a first layer) and weight
/// gradient, seconds each.
fn time_fedrun(g: &Geom, reps: usize, first: bool, bias: bool) -> (f64, f64, f64) {
    let x = data(g.n * g.cin * g.h * g.w, 3);
    let w = data(g.cout * g.cin * g.kh * g.kw, 4);
    let b = data(g.cout, 5);
    let dy = data(g.n * g.cout * g.oh() * g.ow(), 6);
    let fwd = time(reps, || {
        std::hint::black_box(conv::forward(g, &x, &w, bias.then_some(&b[..])));
    });
    let dx = if first {
        0.0
    } else {
        time(reps, || {
            std::hint::black_box(conv::input_grad(g, &w, &dy));
        })
    };
    let dw = time(reps, || {
        std::hint::black_box(conv::weight_grad(g, &x, &dy));
    });
    (fwd, dx, dw)
}

/// The CNN's two 2×2 max-pools, fedrun's kernel against burn's op.
fn pools(reps: usize, dev: &Device) {
    use crate::kernels::max_pool2d;
    use crate::kernels::pool::{self, Pool};
    use burn::nn::pool::MaxPool2dConfig;
    println!("| max-pool 2×2 + ReLU | fwd ms | bwd ms | burn fwd+bwd ms |");
    println!("|---|---|---|---|");
    for (c, h) in [(32usize, 28usize), (64, 10)] {
        let p = Pool {
            planes: BATCH * c,
            h,
            w: h,
            k: [2, 2],
            s: [2, 2],
            relu: true,
            ceil: false,
        };
        let x = data(BATCH * c * h * h, 7);
        let dy = data(BATCH * c * p.oh() * p.ow(), 8);
        let fwd = time(reps, || {
            std::hint::black_box(pool::forward(&p, &x));
        });
        let bwd = time(reps, || {
            std::hint::black_box(pool::backward(&p, &x, &dy));
        });
        let module = MaxPool2dConfig::new([2, 2]).init();
        let xt = Tensor::<4>::random([BATCH, c, h, h], Distribution::Default, dev);
        let burn = time(reps, || {
            let xt = xt.clone().require_grad();
            let grads = max_pool2d(&module, xt.clone(), true, Kernels::Burn)
                .sum()
                .backward();
            std::hint::black_box(xt.grad(&grads));
        });
        println!(
            "| {BATCH}×{c}×{h}×{h} | {:.2} | {:.2} | {:.2} |",
            fwd * 1e3,
            bwd * 1e3,
            burn * 1e3
        );
    }
}
