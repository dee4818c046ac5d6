//! A small generated image data set with learnable structure (each class has its own mean
//! image), used by tests and smoke runs. Images are 3×32×32 so that every CIFAR model runs.

use super::fed::{Features, FedData, Split};
use crate::config::Spec;
use crate::error::Result;
use crate::rng::Rng;

pub const CLASSES: usize = 10;

fn make(n: usize, means: &[Vec<f32>], rng: &mut Rng) -> Split {
    let per = 3 * 32 * 32;
    let mut x = Vec::with_capacity(n * per);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % CLASSES;
        y.push(c as u8);
        x.extend(means[c].iter().map(|&m| m + 0.5 * rng.normal() as f32));
    }
    Split {
        x: Features::Images {
            c: 3,
            h: 32,
            w: 32,
            data: x,
        },
        y,
        resident: Default::default(),
    }
}

pub fn build(spec: &Spec, part_rng: &mut Rng) -> Result<FedData> {
    // the data itself depends on the seed only through its own stream
    let mut rng = Rng::derive(spec.run.seed, crate::rng::Stream::DataSelect, &[]);
    let means: Vec<Vec<f32>> = (0..CLASSES)
        .map(|_| (0..3 * 32 * 32).map(|_| rng.normal() as f32).collect())
        .collect();
    let train = make(
        spec.data.synthetic_train * spec.data.num_clients,
        &means,
        &mut rng,
    );
    let test = make(spec.data.synthetic_test, &means, &mut rng);
    let clients = super::partition::partition(&spec.data, &train.y, CLASSES, part_rng)?;
    Ok(FedData {
        name: "synthetic".into(),
        train,
        test,
        clients,
        num_classes: CLASSES,
        augment: spec.data.augmentation,
    })
}
