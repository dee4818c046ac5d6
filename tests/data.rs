//! Data: the CIFAR-10 reader, the partitions' statistics, LEAF JSON, and the plays.

mod common;

use common::{TempDir, archive_of, fetch_with, write_mini_cifar, write_mini_cifar100};
use fedrun::config::{DataSpec, Partition, ShardCut};
use fedrun::data::cifar::Hold;
use fedrun::data::partition::{
    deal, dirichlet_balanced, dirichlet_equal, iid, partition, read_index_file, shards,
};
use fedrun::data::{Features, cifar, idx, leaf};
use fedrun::metrics::summary::Status;
use fedrun::rng::Rng;
use std::path::Path;

#[test]
fn cifar_reader_reads_the_binary_layout() {
    let d = TempDir::new("cifar");
    // two records with known pixels
    let mut pixels = vec![0u8; 2 * 3072];
    pixels[0] = 255; // record 0, R plane, pixel (0,0)
    pixels[3072 + 1024] = 128; // record 1, G plane, pixel (0,0)
    for f in cifar::TRAIN_FILES.iter().chain([&cifar::TEST_FILE]) {
        cifar::write_file(&d.path().join(f), &[3, 7], &pixels).unwrap();
    }
    let (train, test) = cifar::load_dir(d.path(), false).unwrap();
    assert_eq!(train.len(), 10);
    assert_eq!(test.len(), 2);
    assert_eq!(test.y, vec![3, 7]);
    let Features::Images { c, h, w, data } = &test.x else {
        panic!()
    };
    assert_eq!((*c, *h, *w), (3, 32, 32));
    let norm = |p: f32, ch: usize| (p / 255.0 - cifar::MEAN[ch]) / cifar::STD[ch];
    assert!((data[0] - norm(255.0, 0)).abs() < 1e-6);
    assert!((data[1] - norm(0.0, 0)).abs() < 1e-6);
    assert!((data[3072 + 1024] - norm(128.0, 1)).abs() < 1e-6);
}

#[test]
fn cifar_wrong_size_names_the_file() {
    let d = TempDir::new("cifar-bad");
    write_mini_cifar(d.path(), 10);
    // truncate mid-record
    let p = d.path().join("data_batch_3.bin");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
    let e = cifar::load_dir(d.path(), false).unwrap_err().to_string();
    assert!(
        e.contains("data_batch_3.bin") && e.contains("whole number"),
        "{e}"
    );
    // whole records, but fewer than the other files
    std::fs::write(&p, &bytes[..cifar::RECORD * 5]).unwrap();
    let e = cifar::load_dir(d.path(), false).unwrap_err().to_string();
    assert!(
        e.contains("data_batch_3.bin") && e.contains("same number of records"),
        "{e}"
    );
    // oversized test file
    let t = d.path().join("test_batch.bin");
    std::fs::write(&p, &bytes).unwrap();
    let mut tb = std::fs::read(&t).unwrap();
    tb.extend_from_slice(&bytes[..cifar::RECORD]);
    std::fs::write(&t, &tb).unwrap();
    let e = cifar::load_dir(d.path(), false).unwrap_err().to_string();
    assert!(e.contains("test_batch.bin"), "{e}");
    // the first file one record short: it is named, not the healthy second one
    std::fs::write(&t, &tb[..tb.len() - cifar::RECORD]).unwrap();
    let first = d.path().join("data_batch_1.bin");
    let fb = std::fs::read(&first).unwrap();
    std::fs::write(&first, &fb[..fb.len() - cifar::RECORD]).unwrap();
    let e = cifar::load_dir(d.path(), false).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}", first.display()))
            || e.contains(&format!("{}: ", first.display())),
        "{e}"
    );
    assert!(!e.contains("data_batch_2.bin:"), "{e}");
    std::fs::write(&first, &fb).unwrap();
    // missing directory
    let e = cifar::load_dir(&d.path().join("nope"), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope") && e.contains("does not exist"), "{e}");
    // --data-dir naming a file: said so, not "does not exist"
    let e = cifar::load_dir(&t, false).unwrap_err().to_string();
    assert!(e.contains("is a file, not a directory"), "{e}");
}

