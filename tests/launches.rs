//! What the models launch on a GPU backend, counted on lavapipe (`--features wgpu`): cubecl's
//! launch observer sees every launch of the process, so this binary holds one test function
//! (no other test launches meanwhile).
#![cfg(all(feature = "wgpu", not(feature = "vulkan")))]

/// The kernels one forward and backward of the character LSTM launch on a GPU backend, counted
/// on lavapipe: with fedrun's layer (the whole recurrence one launch each way) a sequence twice
/// as long launches no more kernels, and the whole pass several times fewer than the
/// step-by-step form on burn's ops (`run.kernels = "burn"`: a product and the gates'
/// activations per step). A layer that fell back to burn's ops, or that launched anything per
/// time step, fails it.
#[test]
fn the_gpu_lstm_launches_as_many_kernels_at_any_length() {
    use burn::tensor::{Distribution, Tensor};
    use fedrun::config::{ModelKind, ModelSpec};
    use fedrun::fl::engine::launches::count;
    use fedrun::kernels::Kernels;
    use fedrun::model::copies::Stacked;
    use fedrun::model::{Model, Shape};
    let dev = fedrun::fl::engine::devices(fedrun::config::Backend::Wgpu)
        .unwrap()
        .0;
    let layers = 2;
    let launches = |kernels, len: usize| {
        let x = Tensor::<2>::random([4, len], Distribution::Uniform(0.0, 80.0), &dev).int();
        let spec = ModelSpec {
            kind: ModelKind::Lstm,
            hidden: 16,
            ..ModelSpec::default()
        };
        let shape = Shape {
            channels: 0,
            side: 0,
            classes: 80,
        };
        let model = Model::build(&spec, shape, kernels).unwrap();
        let params = vec![0.05f32; model.layout().total];
        let m = Stacked::new(&model, &[&params], &dev);
        let (_, n) = count(&dev, || {
            let y = m.logits(fedrun::data::Input::Tokens(x.clone()));
            let _ = (y.clone() * y).sum().backward();
        });
        n.expect("wgpu counts its launches")
    };
    let (short, long) = (launches(Kernels::Fedrun, 20), launches(Kernels::Fedrun, 40));
    // fusion groups the rest of the model a little otherwise at other sizes (74 at 40
    // characters against 76 at 20, lavapipe, 2026-12-06); a launch a time step would add 40
    assert!(
        long <= short + 4,
        "{long} launches at 40 characters, {short} at 20 ({layers} layers)"
    );
    let burns = launches(Kernels::Burn, 40);
    assert!(3 * long <= burns, "{long} launches against burn's {burns}");
    println!(
        "the character LSTM's forward and backward: {long} launches at 40 characters, {short} at 20; burn's ops {burns}"
    );
    the_copies_convolution_launches_as_many_kernels_at_any_k(&dev);
}

/// A cohort's convolution (the CIFAR CNN's first layer, 3→64, 5×5, batch 2) forward and
/// backward as batched products launches as many kernels for 50 copies as for one (burn's
/// grouped convolution: a weight-gradient launch or more per copy). Counted at K = 1, 10, 50;
/// printed for docs/PERFORMANCE.md.
fn the_copies_convolution_launches_as_many_kernels_at_any_k(dev: &burn::tensor::Device) {
    use burn::backend::ops::ConvOptions;
    use burn::tensor::{Distribution, Tensor};
    use fedrun::fl::engine::launches::count;
    let dev = dev.clone().autodiff();
    let launches = |k: usize, batched: bool| {
        let u = Distribution::Uniform(-1.0, 1.0);
        let x = Tensor::<4>::random([2, 3 * k, 32, 32], u, &dev);
        let w = Tensor::<4>::random([64 * k, 3, 5, 5], u, &dev).require_grad();
        let b = Tensor::<1>::random([64 * k], u, &dev).require_grad();
        let o = ConvOptions::new([1, 1], [0, 0], [1, 1], k);
        // once to upload the gather index, then counted
        for counted in [false, true] {
            let (_, n) = count(&dev, || {
                let y = if batched {
                    fedrun::kernels::conv2d_batched(x.clone(), w.clone(), Some(b.clone()), &o)
                } else {
                    burn::tensor::module::conv2d(x.clone(), w.clone(), Some(b.clone()), o.clone())
                };
                let _ = y.sum().backward();
            });
            if counted {
                return n.expect("wgpu counts its launches");
            }
        }
        unreachable!()
    };
    let ours: Vec<u64> = [1, 10, 50].iter().map(|&k| launches(k, true)).collect();
    let burns: Vec<u64> = [1, 10, 50].iter().map(|&k| launches(k, false)).collect();
    println!(
        "copies' convolution launches at K = 1, 10, 50: batched {ours:?}, burn's grouped {burns:?}"
    );
    assert!(
        ours[1] == ours[0] && ours[2] == ours[0],
        "batched products: {ours:?} launches at K = 1, 10, 50"
    );
}
