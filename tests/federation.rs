//! FedACG's protocol pieces (issue #24): ACG as a server rule around other algorithms, the
//! dynamic client set, the communication columns, and the FedACG code's augmentation.

mod common;

use common::{TempDir, run_to_end, stop_after, synthetic_spec, write_mini_cifar};
use fedrun::fl::engine::membership::Membership;
use fedrun::fl::engine::{RunOptions, checkpoint, run};
use fedrun::metrics::summary::Status;

/// A synthetic run's CSV, rows of fields (without the elapsed time), and its folder.
fn run_csv(sets: &[&str], rounds: usize) -> (Vec<Vec<String>>, TempDir) {
    let text = synthetic_spec("").replace("rounds = 2", &format!("rounds = {rounds}"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = fedrun::schema::parse(&text, "t", &sets).unwrap();
    let d = TempDir::new("federation");
    let opts = RunOptions {
        out: d.path().to_path_buf(),
        ..Default::default()
    };
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete, "{sets:?}: {}", s.message);
    (read_rows(&d.path().join("t/rounds.csv")), d)
}

fn read_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let (header, rows) = fedrun::metrics::csv::read(path).unwrap();
    assert_eq!(header.last().map(String::as_str), Some("elapsed_s"));
    rows.into_iter()
        .map(|mut r| {
            r.pop();
            r
        })
        .collect()
}

/// Column `name` of rows read by [`read_rows`].
fn column(rows: &[Vec<String>], name: &str) -> Vec<String> {
    let header: Vec<&str> = fedrun::metrics::csv::HEADER.split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap();
    rows.iter().map(|r| r[i].clone()).collect()
}

/// FedACG Table 4's ablation rows from `[fedacg]`'s keys: without the lookahead and the term,
/// FedACG is FedAvgM at β = λ bit for bit (the same momentum server, the clients at θ); the
/// lookahead alone, or the term alone, changes the run.
#[test]
fn fedacg_without_lookahead_and_term_is_fedavgm_bit_for_bit() {
    let acg = |sets: &[&str]| {
        let mut all = vec!["fl.algorithm=\"fedacg\"", "fedacg.lambda=0.85"];
        all.extend_from_slice(sets);
        column(&run_csv(&all, 3).0, "test_loss")
    };
    let (m, _d) = run_csv(&["fl.algorithm=\"fedavgm\"", "fedavgm.momentum=0.85"], 3);
    let mom = acg(&["fedacg.lookahead=false", "fedacg.prox=0"]);
    assert_eq!(column(&m, "test_loss"), mom);
    assert_ne!(
        mom,
        acg(&["fedacg.prox=0"]),
        "the lookahead changes the run"
    );
    assert_ne!(
        mom,
        acg(&["fedacg.lookahead=false"]),
        "the term changes the run"
    );
}

#[test]
fn acg_with_lambda_zero_is_fedavg_bit_for_bit() {
    let (avg, _d1) = run_csv(&["fl.algorithm=\"fedavg\""], 3);
    let (acg, _d2) = run_csv(
        &[
            "fl.algorithm=\"fedavg\"",
            "fl.acg=true",
            "fl.acg_lambda=0.0",
        ],
        3,
    );
    for col in [
        "test_acc",
        "test_loss",
        "train_loss",
        "update_norm",
        "up_bytes",
    ] {
        assert_eq!(column(&avg, col), column(&acg, col), "{col}");
    }
    // ACG logs its momentum's norm, which with λ = 0 is the last step's
    assert!(
        column(&avg, "server_state_norm")
            .iter()
            .all(String::is_empty)
    );
    assert!(
        column(&acg, "server_state_norm")
            .iter()
            .all(|v| !v.is_empty())
    );
}