fn labels(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 10) as u8).collect()
}

fn check_partition(parts: &[Vec<usize>], n: usize, clients: usize) {
    assert_eq!(parts.len(), clients);
    let per = n / clients;
    let mut seen = vec![false; n];
    for p in parts {
        assert_eq!(p.len(), per, "equal sizes");
        for &i in p {
            assert!(!seen[i], "index {i} twice");
            seen[i] = true;
        }
    }
    // all covered (up to the n mod clients remainder, which no client gets)
    assert_eq!(seen.iter().filter(|&&s| s).count(), per * clients);
}

fn histogram(p: &[usize], y: &[u8]) -> [usize; 10] {
    let mut h = [0; 10];
    p.iter().for_each(|&i| h[y[i] as usize] += 1);
    h
}

#[test]
fn dirichlet_equal_statistics() {
    let y = labels(10_000);
    for (alpha, f) in [(1000.0, 0), (0.01, 1)] {
        let mut rng = Rng::from_seed(5);
        let parts = dirichlet_equal(&y, 10, 20, alpha, &mut rng);
        check_partition(&parts, y.len(), 20);
        let max_share: Vec<f64> = parts
            .iter()
            .map(|p| *histogram(p, &y).iter().max().unwrap() as f64 / p.len() as f64)
            .collect();
        let mean_max = max_share.iter().sum::<f64>() / max_share.len() as f64;
        // classes holding at least 5 % of a client's samples
        let classes: Vec<usize> = parts
            .iter()
            .map(|p| {
                histogram(p, &y)
                    .iter()
                    .filter(|&&c| c * 20 >= p.len())
                    .count()
            })
            .collect();
        let mean_classes = classes.iter().sum::<usize>() as f64 / classes.len() as f64;
        if f == 0 {
            // near uniform: the largest class is close to 1/10, every class is present
            assert!(
                mean_max < 0.16,
                "alpha 1000: mean max class share {mean_max}"
            );
            assert!(
                mean_classes > 9.5,
                "alpha 1000: {mean_classes} classes per client"
            );
        } else {
            // almost one class per client; the split uses all data, so once classes run out
            // the last clients take what remains, and most hold 2-4 classes (over seeds 0-11:
            // 2.5-3.15 classes per client on average, mean largest share 0.60-0.74)
            assert!(
                mean_classes < 3.5,
                "alpha 0.01: {mean_classes} classes per client"
            );
            assert!(
                mean_max > 0.55,
                "alpha 0.01: mean max class share {mean_max}"
            );
        }
    }
    let a = dirichlet_equal(&y, 10, 20, 0.3, &mut Rng::from_seed(9));
    let b = dirichlet_equal(&y, 10, 20, 0.3, &mut Rng::from_seed(9));
    let c = dirichlet_equal(&y, 10, 20, 0.3, &mut Rng::from_seed(10));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn a_round_deals_the_whole_split_among_its_clients_from_its_own_stream() {
    // `data.deal = "round"` (the Fed-LAMB protocol read literally): the 5,000 samples go to the
    // round's 25 clients, 200 each, not 100 each as the fixed 50-client split gives them, and
    // each still holds one or two classes (class-cut shards, 2 a client)
    let y = labels(5_000);
    let d = DataSpec {
        partition: Partition::Shards,
        shard_cut: ShardCut::Class,
        num_clients: 50,
        ..DataSpec::default()
    };
    let fixed = partition(&d, &y, 10, &mut Rng::from_seed(1)).unwrap();
    check_partition(&fixed, y.len(), 50);
    let round = deal(&d, (7, 3), &y, 10, 25).unwrap();
    check_partition(&round, y.len(), 25);
    for p in &round {
        let classes = histogram(p, &y).iter().filter(|&&n| n > 0).count();
        assert!((1..=2).contains(&classes), "{classes} classes");
    }
    // the same run and round deal the same lists; another round or seed, others
    assert_eq!(round, deal(&d, (7, 3), &y, 10, 25).unwrap());
    assert_ne!(round, deal(&d, (7, 4), &y, 10, 25).unwrap());
    assert_ne!(round, deal(&d, (8, 3), &y, 10, 25).unwrap());
    // IID and Dirichlet deal the whole split too
    for partition in [Partition::Iid, Partition::Dirichlet] {
        let d = DataSpec {
            partition,
            ..d.clone()
        };
        check_partition(&deal(&d, (7, 3), &y, 10, 25).unwrap(), y.len(), 25);
    }
}

#[test]
fn dirichlet_balanced_and_iid_statistics() {
    let y = labels(5_000);
    let parts = dirichlet_balanced(&y, 10, 10, 0.3, &mut Rng::from_seed(1));
    check_partition(&parts, y.len(), 10);
    let skew =
        histogram(&parts[0], &y).iter().max().copied().unwrap() as f64 / parts[0].len() as f64;
    assert!(skew > 0.2, "first client is skewed at alpha 0.3: {skew}");
    let u = dirichlet_balanced(&y, 10, 10, 1000.0, &mut Rng::from_seed(1));
    let s = histogram(&u[0], &y).iter().max().copied().unwrap() as f64 / u[0].len() as f64;
    assert!(s < 0.16, "alpha 1000 near uniform: {s}");
    check_partition(&iid(y.len(), 7, &mut Rng::from_seed(2)), y.len(), 7);
}

#[test]
fn published_index_files_are_read_and_checked() {
    let d = TempDir::new("idx");
    let p = d.path().join("split.txt");
    std::fs::write(&p, "{0: [3, 1], 1: [0, 2]}").unwrap();
    assert_eq!(
        read_index_file(&p, 4).unwrap(),
        vec![vec![3, 1], vec![0, 2]]
    );
    std::fs::write(&p, "{0: [3, 1], 1: [1, 2]}").unwrap();
    assert!(
        read_index_file(&p, 4)
            .unwrap_err()
            .to_string()
            .contains("twice")
    );
    std::fs::write(&p, "{0: [9]}").unwrap();
    assert!(
        read_index_file(&p, 4)
            .unwrap_err()
            .to_string()
            .contains("out of range")
    );
    // FedACG's IID files are Python set literals; an empty set prints as set()
    std::fs::write(&p, "{0: {3, 1}, 1: {0, 2}, 2: set()}").unwrap();
    assert_eq!(
        read_index_file(&p, 4).unwrap(),
        vec![vec![3, 1], vec![0, 2], vec![]]
    );
    let refused = |text: &str, needle: &str| {
        std::fs::write(&p, text).unwrap();
        let e = read_index_file(&p, 4).unwrap_err().to_string();
        assert!(e.contains(needle) && e.contains("split.txt"), "{text}: {e}");
    };
    refused("{0: [3], 0: [1]}", "client 0 appears twice");
    refused("{0: [3], 2: [1]}", "client 1 is missing");
    refused("{0: (3, 1)}", "no list");
}

/// A file of 6 clients under `data.num_clients = 3` is refused naming the key, rather than
/// running the file's 6 while spec.toml records 3.
#[test]
fn a_partition_file_of_another_client_count_is_refused() {
    let d = TempDir::new("idx-count");
    let p = d.path().join("split.txt");
    let body: Vec<String> = (0..6)
        .map(|c| format!("{c}: [{}, {}]", 2 * c, 2 * c + 1))
        .collect();
    std::fs::write(&p, format!("{{{}}}", body.join(", "))).unwrap();
    let spec = fedrun::schema::parse(
        &common::synthetic_spec(""),
        "t",
        &[
            "data.partition=\"file\"".into(),
            format!("data.partition_file={:?}", p.display().to_string()),
            "data.num_clients=3".into(),
            "fl.clients_per_round=2".into(),
        ],
    )
    .unwrap();
    let e = fedrun::data::load(&spec, None).unwrap_err().to_string();
    assert!(
        e.contains("data.num_clients") && e.contains("6 clients"),
        "{e}"
    );
}

/// FedACG's published IID split of CIFAR-10 (Python set literals) loads: 100 clients of 500.
#[test]
#[ignore = "needs FedACG's published splits in ../shared/data/partitions/fedacg/cifar10 or FEDRUN_PARTITIONS (cargo test --release -- --ignored shared_)"]
fn shared_fedacg_published_iid_split_loads() {
    let dir = std::env::var("FEDRUN_PARTITIONS")
        .unwrap_or_else(|_| "../shared/data/partitions/fedacg/cifar10".into());
    let c = read_index_file(
        &std::path::Path::new(&dir).join("iid_clients100.txt"),
        50_000,
    )
    .unwrap();
    assert_eq!(c.len(), 100);
    assert!(c.iter().all(|v| v.len() == 500));
}

#[test]
fn leaf_json_round_trip_and_corrupt_file() {
    let d = TempDir::new("leaf");
    let x0: String =
        "To be, or not to be, that is the question: Whether 'tis nobler in the mind to su".into();
    assert_eq!(x0.chars().count(), 80);
    let mut ud = std::collections::BTreeMap::new();
    ud.insert(
        "HAMLET_HAMLET".to_string(),
        leaf::UserData {
            x: vec![x0.clone(), x0.clone()],
            y: vec!["f".into(), "g".into()],
        },
    );
    let f = leaf::LeafFile {
        users: vec!["HAMLET_HAMLET".into()],
        num_samples: vec![2],
        user_data: ud,
    };
    let p = d.path().join("train.json");
    leaf::write_file(&p, &f).unwrap();
    assert_eq!(leaf::read_file(&p).unwrap(), f);
    std::fs::write(&p, "{\"users\": [\"a\"], \"num_samples\": [1]").unwrap();
    let e = leaf::read_file(&p).unwrap_err().to_string();
    assert!(
        e.contains("train.json") && e.contains("not a LEAF JSON"),
        "{e}"
    );
}

/// The real LEAF sample (data beside the repository, never committed).
#[test]
#[ignore = "needs ../shared/data/shakespeare/leaf_partial_MAB-Shapley (cargo test --release -- --ignored shared_)"]
fn shared_leaf_sample_parses() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/shakespeare/leaf_partial_MAB-Shapley");
    assert!(dir.exists(), "{} is not there", dir.display());
    let f = leaf::read_file(&dir.join("all_data_niid_023_keep_64_train_9.json")).unwrap();
    assert_eq!(f.users.len(), 10);
    assert!(f.num_samples.iter().all(|&n| n > 0));
    assert_eq!(f.stale_counts(), (0, 0));
    // LEAF's own test file: every user lists 79 samples more than its arrays hold
    let t = leaf::read_file(&dir.join("all_data_niid_023_keep_64_test_9.json")).unwrap();
    assert_eq!(t.users.len(), 10);
    assert_eq!(t.stale_counts(), (10, 790));
}

