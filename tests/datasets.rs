//! Tiny-ImageNet, LEAF FEMNIST and LEAF CelebA read from small files built here in the official
//! formats (real JPEGs, LEAF's JSON), checked against values computed in the test; the decoded
//! image cache detects damage; each data set's model learns on them.

mod common;

use std::path::Path;

use common::TempDir;
use fedrun::data::{Augment, Features, Input, Split, tiny_imagenet};
use fedrun::metrics::summary::Status;

/// A solid-colour JPEG (quality 100: a flat image decodes within a level or two).
fn write_jpeg(path: &Path, w: u32, h: u32, rgb: [u8; 3]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let img = image::RgbImage::from_pixel(w, h, image::Rgb(rgb));
    let mut f = std::fs::File::create(path).unwrap();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut f, 100)
        .encode_image(&img)
        .unwrap();
}

fn colour(label: usize, k: usize) -> [u8; 3] {
    [
        (30 + 60 * label + 7 * k) as u8,
        (200 - 50 * label) as u8,
        (90 + 11 * k) as u8,
    ]
}

/// The bytes of image `i` of a `Pixels` split.
fn pixels(s: &Split, i: usize) -> Vec<u8> {
    match &s.x {
        Features::Pixels { c, h, w, data, .. } => data[i * c * h * w..(i + 1) * c * h * w].to_vec(),
        other => panic!("not pixels: {:?}", other.image_shape()),
    }
}

fn assert_flat(px: &[u8], rgb: [u8; 3], what: &str) {
    let plane = px.len() / 3;
    for (ch, want) in rgb.iter().enumerate() {
        for &v in &px[ch * plane..(ch + 1) * plane] {
            assert!(
                (v as i32 - *want as i32).abs() <= 2,
                "{what}: channel {ch} {v} vs {want}"
            );
        }
    }
}

/// A 3-class Tiny-ImageNet folder: `wnids.txt` out of name order, two training images a class
/// listed by `_boxes.txt` in the order 1, 0, and one validation image a class.
fn write_mini_tiny(dir: &Path) -> Vec<&'static str> {
    let ids = vec!["n03", "n01", "n02"];
    std::fs::create_dir_all(dir.join("val/images")).unwrap();
    std::fs::write(dir.join("wnids.txt"), ids.join("\n") + "\n").unwrap();
    let mut ann = String::new();
    for (label, id) in ids.iter().enumerate() {
        let class = dir.join("train").join(id);
        let mut boxes = String::new();
        for k in [1, 0] {
            let name = format!("{id}_{k}.JPEG");
            write_jpeg(&class.join("images").join(&name), 64, 64, colour(label, k));
            boxes.push_str(&format!("{name}\t0\t0\t63\t63\n"));
        }
        std::fs::write(class.join(format!("{id}_boxes.txt")), boxes).unwrap();
        let name = format!("val_{label}.JPEG");
        write_jpeg(
            &dir.join("val/images").join(&name),
            64,
            64,
            colour(label, 5),
        );
        ann.push_str(&format!("{name}\t{id}\t0\t0\t63\t63\n"));
    }
    std::fs::write(dir.join("val/val_annotations.txt"), ann).unwrap();
    ids
}

#[test]
fn tiny_imagenet_folder_loads_in_its_files_order_and_normalises_when_batched() {
    let d = TempDir::new("tiny");
    write_mini_tiny(d.path());
    let (train, test, classes) = tiny_imagenet::load_dir(d.path()).unwrap();
    assert_eq!((train.len(), test.len(), classes), (6, 3, 3));
    // labels follow wnids.txt's lines, images each class's _boxes.txt lines (k = 1, then 0)
    assert_eq!(train.y, vec![0, 0, 1, 1, 2, 2]);
    assert_eq!(test.y, vec![0, 1, 2]);
    for i in 0..6 {
        let k = [1, 0][i % 2];
        assert_flat(&pixels(&train, i), colour(i / 2, k), "train");
    }
    assert_flat(&pixels(&test, 2), colour(2, 5), "test");
    // a batch is (p/255 − mean)/std per channel, with FedACG's Tiny-ImageNet constants
    let dev = burn::tensor::Device::flex();
    let (x, _) = fedrun::data::batch(&test, &[2], Augment::None, None, &dev);
    let Input::Images(x) = x else { panic!() };
    assert_eq!(x.dims(), [1, 3, 64, 64]);
    let v = x.into_data().try_to_vec::<f32>().unwrap();
    let px = pixels(&test, 2);
    for ch in 0..3 {
        let at = ch * 4096 + 100;
        let want = (px[at] as f32 / 255.0 - tiny_imagenet::MEAN[ch]) / tiny_imagenet::STD[ch];
        assert!((v[at] - want).abs() < 1e-6, "{} vs {want}", v[at]);
    }
}