#[test]
fn fedacg_is_fedprox_with_acg() {
    // FedACG's w·Σ(θ − Φ)² is FedProx's ½μ‖θ − Φ‖² with μ = 2w, and its server is ACG
    let (fedacg, _d1) = run_csv(
        &[
            "fl.algorithm=\"fedacg\"",
            "fedacg.lambda=0.8",
            "fedacg.prox=0.01",
        ],
        3,
    );
    let (prox_acg, _d2) = run_csv(
        &[
            "fl.algorithm=\"fedprox\"",
            "fedprox.mu=0.02",
            "fl.acg=true",
            "fl.acg_lambda=0.8",
        ],
        3,
    );
    assert_eq!(fedacg, prox_acg);
    // and ACG moves it: λ = 0.8 is not FedProx alone
    let (prox, _d3) = run_csv(&["fl.algorithm=\"fedprox\"", "fedprox.mu=0.02"], 3);
    assert_ne!(column(&prox, "test_loss"), column(&fedacg, "test_loss"));
}

#[test]
fn acg_runs_around_client_side_methods_and_refuses_other_servers() {
    // SCAFFOLD's server step is FedAvg's (it only logs ‖c‖), so it composes too
    for alg in ["fedlc", "fedntd", "feddecorr", "moon", "scaffold"] {
        let (rows, _d) = run_csv(&[&format!("fl.algorithm=\"{alg}\""), "fl.acg=true"], 2);
        assert_eq!(rows.len(), 2, "{alg} + ACG");
    }
    for alg in ["fedavgm", "feddyn", "fedacg", "fedcm"] {
        let set = [format!("fl.algorithm=\"{alg}\""), "fl.acg=true".into()];
        let e = fedrun::schema::parse(&synthetic_spec(""), "t", &set)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`fl.acg`") && e.contains("server step of its own") && e.contains("fedlc"),
            "{alg}: {e}"
        );
    }
    // λ of ACG is read only with ACG on
    let e = fedrun::schema::parse_user(&synthetic_spec(""), "t", &["fl.acg_lambda=0.5".into()])
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        e.contains("fl.acg_lambda") && e.contains("fl.acg = false"),
        "{e}"
    );
}

/// Pool of 8 synthetic clients (24 samples each), `active` of them in the federation.
fn pool_sets(alg: &str, active: usize, every: usize, prob: f64) -> Vec<String> {
    vec![
        format!("fl.algorithm=\"{alg}\""),
        "data.num_clients=8".into(),
        "data.synthetic_train=24".into(),
        format!("fl.active_clients={active}"),
        format!("fl.replace_every={every}"),
        format!("fl.replace_prob={prob}"),
    ]
}

fn run_sets(sets: &[String], rounds: usize) -> (Vec<Vec<String>>, TempDir) {
    let s: Vec<&str> = sets.iter().map(String::as_str).collect();
    run_csv(&s, rounds)
}

#[test]
fn replacement_probability_zero_leaves_the_federation_as_it_was() {
    // every client in the federation, stages every round, nobody leaves: today's CSV
    let (fixed, _d1) = run_sets(&pool_sets("feddyn", 0, 0, 0.5)[..3], 4);
    let (p0, _d2) = run_sets(&pool_sets("feddyn", 8, 1, 0.0), 4);
    assert_eq!(fixed, p0);
    // a federation of 4 of the 8: stages with p = 0 are the federation without stages
    let (a, _d3) = run_sets(&pool_sets("feddyn", 4, 1, 0.0), 4);
    let (b, _d4) = run_sets(&pool_sets("feddyn", 4, 0, 0.0), 4);
    assert_eq!(a, b);
    assert_ne!(a, fixed, "4 of 8 clients is another federation");
}