#[test]
fn leaf_test_file_as_leaf_writes_it_loads() {
    // LEAF's split_data.py records num_samples before dropping the first 79 test windows of a
    // Shakespeare user, so its test files list len(x) + 79. Written here as Python's json.dump
    // writes it.
    let d = TempDir::new("leafstale");
    let x = "a".repeat(80);
    let p = d.path().join("all_data_niid_0_keep_0_test_9.json");
    std::fs::write(
        &p,
        format!(
            "{{\"users\": [\"THE_TEMPEST_ARIEL\"], \"num_samples\": [81], \"user_data\": {{\"THE_TEMPEST_ARIEL\": {{\"x\": [\"{x}\", \"{x}\"], \"y\": [\"b\", \"c\"]}}}}}}"
        ),
    )
    .unwrap();
    let f = leaf::read_file(&p).unwrap();
    assert_eq!(f.user_data["THE_TEMPEST_ARIEL"].x.len(), 2);
    assert_eq!(f.stale_counts(), (1, 79));
    // x and y of different lengths are still an error, naming the file and the user
    std::fs::write(
        &p,
        format!(
            "{{\"users\": [\"U\"], \"num_samples\": [2], \"user_data\": {{\"U\": {{\"x\": [\"{x}\", \"{x}\"], \"y\": [\"b\"]}}}}}}"
        ),
    )
    .unwrap();
    let e = leaf::read_file(&p).unwrap_err().to_string();
    assert!(
        e.contains("test_9.json") && e.contains("\"U\"") && e.contains("2 x and 1 y"),
        "{e}"
    );
}

