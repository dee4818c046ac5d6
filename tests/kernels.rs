//! fedrun's kernels against burn's reference ops: forward values and the gradients of x, w and
//! b, over a table of shapes (kernel 1/3/5, stride 1/2, padding 0/1/2, batch 1 and 50, channel
//! counts that are not multiples of the vector width, non-contiguous inputs).

mod common;

use burn::nn::PaddingConfig2d;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::tensor::{Device, Distribution, Tensor};
use fedrun::kernels::{Kernels, conv2d};

/// max |a − b| / max |b|.
fn rel_err(a: Tensor<4>, b: Tensor<4>) -> f32 {
    let a = a.into_data().try_to_vec::<f32>().unwrap();
    let b = b.into_data().try_to_vec::<f32>().unwrap();
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-12);
    let diff = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// `f()` on a pool of `threads` threads.
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(f)
}

fn flat<const D: usize>(t: Tensor<D>) -> Tensor<4> {
    let n = t.shape().num_elements();
    t.reshape([1, 1, 1, n])
}

struct Case {
    n: usize,
    cin: usize,
    cout: usize,
    hw: [usize; 2],
    k: usize,
    stride: usize,
    pad: usize,
    bias: bool,
    /// Feed a transposed (strided) view instead of a contiguous tensor.
    strided: bool,
}

fn check(c: &Case) {
    let dev = Device::flex().autodiff();
    dev.seed(7);
    let conv: Conv2d = Conv2dConfig::new([c.cin, c.cout], [c.k, c.k])
        .with_stride([c.stride, c.stride])
        .with_padding(PaddingConfig2d::Explicit(c.pad, c.pad, c.pad, c.pad))
        .with_bias(c.bias)
        .init(&dev);
    let [h, w] = c.hw;
    let shape = if c.strided {
        [c.n, c.cin, w, h]
    } else {
        [c.n, c.cin, h, w]
    };
    let base = Tensor::<4>::random(shape, Distribution::Normal(0.0, 1.0), &dev);
    let run = |kernels: Kernels| {
        let leaf = base.clone().detach().require_grad();
        let x = if c.strided {
            leaf.clone().swap_dims(2, 3)
        } else {
            leaf.clone()
        };
        let y = conv2d(&conv, x, kernels);
        // a weighted sum, so every output element has its own gradient
        let r = Tensor::<4>::ones(y.shape(), &dev).cumsum(3).sin();
        let grads = (y.clone() * r).sum().backward();
        let dx = leaf.grad(&grads).unwrap();
        let dw = conv.weight.grad(&grads).unwrap();
        let db = conv.bias.as_ref().map(|b| b.grad(&grads).unwrap());
        (y.inner(), dx, dw, db)
    };
    let (y0, dx0, dw0, db0) = run(Kernels::Burn);
    let (y1, dx1, dw1, db1) = run(Kernels::Fedrun);
    let name = format!(
        "n{} {}→{} {:?} k{} s{} p{} bias {} strided {}",
        c.n, c.cin, c.cout, c.hw, c.k, c.stride, c.pad, c.bias, c.strided
    );
    assert_eq!(y0.shape(), y1.shape(), "{name}: output shape");
    let e = [
        ("y", rel_err(y1, y0)),
        ("dx", rel_err(dx1, dx0)),
        ("dw", rel_err(dw1, dw0)),
        (
            "db",
            match (db0, db1) {
                (Some(a), Some(b)) => rel_err(flat(b), flat(a)),
                _ => 0.0,
            },
        ),
    ];
    for (what, err) in e {
        assert!(err <= 1e-4, "{name}: {what} relative error {err:e}");
    }
}