#[test]
fn the_federation_changes_by_stage_within_the_pool() {
    let spec = |prob: f64, every: usize| {
        fedrun::schema::parse(
            &synthetic_spec(""),
            "t",
            &[
                "data.num_clients=100".into(),
                "fl.active_clients=40".into(),
                format!("fl.replace_every={every}"),
                format!("fl.replace_prob={prob}"),
            ],
        )
        .unwrap()
    };
    let mut m = Membership::new(&spec(0.5, 10), 100);
    assert_eq!(m.size(), 40);
    let first = m.active().unwrap().to_vec();
    for t in 1..10 {
        assert!(
            m.begin_round(t).is_empty(),
            "round {t} is not a stage's start"
        );
    }
    let left = m.begin_round(10);
    let now = m.active().unwrap().to_vec();
    // about half leave; the newcomers were outside; slots keep their order
    assert!((8..=32).contains(&left.len()), "{} left", left.len());
    let mut distinct = now.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 40);
    for (slot, (a, b)) in first.iter().zip(&now).enumerate() {
        if a != b {
            assert!(
                left.contains(a) && !first.contains(b),
                "slot {slot}: {a} → {b}"
            );
        }
    }
    // the same seed gives the same federation; p = 1 replaces every client (60 are outside)
    let mut again = Membership::new(&spec(0.5, 10), 100);
    again.begin_round(10);
    assert_eq!(again.active().unwrap(), &now[..]);
    let mut all = Membership::new(&spec(1.0, 10), 100);
    assert_eq!(all.begin_round(10).len(), 40);
    assert!(all.active().unwrap().iter().all(|c| !first.contains(c)));
}

#[test]
fn a_dynamic_run_resumes_to_the_same_csv_and_keeps_only_its_members_state() {
    let text = synthetic_spec("").replace("rounds = 2", "rounds = 8");
    let spec = fedrun::schema::parse(&text, "t", &pool_sets("feddyn", 4, 2, 0.5)).unwrap();
    let d = TempDir::new("dynamic-resume");
    let (full, part) = (d.path().join("full"), d.path().join("part"));
    run_to_end(&spec, &full).unwrap();
    stop_after(&spec, &part, 5);
    // the checkpoint holds the federation, and per-client state of its members only
    let (h, vectors) = checkpoint::read(&part.join("t/checkpoint.bin")).unwrap();
    let active = h.active.expect("the checkpoint records the federation");
    assert_eq!(active.len(), 4);
    let kept: Vec<usize> = vectors
        .iter()
        .filter_map(|(n, _)| n.strip_prefix("g_").and_then(|i| i.parse().ok()))
        .collect();
    assert!(!kept.is_empty());
    assert!(
        kept.iter().all(|c| active.contains(c)),
        "state of {kept:?}, federation {active:?}"
    );
    assert_eq!(run_to_end(&spec, &part).unwrap().status, Status::Complete);
    assert_eq!(
        read_rows(&full.join("t/rounds.csv")),
        read_rows(&part.join("t/rounds.csv"))
    );
}

#[test]
fn dealing_each_round_is_reproducible_resumes_exactly_and_changes_the_run() {
    // FedLC: its calibration follows each client's class counts, which the deal changes
    let sets = [
        "fl.algorithm=\"fedlc\"",
        "local.epochs=1",
        "data.deal=\"round\"",
    ];
    let (dealt, _a) = run_csv(&sets, 6);
    let (two_workers, _b) = run_csv(&[sets[0], sets[1], sets[2], "run.client_workers=2"], 6);
    assert_eq!(dealt, two_workers);
    let (fixed, _c) = run_csv(&sets[..2], 6);
    assert_ne!(column(&dealt, "train_loss"), column(&fixed, "train_loss"));
    // stopped after round 3 and resumed: the same lists are dealt again, the same CSV
    let text = synthetic_spec("").replace("rounds = 2", "rounds = 6");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = fedrun::schema::parse(&text, "t", &sets).unwrap();
    let d = TempDir::new("deal-resume");
    stop_after(&spec, d.path(), 3);
    assert_eq!(
        run_to_end(&spec, d.path()).unwrap().status,
        Status::Complete
    );
    assert_eq!(dealt, read_rows(&d.path().join("t/rounds.csv")));
}