/// `dir/<inner>` packed as the official archives are (`<inner>/*.bin` in a .tar.gz), and its md5.
#[test]
fn fetch_script_checks_the_md5_and_unpacks_the_archive_layout() {
    let d = TempDir::new("fetch");
    // a small archive in the official layout: cifar-10-batches-bin/*.bin
    let inner = d.path().join("cifar-10-batches-bin");
    std::fs::create_dir_all(&inner).unwrap();
    write_mini_cifar(&inner, 20);
    let (archive, md5) = archive_of(d.path(), "cifar-10-batches-bin");
    let fetch = |dest: &Path, md5: &str| fetch_with("fetch_cifar10.sh", dest, &archive, md5);
    // a wrong checksum: refused, nothing unpacked
    let bad = d.path().join("bad");
    let out = fetch(&bad, "0123456789abcdef0123456789abcdef");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected 0123456789abcdef"));
    assert!(!bad.join("data_batch_1.bin").exists());
    // the right one: the files land in DIR and load
    let good = d.path().join("good");
    let out = fetch(&good, &md5);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (train, test) = fedrun::data::cifar::load_dir(&good, false).unwrap();
    assert_eq!((train.len(), test.len()), (100, 20));
    // the default checksum is the official archive's
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch_cifar10.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("c32a1d4ab5d03f1284b67883e8d87530"));
}