#[test]
fn resnet18_learns_tiny_imagenet_images_with_the_global_head() {
    let d = TempDir::new("tiny-learn");
    let dir = d.path().join("data");
    write_mini_tiny(&dir);
    let sets = [
        "model.kind=\"resnet18\"",
        "model.head=\"global\"",
        "data.partition=\"iid\"",
        "data.num_clients=2",
        "fl.rounds=3",
        "local.lr=0.05",
        "local.steps=3",
        "local.batch_size=3",
    ];
    let rows = run(&spec("tiny-imagenet", &dir, &sets), &d.path().join("run"));
    // the training loss (column 3) falls round after round on the clients' images
    assert!(
        rows[2][3] < rows[1][3] && rows[1][3] < rows[0][3],
        "{rows:?}"
    );
}

#[test]
fn the_decoded_image_cache_is_reused_and_a_damaged_one_rebuilt() {
    let d = TempDir::new("tiny-cache");
    write_mini_tiny(d.path());
    let first = tiny_imagenet::load_dir(d.path()).unwrap();
    let cache = d.path().join(tiny_imagenet::CACHE_FILE);
    assert!(cache.exists());
    // read from the cache: the images are not decoded again (a broken JPEG goes unnoticed)
    let img = d.path().join("train/n01/images/n01_0.JPEG");
    let original = std::fs::read(&img).unwrap();
    let mut broken = original.clone();
    broken[200] ^= 0x55;
    broken[201] ^= 0x55;
    std::fs::write(&img, &broken).unwrap();
    let again = tiny_imagenet::load_dir(d.path()).unwrap();
    assert_eq!(pixels(&again.0, 2), pixels(&first.0, 2));
    std::fs::write(&img, &original).unwrap();
    // one flipped byte in the cache: detected by its checksum and rebuilt, same data
    let mut bytes = std::fs::read(&cache).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&cache, &bytes).unwrap();
    let rebuilt = tiny_imagenet::load_dir(d.path()).unwrap();
    for i in 0..6 {
        assert_eq!(pixels(&rebuilt.0, i), pixels(&first.0, i));
    }
    assert_ne!(std::fs::read(&cache).unwrap(), bytes);
    // a cut-short cache too
    std::fs::write(&cache, &bytes[..bytes.len() / 3]).unwrap();
    assert_eq!(tiny_imagenet::load_dir(d.path()).unwrap().0.y, first.0.y);
    // different files (an image replaced by one of another size): a new cache
    write_jpeg(&img, 64, 64, [1, 2, 3]);
    std::fs::write(&img, [std::fs::read(&img).unwrap(), vec![0; 7]].concat()).unwrap();
    let changed = tiny_imagenet::load_dir(d.path()).unwrap();
    assert_flat(&pixels(&changed.0, 3), [1, 2, 3], "replaced image");
}