#[test]
fn conv2d_matches_burn_over_the_shape_table() {
    let mut n = 0;
    for &k in &[1usize, 3, 5] {
        for &stride in &[1usize, 2] {
            for &pad in &[0usize, 1, 2] {
                if pad >= k && k > 1 {
                    continue;
                }
                // channel counts on both sides of the channels-last threshold (16)
                for &(batch, cin, cout) in &[
                    (1usize, 3usize, 5usize),
                    (50, 7, 17),
                    (1, 19, 5),
                    (50, 17, 9),
                ] {
                    for &(bias, strided) in &[(true, false), (false, true)] {
                        check(&Case {
                            n: batch,
                            cin,
                            cout,
                            hw: [11, 9],
                            k,
                            stride,
                            pad,
                            bias,
                            strided,
                        });
                        n += 1;
                    }
                }
            }
        }
    }
    assert!(n >= 80, "{n} cases");
}

#[test]
fn conv2d_matches_burn_on_the_models_layers() {
    // The FedExP CNN's two convolutions and ResNet-18's distinct ones (smaller batch).
    let layers = [
        (50, 3, 32, [32, 32], 5, 1, 0),
        (50, 32, 64, [14, 14], 5, 1, 0),
        (4, 3, 64, [32, 32], 3, 1, 1),
        (4, 64, 128, [32, 32], 3, 2, 1),
        (4, 64, 128, [32, 32], 1, 2, 0),
        (4, 256, 256, [8, 8], 3, 1, 1),
        (4, 512, 512, [4, 4], 3, 1, 1),
        // Winograd shapes: 3×3, stride 1, padding 1, even maps, 16+ channels each way
        (50, 32, 48, [10, 12], 3, 1, 1),
        (1, 17, 16, [6, 8], 3, 1, 1),
        // 20 output channels: the weight gradient's blocks of 16 channels end in a part block
        (2, 16, 20, [8, 8], 3, 1, 1),
    ];
    for (n, cin, cout, hw, k, stride, pad) in layers {
        check(&Case {
            n,
            cin,
            cout,
            hw,
            k,
            stride,
            pad,
            bias: k == 5 || cin == 17,
            strided: false,
        });
    }
}

#[test]
fn kernels_burn_gives_burns_conv_bit_for_bit() {
    // `Kernels::Burn` must give burn's result bit for bit.
    let dev = Device::flex();
    let conv: Conv2d = Conv2dConfig::new([3, 4], [3, 3]).init(&dev);
    let x = Tensor::<4>::random([2, 3, 6, 6], Distribution::Normal(0.0, 1.0), &dev);
    let a = conv2d(&conv, x.clone(), Kernels::Burn).into_data();
    let b = conv.forward(x).into_data();
    assert_eq!(a, b);
}

#[test]
fn max_pool2d_matches_burn() {
    use burn::nn::pool::MaxPool2dConfig;
    use burn::tensor::activation::relu;
    use fedrun::kernels::max_pool2d;
    let dev = Device::flex().autodiff();
    dev.seed(3);
    // (…, ceil mode): odd sides leave a partial last window in ceil mode (the CelebA CNN's
    // 21 → 11 → 6)
    for &(n, c, h, w, k, s, ceil) in &[
        (50usize, 32usize, 28usize, 28usize, 2usize, 2usize, false),
        (3, 5, 9, 7, 2, 2, false),
        (2, 3, 9, 9, 3, 2, false),
        (2, 3, 8, 6, 3, 1, false),
        (4, 6, 21, 11, 2, 2, true),
        (3, 5, 9, 8, 2, 2, true),
        (2, 3, 10, 9, 3, 2, true),
        (2, 3, 7, 7, 3, 3, true),
    ] {
        let pool = MaxPool2dConfig::new([k, k])
            .with_strides([s, s])
            .with_ceil_mode(ceil)
            .init();
        let base = Tensor::<4>::random([n, c, h, w], Distribution::Normal(0.0, 1.0), &dev);
        // plain, with a ReLU in front (ties at zero), and fused with a ReLU after: burn's
        // pool(relu(x)) is the reference for the fused relu(pool(x))
        for (relu_in, fused) in [(false, false), (true, false), (false, true)] {
            let with_relu = relu_in || fused;
            let run = |kernels: Kernels| {
                let leaf = base.clone().detach().require_grad();
                let y = match (kernels, fused) {
                    (Kernels::Burn, true) => max_pool2d(&pool, relu(leaf.clone()), false, kernels),
                    (_, true) => max_pool2d(&pool, leaf.clone(), true, kernels),
                    (_, false) => {
                        let x = if relu_in {
                            relu(leaf.clone())
                        } else {
                            leaf.clone()
                        };
                        max_pool2d(&pool, x, false, kernels)
                    }
                };
                let r = Tensor::<4>::ones(y.shape(), &dev).cumsum(3).cos();
                let grads = (y.clone() * r).sum().backward();
                (y.inner(), leaf.grad(&grads).unwrap())
            };
            let (y0, dx0) = run(Kernels::Burn);
            let (y1, dx1) = run(Kernels::Fedrun);
            let what =
                format!("{n}×{c}×{h}×{w} k{k} s{s} ceil {ceil} relu {with_relu} fused {fused}");
            assert_eq!(y0.into_data(), y1.into_data(), "{what}: forward");
            assert!(rel_err(dx1, dx0) <= 1e-6, "{what}: dx");
        }
    }
}