#[test]
fn dealing_each_round_refuses_a_fixed_split_naming_the_key() {
    let text = synthetic_spec("");
    for p in ["natural", "file"] {
        let sets = [
            "data.deal=\"round\"".to_string(),
            format!("data.partition=\"{p}\""),
            "data.partition_file=\"x.txt\"".into(),
        ];
        let e = fedrun::schema::parse(&text, "t", &sets)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`data.deal`") && e.contains(p), "{e}");
    }
}

/// (down, up) bytes of each round of a one-round run.
fn traffic(sets: &[&str]) -> (u64, u64) {
    let (rows, _d) = run_csv(sets, 1);
    let get = |c: &str| column(&rows, c)[0].parse::<u64>().unwrap();
    (get("down_bytes"), get("up_bytes"))
}

#[test]
fn the_communication_columns_are_the_hand_counts() {
    // the synthetic tiny CNN has 7,874 parameters; 2 clients a round; 4 bytes a float
    let (d, k) = (7874u64, 2u64);
    let model = 4 * d * k;
    assert_eq!(traffic(&["fl.algorithm=\"fedavg\""]), (model, model));
    // SCAFFOLD: c down and Δc_i up besides the model and the update
    assert_eq!(
        traffic(&["fl.algorithm=\"scaffold\""]),
        (2 * model, 2 * model)
    );
    // FedDC: g down; θ_i + h_i and Δg_i up: 100 % more than FedAvg, as the FedACG paper says
    assert_eq!(traffic(&["fl.algorithm=\"feddc\""]), (2 * model, 2 * model));
    // FedCM: the last round's direction down: 50 % more in all
    assert_eq!(traffic(&["fl.algorithm=\"fedcm\""]), (2 * model, model));
    // FedPAQ, s = 4, one norm: 32 bits, then a sign and 3 level bits a coordinate
    let q = k * (32 + d * 4).div_ceil(8);
    assert_eq!(
        traffic(&["fl.algorithm=\"fedavg\"", "fl.uplink_levels=4"]),
        (model, q)
    );
    // and ACG sends nothing more than the model it wraps
    assert_eq!(
        traffic(&["fl.algorithm=\"fedlc\"", "fl.acg=true"]),
        (model, model)
    );
}

#[test]
fn the_fedacg_augmentation_holds_cifar_as_pixels_with_fedacg_constants_and_learns() {
    let d = TempDir::new("fedacg-aug");
    write_mini_cifar(d.path(), 40);
    let (train, _) = fedrun::data::cifar::load_dir(d.path(), true).unwrap();
    match &train.x {
        fedrun::data::Features::Pixels { mean, std, .. } => {
            assert_eq!(mean, &fedrun::data::cifar::FEDACG_MEAN.to_vec());
            assert_eq!(std, &fedrun::data::cifar::FEDACG_STD.to_vec());
        }
        _ => panic!("the fedacg augmentation needs the pixels"),
    }
    let text = format!(
        "[data]\ndataset = \"cifar10\"\npath = \"{}\"\npartition = \"iid\"\nnum_clients = 2\naugmentation = \"fedacg\"\n[model]\nkind = \"tiny-cnn\"\n[fl]\nrounds = 2\nclients_per_round = 2\n[local]\nsteps = 3\nbatch_size = 10\nlr = 0.05\n[run]\nname = \"t\"\n",
        d.path().display()
    );
    let spec = fedrun::schema::parse(&text, "t", &[]).unwrap();
    let opts = RunOptions {
        out: d.path().join("out"),
        ..Default::default()
    };
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.status, Status::Complete, "{}", s.message);
    // what the run produced: two rounds of finite losses on the augmented batches
    let rows = read_rows(&d.path().join("out/t/rounds.csv"));
    assert_eq!(rows.len(), 2);
    for name in ["train_loss", "test_loss"] {
        let v = column(&rows, name);
        assert!(
            v.iter().all(|x| x.parse::<f64>().is_ok_and(f64::is_finite)),
            "{name}: {v:?}"
        );
    }
    // only for the images the FedACG code transforms
    let e = fedrun::schema::parse(&text.replace("cifar10", "mnist"), "t", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("data.augmentation") && e.contains("mnist"),
        "{e}"
    );
}