#[test]
fn the_tiny_imagenet_fetch_script_checks_the_md5_and_unpacks_the_zip_whole() {
    let d = TempDir::new("tiny-fetch");
    write_mini_tiny(&d.path().join("tiny-imagenet-200"));
    // the official archive's layout: one zip holding the tiny-imagenet-200 folder
    let zip = d.path().join("tiny-imagenet-200.zip");
    let st = std::process::Command::new("python3")
        .args(["-m", "zipfile", "-c"])
        .arg(&zip)
        .arg("tiny-imagenet-200")
        .current_dir(d.path())
        .status()
        .unwrap();
    assert!(st.success());
    let fetch =
        |dest: &Path, md5: &str| common::fetch_with("fetch_tiny_imagenet.sh", dest, &zip, md5);
    let bad = d.path().join("bad");
    let out = fetch(&bad, "0123456789abcdef0123456789abcdef");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was unpacked"));
    assert!(!bad.join("wnids.txt").exists());
    let good = d.path().join("good");
    let out = fetch(&good, &common::md5_of(&zip));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (train, test, classes) = tiny_imagenet::load_dir(&good).unwrap();
    assert_eq!((train.len(), test.len(), classes), (6, 3, 3));
}

#[test]
fn tiny_imagenet_errors_name_the_file_and_what_is_wrong() {
    let d = TempDir::new("tiny-bad");
    let ids = write_mini_tiny(d.path());
    let ann = d.path().join("val/val_annotations.txt");
    std::fs::write(&ann, "val_0.JPEG\tn99\t0\t0\t1\t1\n").unwrap();
    let e = tiny_imagenet::load_dir(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("val_annotations.txt line 1") && e.contains("n99"),
        "{e}"
    );
    write_mini_tiny(d.path());
    write_jpeg(
        &d.path()
            .join(format!("train/{}/images/{}_0.JPEG", ids[0], ids[0])),
        32,
        32,
        [9, 9, 9],
    );
    let e = tiny_imagenet::load_dir(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("n03_0.JPEG") && e.contains("expected 64×64"),
        "{e}"
    );
    std::fs::write(d.path().join("train/n03/images/n03_0.JPEG"), b"not a jpeg").unwrap();
    let e = tiny_imagenet::load_dir(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("n03_0.JPEG") && e.contains("not a readable JPEG"),
        "{e}"
    );
    let e = tiny_imagenet::load_dir(&d.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("fetch_tiny_imagenet.sh"), "{e}");
}