/// `n` values spread over `[-half_width, half_width)` in a fixed scrambled order (`seed` shifts it):
/// inputs for the thread-count tests, the same at every call.
fn spread(n: usize, seed: usize, half_width: f32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7919 + seed) % 1000) as f32 - 500.0) / 500.0 * half_width)
        .collect()
}

#[test]
fn kernels_give_the_same_bits_at_one_and_two_threads() {
    use fedrun::kernels::conv::{self, Geom};
    // every path: Winograd (64 channels, even maps), channels-last im2row (odd maps),
    // channels-first im2col (3 channels); 23×23 and 24×24 maps give one image per chunk, so
    // on two threads the chunks run in parallel (each with one-thread kernels), while 15×15
    // and 16×16 maps give few chunks that run one after another with the gemm and copy loops
    // split over the threads; 4×4 maps (ResNet-18's last stage) take Winograd with the weight
    // transforms split over the threads
    for (cin, side) in [(64, 24), (64, 16), (64, 23), (64, 15), (3, 24), (64, 4)] {
        let g = Geom {
            n: 6,
            cin,
            h: side,
            w: side,
            cout: 96,
            kh: 3,
            kw: 3,
            sh: 1,
            sw: 1,
            ph: 1,
            pw: 1,
        };
        let v = |n: usize, s: usize| spread(n, s, 1.0);
        let x = v(g.n * g.cin * g.h * g.w, 1);
        let w = v(g.cout * g.cin * 9, 2);
        let b = v(g.cout, 3);
        let dy = v(g.n * g.cout * g.oh() * g.ow(), 4);
        let run = |threads: usize| {
            on_threads(threads, || {
                (
                    conv::forward(&g, &x, &w, Some(&b)),
                    conv::input_grad(&g, &w, &dy),
                    conv::weight_grad(&g, &x, &dy),
                )
            })
        };
        assert!(
            run(1) == run(2),
            "cin {cin}, {side}×{side}: results differ between 1 and 2 threads"
        );
    }
}

#[test]
fn group_norm_and_pool_give_the_same_bits_at_one_and_two_threads() {
    use fedrun::kernels::{norm, pool};
    let v = |n: usize, s: usize| spread(n, s, 2.0);
    // 6 × 64 × 16 × 16 and 15 × 15 (a remainder after the sums' lanes; ceil-mode windows)
    // are large enough that two threads split the blocks and planes
    for side in [16usize, 15] {
        let hw = side * side;
        for relu in [false, true] {
            let g = norm::Gn {
                n: 6,
                c: 64,
                hw,
                groups: 32,
                eps: 1e-5,
                relu,
            };
            let (x, dy) = (v(6 * 64 * hw, 1), v(6 * 64 * hw, 2));
            let (gamma, beta) = (v(64, 3), v(64, 4));
            let p = pool::Pool {
                planes: 6 * 64,
                h: side,
                w: side,
                k: [2, 2],
                s: [2, 2],
                relu,
                ceil: true,
            };
            let dyp = v(6 * 64 * p.oh() * p.ow(), 5);
            let run = |threads: usize| {
                on_threads(threads, || {
                    let (y, st) = norm::forward(&g, &x, &gamma, &beta);
                    let grads = norm::backward(&g, &x, &st, &gamma, &beta, &dy);
                    (
                        y,
                        st,
                        grads,
                        pool::forward(&p, &x),
                        pool::backward(&p, &x, &dyp),
                    )
                })
            };
            assert!(
                run(1) == run(2),
                "{side}×{side}, relu {relu}: results differ between 1 and 2 threads"
            );
        }
    }
}