/// A small MNIST-layout directory in the real IDX format (gzip-compressed like the official
/// files): `n` training and `n / 5` test images of 28×28, the class drawn as a bright band.
fn write_mini_idx(dir: &Path, n: usize) {
    use std::io::Write;
    let gz = |name: &str, shape: &[usize], body: &[u8]| {
        let raw = dir.join(format!("{name}.tmp"));
        fedrun::data::idx::write(&raw, shape, body).unwrap();
        let bytes = std::fs::read(&raw).unwrap();
        std::fs::remove_file(&raw).unwrap();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&bytes).unwrap();
        std::fs::write(dir.join(format!("{name}.gz")), e.finish().unwrap()).unwrap();
    };
    for (images, labels, count) in [
        (idx::TRAIN_IMAGES, idx::TRAIN_LABELS, n),
        (idx::TEST_IMAGES, idx::TEST_LABELS, n / 5),
    ] {
        let y: Vec<u8> = (0..count).map(|i| (i * 3 % 10) as u8).collect();
        let mut px = vec![0u8; count * 784];
        for (i, &l) in y.iter().enumerate() {
            for c in 0..28 {
                px[i * 784 + (2 + 2 * l as usize) * 28 + c] = 255;
            }
        }
        gz(images, &[count, 28, 28], &px);
        gz(labels, &[count], &y);
    }
}