/// A spec of `dataset` at `path` with `model`, for a 2-round run.
fn spec(dataset: &str, path: &Path, sets: &[&str]) -> fedrun::config::Spec {
    let mut all: Vec<String> = vec![
        format!("data.dataset=\"{dataset}\""),
        format!("data.path=\"{}\"", path.display()),
        "data.partition=\"natural\"".into(),
        "run.name=\"t\"".into(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    fedrun::schema::parse(&common::synthetic_spec(""), "t", &all).unwrap()
}

/// Run a spec; its rows (test accuracy and loss are columns 1 and 2, as the CSV writes them).
fn run(spec: &fedrun::config::Spec, out: &Path) -> Vec<Vec<f64>> {
    let opts = fedrun::fl::engine::RunOptions {
        out: out.to_path_buf(),
        ..Default::default()
    };
    let s = fedrun::fl::engine::run(spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete, "{}", s.message);
    common::columns(&out.join("t").join("rounds.csv"))
}

/// A LEAF JSON file as `json.dump` writes it: `users` with `(x, y)` each.
fn write_leaf(path: &Path, users: &[(&str, Vec<String>, Vec<String>)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let names: Vec<String> = users.iter().map(|u| format!("\"{}\"", u.0)).collect();
    let counts: Vec<String> = users.iter().map(|u| u.2.len().to_string()).collect();
    let data: Vec<String> = users
        .iter()
        .map(|(u, x, y)| {
            format!(
                "\"{u}\": {{\"x\": [{}], \"y\": [{}]}}",
                x.join(", "),
                y.join(", ")
            )
        })
        .collect();
    let text = format!(
        "{{\"users\": [{}], \"num_samples\": [{}], \"user_data\": {{{}}}}}",
        names.join(", "),
        counts.join(", "),
        data.join(", ")
    );
    std::fs::write(path, text).unwrap();
}

/// A FEMNIST character of class `y`: a bright bar at a class-specific row.
fn femnist_x(y: usize, k: usize) -> Vec<f32> {
    (0..784)
        .map(|i| {
            if i / 28 == 3 + 5 * y {
                1.0
            } else {
                0.01 * ((i + k) % 7) as f32
            }
        })
        .collect()
}

fn femnist_users(test: bool) -> Vec<(&'static str, Vec<String>, Vec<String>)> {
    let n = |u: usize| if test { 2 } else { 12 - 3 * u };
    ["f_a", "f_b", "f_c"]
        .iter()
        .enumerate()
        .map(|(u, name)| {
            let ys: Vec<usize> = (0..n(u)).map(|k| (k + u) % 4).collect();
            let xs = ys
                .iter()
                .enumerate()
                .map(|(k, &y)| format!("{:?}", femnist_x(y, k + 100 * test as usize)))
                .collect();
            (*name, xs, ys.iter().map(|y| y.to_string()).collect())
        })
        .collect()
}

/// The three users' LEAF FEMNIST folder under `d`.
fn femnist_dir(d: &TempDir) -> std::path::PathBuf {
    let dir = d.path().join("data");
    write_leaf(
        &dir.join("train/all_data_0_niid_05_keep_0_train_9.json"),
        &femnist_users(false),
    );
    write_leaf(
        &dir.join("test/all_data_0_niid_05_keep_0_test_9.json"),
        &femnist_users(true),
    );
    dir
}

#[test]
fn femnist_users_are_the_clients() {
    let d = TempDir::new("femnist");
    let dir = femnist_dir(&d);
    let s = spec(
        "femnist",
        &dir,
        &["data.num_clients=3", "model.kind=\"femnist-cnn\""],
    );
    let fed = fedrun::data::load(&s, None).unwrap();
    assert_eq!(fed.client_sizes(), vec![12, 9, 6]);
    assert_eq!(
        (fed.train.len(), fed.test.len(), fed.num_classes),
        (27, 6, 62)
    );
    // pixels as LEAF wrote them (no normalisation), labels as written: sample 13 is user f_b's
    // second, of class (1 + 1) % 4
    let Features::Images {
        c: 1,
        h: 28,
        w: 28,
        data,
    } = &fed.train.x
    else {
        panic!()
    };
    assert_eq!(&data[13 * 784..14 * 784], &femnist_x(2, 1)[..]);
    assert_eq!(fed.train.y[13], 2);
    // two users drawn by the seed: their own test samples only
    let two_spec = spec(
        "femnist",
        &dir,
        &["data.num_clients=2", "model.kind=\"mlp\""],
    );
    let two = fedrun::data::load(&two_spec, None).unwrap();
    assert_eq!((two.clients.len(), two.test.len()), (2, 4));
    let e = fedrun::data::load(
        &spec(
            "femnist",
            &dir,
            &["data.num_clients=4", "model.kind=\"mlp\""],
        ),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("data.num_clients") && e.contains("3 LEAF users"),
        "{e}"
    );
    // a label outside FEMNIST's 62 classes names the file and the user
    let mut bad = femnist_users(false);
    bad[1].2[0] = "62".into();
    write_leaf(
        &dir.join("train/all_data_0_niid_05_keep_0_train_9.json"),
        &bad,
    );
    let e = fedrun::data::load(&s, None).unwrap_err().to_string();
    assert!(
        e.contains("train_9.json") && e.contains("f_b") && e.contains("62"),
        "{e}"
    );
}

/// LEAF's CNN and FedExP's EMNIST CNN lower the test loss in a few rounds on the users' data.
#[test]
fn femnists_cnns_learn() {
    let d = TempDir::new("femnist-learn");
    let dir = femnist_dir(&d);
    for model in ["femnist-cnn", "emnist-cnn"] {
        let sets = [
            "data.num_clients=3",
            "fl.clients_per_round=3",
            "fl.rounds=4",
            "local.lr=0.05",
            "local.steps=4",
        ];
        let mut sets = sets.to_vec();
        let kind = format!("model.kind=\"{model}\"");
        sets.push(&kind);
        let rows = run(&spec("femnist", &dir, &sets), &d.path().join(model));
        assert!(rows[3][2] < rows[0][2], "{model}: {rows:?}");
    }
}

/// A LEAF CelebA folder: two celebrities of 6 training and 2 test faces (178×218 JPEGs under
/// `raw/img_align_celeba/`), smiling (1) faces bright, the others dark.
fn write_mini_celeba(dir: &Path) {
    let raw = dir.join("raw/img_align_celeba");
    let mut n = 0;
    let mut users = |count: usize| -> Vec<(&'static str, Vec<String>, Vec<String>)> {
        ["c_1", "c_2"]
            .iter()
            .map(|u| {
                let (mut xs, mut ys) = (Vec::new(), Vec::new());
                for k in 0..count {
                    n += 1;
                    let name = format!("{n:06}.jpg");
                    let y = k % 2;
                    let v = if y == 1 { 220 } else { 40 };
                    write_jpeg(&raw.join(&name), 178, 218, [v, v - 20, (n % 30) as u8 + 10]);
                    xs.push(format!("\"{name}\""));
                    // as LEAF's script writes it under Python 3: (a + 1) / 2, a float
                    ys.push(format!("{y}.0"));
                }
                (*u, xs, ys)
            })
            .collect()
    };
    let (train, test) = (users(6), users(2));
    write_leaf(
        &dir.join("train/all_data_niid_0_keep_5_train_9.json"),
        &train,
    );
    write_leaf(&dir.join("test/all_data_niid_0_keep_5_test_9.json"), &test);
}

#[test]
fn celeba_faces_are_resized_to_84_cached_and_learned() {
    let d = TempDir::new("celeba");
    let dir = d.path().join("data");
    write_mini_celeba(&dir);
    let s = spec(
        "celeba",
        &dir,
        &["data.num_clients=2", "model.kind=\"celeba-cnn\""],
    );
    let fed = fedrun::data::load(&s, None).unwrap();
    assert_eq!(fed.client_sizes(), vec![6, 6]);
    assert_eq!((fed.test.len(), fed.num_classes), (4, 2));
    assert_eq!(fed.train.x.image_shape(), Some((3, 84, 84)));
    // a flat 178×218 face resized stays flat: its colour at 84×84
    assert_flat(&pixels(&fed.train, 1), [220, 200, 12], "face 2");
    assert_eq!(&fed.train.y[..2], &[0, 1]);
    assert!(dir.join(fedrun::data::leaf_images::CELEBA_CACHE).exists());
    let again = fedrun::data::load(&s, None).unwrap();
    assert_eq!(pixels(&again.train, 7), pixels(&fed.train, 7));
    // the cache holds the labels: a train file with other labels (another attribute) is a new
    // cache, not the old labels
    let json = dir.join("train/all_data_niid_0_keep_5_train_9.json");
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::write(
        &json,
        text.replace("1.0", "2.0")
            .replace("0.0", "1.0")
            .replace("2.0", "0.0"),
    )
    .unwrap();
    let flipped = fedrun::data::load(&s, None).unwrap();
    assert_eq!(&flipped.train.y[..2], &[1, 0]);
    std::fs::write(&json, text).unwrap();
    let sets = [
        "data.num_clients=2",
        "model.kind=\"celeba-cnn\"",
        "fl.rounds=3",
        "local.lr=0.05",
    ];
    let rows = run(&spec("celeba", &dir, &sets), &d.path().join("run"));
    assert!(rows[2][2] < rows[0][2], "{rows:?}");
}

#[test]
fn the_new_models_are_refused_on_data_they_cannot_take() {
    let parse = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        fedrun::schema::parse("", "t", &sets)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = parse(&["model.kind=\"celeba-cnn\"", "data.dataset=\"cifar10\""]);
    assert!(e.contains("needs 3×84×84 images, not 3×32×32"), "{e}");
    let e = parse(&[
        "model.kind=\"femnist-cnn\"",
        "data.dataset=\"tiny-imagenet\"",
    ]);
    assert!(e.contains("needs 1×28×28"), "{e}");
    let e = parse(&[
        "model.kind=\"resnet18\"",
        "model.head=\"fednar\"",
        "data.dataset=\"tiny-imagenet\"",
    ]);
    assert!(e.contains("model.head = \"global\""), "{e}");
    assert!(
        fedrun::schema::parse(
            "",
            "t",
            &[
                "model.kind=\"resnet18\"".into(),
                "model.head=\"global\"".into(),
                "data.dataset=\"tiny-imagenet\"".into()
            ]
        )
        .is_ok()
    );
}

#[test]
fn the_new_models_have_the_papers_parameter_counts_and_output_shapes() {
    use fedrun::model::{Model, Shape};
    let dev = burn::tensor::Device::flex();
    let data = |kind: &str| match kind {
        "femnist-cnn" | "emnist-cnn" => "femnist",
        "celeba-cnn" => "celeba",
        _ => "cifar100",
    };
    let count = |kind: &str, s: Shape| {
        let sets = vec![
            format!("model.kind=\"{kind}\""),
            format!("data.dataset=\"{}\"", data(kind)),
        ];
        let m = fedrun::schema::parse("", "t", &sets).unwrap().model;
        Model::build(&m, s, Default::default())
            .unwrap()
            .layout()
            .total
    };
    // the data-set issue's models (§7.3, §7.4), and ResNet-18 with 100 and 200 classes
    let shape = |channels, side, classes| Shape {
        channels,
        side,
        classes,
    };
    assert_eq!(count("femnist-cnn", shape(1, 28, 62)), 6_603_710);
    assert_eq!(count("celeba-cnn", shape(3, 84, 2)), 31_202);
    assert_eq!(count("emnist-cnn", shape(1, 28, 62)), 1_206_590);
    assert_eq!(count("resnet18", shape(3, 32, 100)), 11_220_132);
    assert_eq!(count("resnet18", shape(3, 64, 200)), 11_271_432);
    // each takes its input to one logit per class (ResNet-18 on 64×64 with the global pool)
    let logits = |kind: &str, sets: &[&str], s: Shape| {
        let mut all = vec![format!("model.kind=\"{kind}\"")];
        if sets.is_empty() {
            all.push(format!("data.dataset=\"{}\"", data(kind)));
        }
        all.extend(sets.iter().map(|x| x.to_string()));
        let m = fedrun::schema::parse("", "t", &all).unwrap().model;
        let model = Model::build(&m, s, Default::default()).unwrap();
        let params = vec![0.01; model.layout().total];
        let x = burn::tensor::Tensor::<4>::ones([2, s.channels, s.side, s.side], &dev);
        let net = fedrun::model::copies::Stacked::frozen(&model, &[&params], &dev);
        let [_, b, c] = net.logits(fedrun::data::Input::Images(x)).dims();
        [b, c]
    };
    let tiny = ["model.head=\"global\"", "data.dataset=\"tiny-imagenet\""];
    assert_eq!(logits("resnet18", &tiny, shape(3, 64, 200)), [2, 200]);
    assert_eq!(logits("celeba-cnn", &[], shape(3, 84, 2)), [2, 2]);
    assert_eq!(logits("femnist-cnn", &[], shape(1, 28, 62)), [2, 62]);
    assert_eq!(logits("emnist-cnn", &[], shape(1, 28, 62)), [2, 62]);
}

/// `fedrun --config C --set fl.rounds=1 --set …` on small data, as a user would run it.
#[test]
fn every_new_config_runs_a_round_from_the_command_line() {
    let d = TempDir::new("new-configs");
    let (tiny, femnist, celeba, c100) = (
        d.path().join("tiny"),
        d.path().join("femnist"),
        d.path().join("celeba"),
        d.path().join("c100"),
    );
    write_mini_tiny(&tiny);
    write_leaf(&femnist.join("train/t.json"), &femnist_users(false));
    write_leaf(&femnist.join("test/t.json"), &femnist_users(true));
    write_mini_celeba(&celeba);
    common::write_mini_cifar100(&c100, 200, 50);
    let three = ["data.num_clients=3", "fl.clients_per_round=2"];
    let plays = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/shakespeare");
    let speakers = [
        "data.num_clients=3",
        "fl.clients_per_round=2",
        "data.crop_train=100",
        "data.crop_test=20",
    ];
    let runs: [(&str, &Path, &[&str]); 9] = [
        ("paper/fedacg_fedacg_resnet18_tinyimagenet", &tiny, &three),
        (
            "paper/fedacg_fedacg_resnet18_tinyimagenet_500",
            &tiny,
            &three,
        ),
        ("paper/fedlamb_fedlamb_resnet18_tinyimagenet", &tiny, &three),
        ("paper/fedacg_fedacg_femnist", &femnist, &three),
        ("fedacg/femnist_fedacg", &femnist, &three),
        (
            "paper/fedacg_fedacg_celeba",
            &celeba,
            &["data.num_clients=2", "fl.clients_per_round=2"],
        ),
        (
            "paper/fedacg_fedacg_resnet18_cifar100_500",
            &c100,
            &["data.num_clients=4", "fl.clients_per_round=2"],
        ),
        ("paper/fedacg_fedacg_shakespeare", &plays, &speakers),
        ("paper/fedacg_fedavg_shakespeare", &plays, &speakers),
    ];
    for (config, data, sets) in runs {
        let config = format!("configs/{config}.toml");
        common::run_config(&config, data, &d.path().join("out"), sets);
    }
}

/// The real Tiny-ImageNet folder named by FEDRUN_TINY_IMAGENET loads with its official sizes.
#[test]
#[ignore = "needs the real Tiny-ImageNet: FEDRUN_TINY_IMAGENET=<tiny-imagenet-200> cargo test --release -- --ignored real_"]
fn real_tiny_imagenet_loads() {
    let dir = std::env::var("FEDRUN_TINY_IMAGENET").expect("FEDRUN_TINY_IMAGENET names the folder");
    let (train, test, classes) = tiny_imagenet::load_dir(Path::new(&dir)).unwrap();
    assert_eq!((train.len(), test.len(), classes), (100_000, 10_000, 200));
}

/// LEAF's FEMNIST or CelebA output named by `var`: the FedACG paper's 2,000 clients, drawn
/// from LEAF's users.
fn real_leaf_loads(var: &str, name: &str, classes: usize) {
    let dir = std::env::var(var).unwrap_or_else(|_| panic!("{var} names the folder"));
    let sets = ["data.num_clients=2000", "model.kind=\"mlp\""];
    let fed = fedrun::data::load(&spec(name, Path::new(&dir), &sets), None).unwrap();
    assert_eq!((fed.clients.len(), fed.num_classes), (2000, classes));
    assert!(fed.test.len() > 2000, "{}", fed.describe());
}

#[test]
#[ignore = "needs LEAF's FEMNIST: FEDRUN_FEMNIST=<dir> cargo test --release -- --ignored real_"]
fn real_femnist_loads() {
    real_leaf_loads("FEDRUN_FEMNIST", "femnist", 62);
}

#[test]
#[ignore = "needs LEAF's CelebA: FEDRUN_CELEBA=<dir> cargo test --release -- --ignored real_"]
fn real_celeba_loads() {
    real_leaf_loads("FEDRUN_CELEBA", "celeba", 2);
}

/// NIST SD19's two raw archives (`raw/`) and a stand-in for LEAF's checkout (`leaf/`) under `d`,
/// for the FEMNIST fetch script.
fn leaf_stand_in(d: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    // NIST SD19's two archives in their layout (by_class/<hex class>/hsf_<n>/…,
    // by_write/hsf_<n>/<writer>/…), as small zips
    let src = d.path().join("src");
    for f in [
        "by_class/30/hsf_0/a.png",
        "by_write/hsf_0/f0000_14/c0/b.png",
    ] {
        std::fs::create_dir_all(src.join(f).parent().unwrap()).unwrap();
        std::fs::write(src.join(f), b"png").unwrap();
    }
    let raw = d.path().join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for z in ["by_class", "by_write"] {
        let st = std::process::Command::new("python3")
            .args(["-m", "zipfile", "-c"])
            .arg(raw.join(format!("{z}.zip")))
            .arg(z)
            .current_dir(&src)
            .status()
            .unwrap();
        assert!(st.success());
    }
    // a stand-in for LEAF's checkout: its data/femnist/preprocess.sh checks that the raw folders
    // lie where LEAF's scripts read them and that the flags are the full-data ones, then writes
    // LEAF JSON (here, the test's own)
    let template = d.path().join("json");
    write_leaf(&template.join("train/t.json"), &femnist_users(false));
    write_leaf(&template.join("test/t.json"), &femnist_users(true));
    let leaf = d.path().join("leaf");
    let script = leaf.join("data/femnist/preprocess.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nset -e\ntest -f data/raw_data/by_class/30/hsf_0/a.png\ntest -d data/raw_data/by_write/hsf_0\n[ \"$*\" = \"-s niid --sf 1.0 -k 0 -t sample --smplseed 0 --spltseed 0\" ]\ncp -r {}/train {}/test data/\n",
            template.display(),
            template.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    (raw, leaf)
}

#[test]
fn the_leaf_fetch_script_checks_the_raw_archives_and_moves_leafs_output_whole() {
    let d = TempDir::new("leaf-fetch");
    let (raw, leaf) = leaf_stand_in(&d);
    let md5s = format!(
        "by_class.zip={} by_write.zip={}",
        common::md5_of(&raw.join("by_class.zip")),
        common::md5_of(&raw.join("by_write.zip"))
    );
    let fetch = |dest: &Path, md5s: &str| {
        std::process::Command::new("bash")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch_femnist.sh"))
            .arg(dest)
            .env("FEDRUN_FETCH_DIR", &raw)
            .env("FEDRUN_LEAF", &leaf)
            .env("FEDRUN_FETCH_MD5S", md5s)
            .output()
            .unwrap()
    };
    let bad = d.path().join("bad");
    let out = fetch(&bad, "by_class.zip=0123456789abcdef0123456789abcdef");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("by_class.zip has md5"));
    assert!(!bad.join("train").exists());
    let good = d.path().join("good");
    let out = fetch(&good, &md5s);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = spec(
        "femnist",
        &good,
        &["data.num_clients=3", "model.kind=\"mlp\""],
    );
    assert_eq!(
        fedrun::data::load(&s, None).unwrap().client_sizes(),
        vec![12, 9, 6]
    );
}

/// The FedACG rotation is Pillow's to the pixel: `tests/fixtures/pillow_rotate_32x32.txt` holds
/// what Pillow 13's `Image.rotate(angle, NEAREST)` shows at each output pixel of a 32 × 32 image
/// for eight float32 angles (`scripts/pillow_rotate_fixture.py` wrote it), three of them
/// angles where an f64 floor of the source position, as fedrun computed it before, picks
/// another pixel than Pillow's 16.16 fixed point.
#[test]
fn the_rotation_is_pillows_to_the_pixel() {
    use fedrun::data::augment::{CropFlip, PAD};
    use fedrun::data::rotate_crop_flip::RotateCropFlip;
    let text = include_str!("fixtures/pillow_rotate_32x32.txt");
    let mut angles = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (angle, map) = line.split_once(": ").unwrap();
        let want: Vec<Option<usize>> = map
            .split(' ')
            .map(|v| usize::try_from(v.parse::<i64>().unwrap()).ok())
            .collect();
        let t = RotateCropFlip {
            angle: angle.parse().unwrap(),
            crop: CropFlip {
                di: PAD,
                dj: PAD,
                flip: false,
            },
        };
        let got = t.sources(32, 32);
        let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(
            wrong, 0,
            "angle {angle}: {wrong} pixels differ from Pillow's"
        );
        angles += 1;
    }
    assert_eq!(angles, 8);
}