#[test]
fn group_norm_matches_burn() {
    use burn::module::Param;
    use burn::nn::GroupNormConfig;
    use burn::tensor::activation::relu;
    use fedrun::kernels::group_norm;
    let dev = Device::flex().autodiff();
    dev.seed(5);
    for &(n, c, h, w, groups) in &[
        (50usize, 64usize, 8usize, 8usize, 2usize),
        (3, 6, 5, 7, 3),
        (1, 10, 1, 1, 2),
        (4, 128, 4, 4, 2),
    ] {
        let mut gn = GroupNormConfig::new(groups, c).init(&dev);
        gn.gamma = Some(Param::from_tensor(Tensor::random(
            [c],
            Distribution::Normal(1.0, 0.5),
            &dev,
        )));
        gn.beta = Some(Param::from_tensor(Tensor::random(
            [c],
            Distribution::Normal(0.0, 0.5),
            &dev,
        )));
        // a shifted, scaled input: the statistics must not lose precision
        let base = Tensor::<4>::random([n, c, h, w], Distribution::Normal(3.0, 2.0), &dev);
        for with_relu in [false, true] {
            let run = |kernels: Kernels| {
                let leaf = base.clone().detach().require_grad();
                let y = match kernels {
                    Kernels::Burn => {
                        let y = gn.forward(leaf.clone());
                        if with_relu { relu(y) } else { y }
                    }
                    Kernels::Fedrun => group_norm(&gn, leaf.clone(), with_relu, kernels),
                };
                let r = Tensor::<4>::ones(y.shape(), &dev).cumsum(3).sin();
                let grads = (y.clone() * r).sum().backward();
                let dg = gn.gamma.as_ref().unwrap().grad(&grads).unwrap();
                let db = gn.beta.as_ref().unwrap().grad(&grads).unwrap();
                (y.inner(), leaf.grad(&grads).unwrap(), flat(dg), flat(db))
            };
            let a = run(Kernels::Burn);
            let b = run(Kernels::Fedrun);
            let what = format!("{n}×{c}×{h}×{w} groups {groups} relu {with_relu}");
            for (name, e) in [
                ("y", rel_err(b.0, a.0)),
                ("dx", rel_err(b.1, a.1)),
                ("dgamma", rel_err(b.2, a.2)),
                ("dbeta", rel_err(b.3, a.3)),
            ] {
                assert!(e <= 1e-4, "{what}: {name} relative error {e:e}");
            }
        }
    }
}

#[test]
fn dropout_keeps_and_scales_like_burns_and_its_gradient_is_its_mask() {
    use fedrun::kernels::dropout_copies;
    let device = Device::flex().autodiff();
    let x = Tensor::<2>::random([64, 100], Distribution::Uniform(1.0, 2.0), &device).require_grad();
    let drop = |seed: u64| dropout_copies(x.clone(), &[seed], 0, 0.3, Kernels::Fedrun);
    let y = drop(7);
    let g = (y.clone() * 2.0).sum().backward();
    let gx = x.grad(&g).unwrap().into_data().try_to_vec::<f32>().unwrap();
    let (xs, ys) = (
        x.clone().into_data().try_to_vec::<f32>().unwrap(),
        y.clone().into_data().try_to_vec::<f32>().unwrap(),
    );
    let scale = (1.0 / 0.7f64) as f32;
    let kept = ys.iter().filter(|&&v| v != 0.0).count() as f64 / ys.len() as f64;
    assert!((kept - 0.7).abs() < 0.03, "kept {kept}");
    for ((&x, &y), &g) in xs.iter().zip(&ys).zip(&gx) {
        // kept: y = x·s and dL/dx = 2s; dropped: both 0
        assert!((y == x * scale && g == 2.0 * scale) || (y == 0.0 && g == 0.0));
    }
    // the seed fixes the mask; another seed, another mask
    let vals = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
    assert_eq!(vals(drop(7)), ys);
    assert_ne!(vals(drop(8)), ys);
    // probability 0: the identity
    assert_eq!(
        vals(dropout_copies(x.clone(), &[7], 0, 0.0, Kernels::Fedrun)),
        xs
    );
}