#[test]
fn idx_files_load_and_bad_ones_are_named() {
    let d = TempDir::new("idx");
    write_mini_idx(d.path(), 100);
    let (train, test) = idx::load_dir(d.path(), 0.5, 0.5).unwrap();
    assert_eq!((train.len(), test.len()), (100, 20));
    let Features::Images { c, h, w, data } = &train.x else {
        panic!("images")
    };
    assert_eq!((*c, *h, *w), (1, 28, 28));
    // image 1 has label 3: its bright row 8 is (1 − 0.5)/0.5 = 1, the rest (0 − 0.5)/0.5 = −1
    assert_eq!(train.y[1], 3);
    assert_eq!(data[784 + 8 * 28 + 5], 1.0);
    assert_eq!(data[784], -1.0);
    // a truncated image file: the error names the file and the bytes its header promises
    let p = d.path().join("t10k-images-idx3-ubyte");
    let mut bytes = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&std::fs::read(p.with_extension("gz")).unwrap()[..])
        .read_to_end(&mut bytes)
        .unwrap();
    std::fs::remove_file(p.with_extension("gz")).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
    let err = idx::load_dir(d.path(), 0.5, 0.5).unwrap_err().to_string();
    assert!(
        err.contains("t10k-images-idx3-ubyte") && err.contains(&(bytes.len()).to_string()),
        "{err}"
    );
    // labels where images are expected: the magic is checked
    std::fs::copy(d.path().join("t10k-labels-idx1-ubyte.gz"), &p).unwrap();
    let err = idx::load_dir(d.path(), 0.5, 0.5).unwrap_err().to_string();
    assert!(err.contains("not an IDX image file"), "{err}");
}