#[test]
fn report_gives_the_megabytes_to_a_target() {
    use fedrun::analysis::report::{Format, ReportOptions, report};
    use fedrun::analysis::runs::Run;
    // every round evaluated: 3 rounds of FedAvg, 2 clients of 7,874 floats down and up
    let (_rows, d) = run_csv(&["fl.algorithm=\"fedavg\""], 3);
    let o = ReportOptions {
        bytes: true,
        metric: "test_loss".into(),
        at: vec![],
        targets: vec![1e9, -1.0],
        ema_beta: 0.0,
        debias: false,
        format: Format::Csv,
    };
    let t = report(vec![Run::load(&d.path().join("t")).unwrap()], &o).unwrap();
    let row: Vec<&str> = t.lines().nth(1).unwrap().split(',').collect();
    // a loss target of 1e9 is reached after round 1: one round's 2·2·4·7,874 bytes
    let mb = 2.0 * 2.0 * 4.0 * 7874.0 / 1e6;
    assert_eq!(row[row.len() - 2], format!("{mb:.1}"), "{t}");
    assert_eq!(row[row.len() - 1], "–", "a target never reached: {t}");
    assert!(t.starts_with("config") && t.contains("MB→-1"), "{t}");
}

#[test]
fn a_rounds_csv_of_an_older_fedrun_is_not_appended_to() {
    let spec = fedrun::schema::parse(&synthetic_spec(""), "t", &[]).unwrap();
    let d = TempDir::new("old-columns");
    stop_after(&spec, d.path(), 1);
    // the header of a fedrun before the communication columns
    let csv = d.path().join("t/rounds.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let old = text.replacen(",down_bytes,up_bytes", "", 1);
    std::fs::write(&csv, old).unwrap();
    let e = run_to_end(&spec, d.path()).unwrap_err().to_string();
    assert!(
        e.contains("rounds.csv") && e.contains("older fedrun") && e.contains("--force"),
        "{e}"
    );
}

#[test]
fn every_new_fedacg_config_runs_a_round_from_the_command_line() {
    let d = TempDir::new("fedacg-configs");
    let (c10, c100) = (d.path().join("c10"), d.path().join("c100"));
    std::fs::create_dir_all(&c10).unwrap();
    write_mini_cifar(&c10, 40);
    common::write_mini_cifar100(&c100, 200, 50);
    let four = ["data.num_clients=4", "fl.clients_per_round=2"];
    let pool = [
        "data.num_clients=4",
        "fl.clients_per_round=2",
        "fl.active_clients=3",
    ];
    let runs: [(&str, &std::path::Path, &[&str]); 13] = [
        ("paper/fedacg_table2_cifar10_100", &c10, &four),
        ("paper/fedacg_table2_cifar10_500", &c10, &four),
        ("paper/fedacg_table2_cifar100_100", &c100, &four),
        ("paper/fedacg_table2_cifar100_500", &c100, &four),
        ("paper/fedacg_table3_dynamic_fedacg", &c100, &pool),
        ("paper/fedacg_table6_fedpaq", &c100, &four),
        ("paper/fedacg_table6_fedacg_fedpaq", &c100, &four),
        ("paper/fedacg_tableA_fedlc_acg", &c100, &four),
        ("paper/fedacg_tableA_fedmlb_acg", &c100, &four),
        ("paper/fedacg_tableA_feddecorr_acg", &c100, &four),
        ("fedacg/fedacg_dynamic", &c10, &pool),
        ("fedacg/fedlc_acg", &c10, &four),
        ("fedacg/fedacg_500", &c10, &four),
    ];
    for (config, data, sets) in runs {
        let config = format!("configs/{config}.toml");
        let mut sets = sets.to_vec();
        sets.push("local.epochs=1");
        common::run_config(&config, data, &d.path().join("out"), &sets);
    }
}