#[test]
fn linear_matches_burn_values_and_gradients_at_any_thread_count() {
    use burn::nn::LinearConfig;
    use fedrun::kernels::linear;
    let device = Device::flex().autodiff();
    let lin = LinearConfig::new(300, 70).init(&device);
    for m in [1, 50, 128] {
        let x =
            Tensor::<2>::random([m, 300], Distribution::Uniform(-1.0, 1.0), &device).require_grad();
        let run = |threads: usize| {
            on_threads(threads, || {
                let y = linear(&lin, x.clone(), Kernels::Fedrun);
                let g = (y.clone() * y.clone()).sum().backward();
                let b = lin.bias.as_ref().unwrap();
                let v = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
                (
                    v(y),
                    v(x.grad(&g).unwrap()),
                    v(lin.weight.grad(&g).unwrap()),
                    b.grad(&g).unwrap().into_data().try_to_vec::<f32>().unwrap(),
                )
            })
        };
        let ours = run(2);
        assert_eq!(ours, run(1), "m {m}: one thread");
        let r = lin.forward(x.clone());
        let g = (r.clone() * r.clone()).sum().backward();
        let flat4 = |v: Vec<f32>| Tensor::<1>::from_floats(v.as_slice(), &device);
        let check = |a: Vec<f32>, b: Tensor<1>, what: &str| {
            assert!(rel_err(flat(flat4(a)), flat(b)) < 1e-5, "m {m}: {what}");
        };
        check(ours.0, r.reshape([m * 70]), "y");
        check(ours.1, x.grad(&g).unwrap().reshape([m * 300]), "dx");
        check(
            ours.2,
            lin.weight.grad(&g).unwrap().reshape([300 * 70]),
            "dw",
        );
        check(ours.3, lin.bias.as_ref().unwrap().grad(&g).unwrap(), "db");
    }
}

/// The K copies' dropout mask in one op (the device form, from the seeds as a tensor) is each
/// copy's mask alone, side by side along the axis: for each layout, copy c's part (narrowed
/// along the axis) equals `dropout::values` of copy c's seed, and multiplying it in is what
/// `run.kernels = "burn"` does copy by copy. A mask whose copies took one seed, or whose index
/// ran over the whole tensor instead of the copy's part, fails it.
#[test]
fn the_copies_dropout_mask_is_each_copys_mask_alone() {
    use burn::tensor::TensorData;
    use fedrun::kernels::dropout::{Mask, values};
    use fedrun::kernels::ext_mask::{quarters, seed_of};
    let device = Device::flex();
    let seeds = [0x0123_4567_89ab_cdefu64, 42, u64::MAX - 5];
    assert!(seeds.iter().all(|&s| seed_of(&quarters(s)) == s));
    for (shape, axis) in [
        (vec![3 * 50], 0),
        (vec![2, 3 * 4, 5, 5], 1),
        (vec![3 * 7, 9, 11], 0),
        (vec![4, 6, 3 * 8], 2),
    ] {
        for prob in [0.1, 0.5] {
            let like = Tensor::<1>::zeros([shape.iter().product::<usize>()], &device);
            let q: Vec<f32> = seeds.iter().flat_map(|&s| quarters(s)).collect();
            let st = Tensor::<2>::from_data(TensorData::new(q, [3, 4]), &device);
            let like = like.reshape::<4, _>(pad4(&shape));
            let ax = axis + 4 - shape.len();
            let mask = fedrun::kernels::dropout_mask(&like, st, ax, prob);
            let n = mask.dims()[ax] / 3;
            for (c, &s) in seeds.iter().enumerate() {
                let part = mask.clone().narrow(ax, c * n, n);
                let got = part.into_data().try_to_vec::<f32>().unwrap();
                let want = values(got.len(), Mask::new(s, prob));
                assert!(got == want, "{shape:?} axis {axis}, p {prob}: copy {c}");
            }
        }
    }
}