#[test]
fn mnist_cnn_learns_from_idx_files_with_a_shard_split() {
    let d = TempDir::new("mnist");
    write_mini_idx(d.path(), 400);
    let spec = fedrun::schema::parse(
        "[data]\ndataset = \"mnist\"\npartition = \"shards\"\nnum_clients = 10\n[model]\nkind = \"mnist-cnn\"\ndropout = 0.5\n[fl]\nrounds = 6\nclients_per_round = 10\n[local]\nsteps = 10\nbatch_size = 20\nlr = 0.1\nweight_decay = 0\n[run]\nname = \"m\"\n",
        "t",
        &[],
    )
    .unwrap();
    let data = fedrun::data::load(&spec, Some(d.path())).unwrap();
    // every client holds at most 2 classes
    for c in &data.clients {
        let mut seen: Vec<u8> = c.iter().map(|&i| data.train.y[i]).collect();
        seen.sort();
        seen.dedup();
        assert!(seen.len() <= 2, "{seen:?}");
    }
    let out = TempDir::new("mnist-out");
    let s = fedrun::fl::engine::run(
        &spec,
        &fedrun::fl::engine::RunOptions {
            out: out.path().to_path_buf(),
            data_dir: Some(d.path().to_path_buf()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.status, Status::Complete, "{}", s.message);
    assert!(
        s.best_test_acc.unwrap() > 30.0,
        "the bands are learnable: best {:?}",
        s.best_test_acc
    );
}

#[test]
fn shard_partition_statistics() {
    let y: Vec<u8> = (0..6000).map(|i| (i * 7 % 10) as u8).collect();
    let parts = shards(&y, 100, 2, &mut Rng::from_seed(3));
    check_partition(&parts, y.len(), 100);
    let classes: Vec<usize> = parts
        .iter()
        .map(|p| histogram(p, &y).iter().filter(|&&c| c > 0).count())
        .collect();
    assert!(classes.iter().all(|&c| (1..=2).contains(&c)), "{classes:?}");
    // one shard per client: one class each
    let one = shards(&y, 50, 1, &mut Rng::from_seed(3));
    assert!(
        one.iter()
            .all(|p| histogram(p, &y).iter().filter(|&&c| c > 0).count() == 1)
    );
}

#[test]
fn class_shards_hold_one_class_each_where_sorted_shards_straddle() {
    use fedrun::data::partition::class_shards;
    // MNIST's class sizes ÷ 10: no class boundary falls on a multiple of the shard size
    let sizes = [592, 674, 596, 613, 584, 542, 592, 627, 585, 595];
    let y: Vec<u8> = (0..10u8)
        .flat_map(|c| std::iter::repeat_n(c, sizes[c as usize]))
        .collect();
    let classes_of = |p: &Vec<usize>| histogram(p, &y).iter().filter(|&&c| c > 0).count();
    // one shard per client: the sorted cut gives some clients two classes, the class cut none
    let sorted = shards(&y, 100, 1, &mut Rng::from_seed(5));
    assert!(sorted.iter().any(|p| classes_of(p) == 2));
    let one = class_shards(&y, 10, 100, 1, &mut Rng::from_seed(5));
    assert_eq!(one.len(), 100);
    assert!(one.iter().all(|p| classes_of(p) == 1));
    // McMahan's 2 shards a client: one or two classes, never three; shards sized to their class
    let two = class_shards(&y, 10, 50, 2, &mut Rng::from_seed(5));
    assert!(two.iter().all(|p| (1..=2).contains(&classes_of(p))));
    let mut seen: Vec<usize> = two.iter().flatten().copied().collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen.len(),
        two.iter().map(Vec::len).sum::<usize>(),
        "disjoint"
    );
    assert!(
        seen.len() > 6000 - 100,
        "at most a shard's remainder per class unused"
    );
    // the shards are shared in proportion to the classes: class 1 (674) gets 11 of 100
    let of_class_1 = one.iter().filter(|p| y[p[0]] == 1).count();
    assert_eq!(of_class_1, 11);
}

/// The official sizes of the real MNIST or Fashion-MNIST files in `dir`.
fn official_idx_loads(dir: &Path) {
    assert!(
        dir.join("train-images-idx3-ubyte.gz").exists(),
        "{} is not there",
        dir.display()
    );
    let (train, test) = idx::load_dir(dir, 0.5, 0.5).unwrap();
    assert_eq!(
        (train.len(), test.len()),
        (60_000, 10_000),
        "{}",
        dir.display()
    );
}

/// The real MNIST files beside the repository load with the official sizes.
#[test]
#[ignore = "needs ../shared/data/mnist (cargo test --release -- --ignored shared_)"]
fn shared_mnist_loads() {
    official_idx_loads(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist"));
}

/// Fashion-MNIST from Debian's `dataset-fashion-mnist` (its default location) loads with the
/// official sizes.
#[test]
#[ignore = "needs Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist; CI installs it and runs the `shared_` tests)"]
fn shared_fashion_mnist_loads() {
    official_idx_loads(Path::new("/usr/share/datasets/fashion-mnist"));
}

#[test]
fn cifar100_reads_fine_or_coarse_labels_and_refuses_damage() {
    use fedrun::config::Cifar100Labels;
    use fedrun::data::cifar100;
    let d = TempDir::new("cifar100");
    write_mini_cifar100(d.path(), 200, 100);
    let (train, test) = cifar100::load_dir(d.path(), Cifar100Labels::Fine, Hold::Floats).unwrap();
    assert_eq!((train.len(), test.len()), (200, 100));
    assert_eq!(train.y[..3], [0, 1, 2]);
    assert_eq!(*train.y.iter().max().unwrap(), 99);
    let (coarse, _) = cifar100::load_dir(d.path(), Cifar100Labels::Coarse, Hold::Floats).unwrap();
    assert_eq!(coarse.y[..12], [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2]);
    // the pixels after the two label bytes, normalised with FedACG's constants
    let Features::Images { c, h, w, data } = &train.x else {
        panic!("images")
    };
    assert_eq!((*c, *h, *w), (3, 32, 32));
    let want = (37.0 / 255.0 - cifar100::MEAN[0]) / cifar100::STD[0];
    assert!((data[3072] - want).abs() < 1e-6, "{} vs {want}", data[3072]);
    // a fine label of 100 is refused, naming the file and the record
    let bad = d.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    cifar100::write_file(&bad.join("train.bin"), &[0], &[100], &[0; 3072]).unwrap();
    cifar100::write_file(&bad.join("test.bin"), &[0], &[1], &[0; 3072]).unwrap();
    let e = cifar100::load_dir(&bad, Cifar100Labels::Fine, Hold::Floats)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("train.bin") && e.contains("record 0 has label 100"),
        "{e}"
    );
    // a truncated file
    let bytes = std::fs::read(d.path().join("test.bin")).unwrap();
    std::fs::write(bad.join("test.bin"), &bytes[..bytes.len() - 1]).unwrap();
    std::fs::write(bad.join("train.bin"), &bytes).unwrap();
    let e = cifar100::load_dir(&bad, Cifar100Labels::Fine, Hold::Floats)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("test.bin") && e.contains("not a whole number"),
        "{e}"
    );
}