/// `shape` with leading ones to rank 4.
fn pad4(shape: &[usize]) -> [usize; 4] {
    let mut out = [1; 4];
    out[4 - shape.len()..].copy_from_slice(shape);
    out
}

/// The K copies' convolution as batched products (the GPU backends' cohort form) is burn's
/// grouped convolution, value and gradients, over the models' geometries (flex here, lavapipe
/// in tests/wgpu.rs).
#[test]
fn the_copies_convolution_as_batched_products_is_the_grouped_convolution() {
    common::conv_copies::check(&Device::flex().autodiff(), 1e-5);
}

/// The copies' columns (the batched convolution's im2col) hold each copy's map value that each
/// kernel position reads, or zero in the padding, as the convolution's definition says, and
/// their backward is their transpose: `<C(x), d> = <x, Cᵀ(d)>`. Over the models' geometries, a
/// non-square map and padding unequal before and after; a read shifted by one position, a lost
/// padding side or an adjoint that drops or doubles a column fails it.
#[test]
fn the_copies_columns_read_the_convolutions_positions_and_their_adjoint_is_their_transpose() {
    let dev = Device::flex().autodiff();
    let x = |i: usize| (i * 53 % 97) as f32 / 97.0 - 0.5;
    for case in common::conv_copies::column_cases() {
        let (k, c, [h, w], [kh, kw], o) = &case;
        let (dims, cols, gx) = common::conv_copies::columns_and_adjoint(&dev, &case);
        let side = |i: usize, m: usize, kn: usize| {
            (m + o.padding[i].0 + o.padding[i].1 - kn) / o.stride[i] + 1
        };
        let (oh, ow) = (side(0, *h, *kh), side(1, *w, *kw));
        assert_eq!(
            dims,
            [*k, c * kh * kw, 2 * oh * ow],
            "{case:?}: the columns' shape"
        );
        let mut dot = 0f64;
        for (at, got) in cols.iter().enumerate() {
            // column `at` is (copy, channel, ky, kx; sample, oy, ox), row-major
            let (col, row) = (at % (2 * oh * ow), at / (2 * oh * ow));
            let (s, oy, ox) = (col / (oh * ow), col % (oh * ow) / ow, col % ow);
            let (kk, ci, ky, kx) = (
                row / (c * kh * kw),
                row / (kh * kw) % c,
                row / kw % kh,
                row % kw,
            );
            let y = (oy * o.stride[0] + ky) as i64 - o.padding[0].0 as i64;
            let xx = (ox * o.stride[1] + kx) as i64 - o.padding[1].0 as i64;
            let inside = (0..*h as i64).contains(&y) && (0..*w as i64).contains(&xx);
            let ch = s * k * c + kk * c + ci;
            let want = match inside {
                true => x((ch * h + y as usize) * w + xx as usize),
                false => 0.0,
            };
            assert_eq!(*got, want, "{case:?}: column value {at}");
            dot += f64::from(want) * f64::from(0.25 + (at * 37 % 101) as f32 / 101.0);
        }
        let back: f64 = gx
            .iter()
            .enumerate()
            .map(|(i, g)| f64::from(x(i)) * f64::from(*g))
            .sum();
        assert!(
            (dot - back).abs() <= 1e-5 * dot.abs().max(1.0),
            "{case:?}: <C(x), d> = {dot} but <x, Cᵀ(d)> = {back}"
        );
    }
}