#[test]
fn cifar100_runs_with_a_hundred_classes_and_its_fetch_script_checks_the_md5() {
    let d = TempDir::new("cifar100-run");
    let data = d.path().join("c100");
    write_mini_cifar100(&data, 400, 100);
    let spec = common::synthetic_spec("").replace(
        "dataset = \"synthetic\"",
        &format!("dataset = \"cifar100\"\npath = \"{}\"", data.display()),
    );
    let spec = fedrun::schema::parse(&spec, "t", &[]).unwrap();
    let opts = fedrun::fl::engine::RunOptions {
        out: d.path().join("out"),
        ..Default::default()
    };
    let s = fedrun::fl::engine::run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete, "{}", s.message);
    // `data.cifar100_labels` is read by cifar100 only
    let e = fedrun::schema::parse_user(
        &common::synthetic_spec(""),
        "t",
        &["data.cifar100_labels=\"coarse\"".into()],
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(e.contains("only `cifar100` reads it"), "{e}");
    // the fetch script: the archive's layout, checked, unpacked whole
    let inner = d.path().join("cifar-100-binary");
    write_mini_cifar100(&inner, 100, 20);
    let (archive, md5) = archive_of(d.path(), "cifar-100-binary");
    let fetch = |dest: &Path, md5: &str| fetch_with("fetch_cifar100.sh", dest, &archive, md5);
    let bad = d.path().join("bad");
    assert!(
        !fetch(&bad, "0123456789abcdef0123456789abcdef")
            .status
            .success()
    );
    assert!(!bad.join("train.bin").exists());
    let good = d.path().join("good");
    let out = fetch(&good, &md5);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (train, _) = fedrun::data::cifar100::load_dir(
        &good,
        fedrun::config::Cifar100Labels::Fine,
        fedrun::data::cifar::Hold::Floats,
    )
    .unwrap();
    assert_eq!(train.len(), 100);
}

/// Own IDX data whose test images have another shape than the training images: the message
/// gives both shapes in words and the two files, not Rust's debug text.
#[test]
fn own_idx_data_of_two_image_shapes_is_refused_in_words() {
    use fedrun::data::idx;
    let d = TempDir::new("idx-shapes");
    for (images, labels, shape) in [
        (idx::TRAIN_IMAGES, idx::TRAIN_LABELS, [4, 1, 8, 8]),
        (idx::TEST_IMAGES, idx::TEST_LABELS, [4, 3, 8, 8]),
    ] {
        let n: usize = shape.iter().product();
        idx::write(&d.path().join(images), &shape, &vec![7u8; n]).unwrap();
        idx::write(&d.path().join(labels), &[4], &[0, 1, 2, 3]).unwrap();
    }
    let e = idx::load_own(d.path(), 0.5, 0.25).unwrap_err().to_string();
    assert!(
        e.contains("1 × 8 × 8") && e.contains("3 × 8 × 8") && !e.contains("Some("),
        "{e}"
    );
    assert!(e.contains(idx::TEST_IMAGES), "{e}");
}
