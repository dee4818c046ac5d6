//! Sweeps, plots and reports.

mod common;

use common::{TempDir, synthetic_spec};
use fedrun::analysis::report::{ReportOptions, report};
use fedrun::analysis::runs::Run;
use fedrun::metrics::summary::Status;
use std::path::Path;
use std::process::Command;

/// A complete run folder written by hand: spec with the given overrides, a CSV of accuracies.
fn fake_run(dir: &Path, sets: &[&str], accs: &[f64]) -> Run {
    let rows: Vec<(f64, f64)> = accs.iter().map(|&a| (a, 1.0)).collect();
    common::write_run(dir, sets, &rows, Status::Complete, 1);
    Run::load(dir).unwrap()
}

#[test]
fn report_groups_seeds_with_mean_and_sd() {
    let d = TempDir::new("report");
    let runs = vec![
        fake_run(
            &d.path().join("a0"),
            &["run.seed=0", "local.nar=false"],
            &[10.0, 20.0, 30.0],
        ),
        fake_run(
            &d.path().join("a1"),
            &["run.seed=1", "local.nar=false"],
            &[10.0, 40.0, 50.0],
        ),
        fake_run(
            &d.path().join("b0"),
            &["run.seed=0", "local.nar=true"],
            &[60.0, 50.0, 40.0],
        ),
    ];
    let o = ReportOptions {
        bytes: false,
        metric: "test_acc".into(),
        at: vec![2],
        targets: vec![25.0, 99.0],
        ema_beta: 0.5,
        debias: false,
        format: fedrun::analysis::report::Format::Csv,
    };
    let t = report(runs, &o).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3, "{t}");
    // mean and sd in columns of their own
    assert!(
        lines[0].starts_with("config,seeds,status,final test_acc,final test_acc sd,"),
        "{}",
        lines[0]
    );
    // nar=false: finals 30 and 50 → 40 ± 14.14; best 30, 50
    assert!(
        lines[1].starts_with("nar=false,2,complete,40.00,14.14,40.00,14.14,"),
        "{}",
        lines[1]
    );
    // EMA(β=0.5) after 2 rounds: seed 0: 5, 12.5; seed 1: 5, 22.5 → 17.50 ± 7.07
    assert!(lines[1].contains(",17.50,7.07,"), "{}", lines[1]);
    // EMA reaches 25 at round 3 for seed 1 (36.25) but never for seed 0 (21.25): 3+
    assert!(lines[1].ends_with(",3+,3+"), "{}", lines[1]);
    // nar=true, one seed: the value alone, no sd; EMA 30, 40, 40 → reaches 25 at round 1
    assert!(
        lines[2].starts_with("nar=true,1,complete,40.00,,60.00,,40.00,,1,3+"),
        "{}",
        lines[2]
    );
}

fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&b[12..16], b"IHDR");
    (
        u32::from_be_bytes(b[16..20].try_into().unwrap()),
        u32::from_be_bytes(b[20..24].try_into().unwrap()),
    )
}

#[test]
fn plot_writes_png_and_svg_of_the_requested_size() {
    let d = TempDir::new("plot");
    fake_run(
        &d.path().join("r/a"),
        &["local.weight_decay=0.01", "local.nar=false"],
        &[10.0, 20.0, 30.0],
    );
    fake_run(
        &d.path().join("r/b"),
        &["local.weight_decay=0.01", "local.nar=true"],
        &[12.0, 25.0, 33.0],
    );
    fake_run(
        &d.path().join("r/c"),
        &["local.weight_decay=0.1", "local.nar=false"],
        &[9.0, 15.0, 20.0],
    );
    fake_run(
        &d.path().join("r/e"),
        &["local.weight_decay=0.1", "local.nar=true"],
        &[11.0, 22.0, 31.0],
    );
    let bin = env!("CARGO_BIN_EXE_fedrun");
    let png = d.path().join("fig.png");
    let o = Command::new(bin)
        .args(["plot"])
        .arg(d.path().join("r/a"))
        .arg(d.path().join("r/b"))
        .args(["--width", "640", "--height", "480", "-o"])
        .arg(&png)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(png_size(&png), (640, 480));
    let fig2 = d.path().join("fig2.png");
    let o = Command::new(bin)
        .args(["plot"])
        .arg(d.path().join("r"))
        .args(["--x", "weight_decay", "-o"])
        .arg(&fig2)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(png_size(&fig2), (900, 600));
    let svg = d.path().join("fig2.svg");
    let o = Command::new(bin)
        .args(["plot"])
        .arg(d.path().join("r"))
        .args(["--x", "weight_decay", "-o"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") && text.contains("nar=true") && text.contains("weight_decay"),
        "{}",
        &text[..200.min(text.len())]
    );
}

#[test]
fn plot_against_a_non_numeric_key_draws_one_column_per_value() {
    // FedNAR Table 1: each backbone at its own weight decay, baseline and NAR
    let d = TempDir::new("plot_cat");
    for (name, alg, wd, nar, acc) in [
        ("a", "fedavg", "0.05", "false", 30.0),
        ("b", "fedavg", "0.05", "true", 31.0),
        ("c", "fedprox", "0.01", "false", 35.0),
        ("e", "fedprox", "0.01", "true", 36.0),
    ] {
        fake_run(
            &d.path().join("r").join(name),
            &[
                &format!("fl.algorithm={alg}"),
                &format!("local.weight_decay={wd}"),
                &format!("local.nar={nar}"),
            ],
            &[10.0, acc],
        );
    }
    let svg = d.path().join("t1.svg");
    let o = Command::new(env!("CARGO_BIN_EXE_fedrun"))
        .args(["plot"])
        .arg(d.path().join("r"))
        .args(["--x", "algorithm", "--legend", "upper-left", "-o"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    // the categories name the ticks; the legend names nar alone, since each algorithm fixes the
    // weight decay
    for want in ["fedavg", "fedprox", "nar=false", "nar=true", "algorithm"] {
        assert!(
            text.lines().any(|l| l.trim() == want),
            "no text element `{want}` in the SVG"
        );
    }
    assert!(
        !text.contains("weight_decay="),
        "a key fixed by x in the legend"
    );
}

const BIN: &str = env!("CARGO_BIN_EXE_fedrun");

/// `fedrun sweep` of `cfg` over weight decay × NAR into `out`, with `extra` arguments.
fn sweep_grid(cfg: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(cfg)
        .args([
            "--grid",
            "local.weight_decay=0.001,0.1",
            "--grid",
            "local.nar=false,true",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// A rounds.csv without the elapsed-time column.
fn without_time(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

const POINTS: [&str; 4] = [
    "t__weight_decay=0.001__nar=false",
    "t__weight_decay=0.001__nar=true",
    "t__weight_decay=0.1__nar=false",
    "t__weight_decay=0.1__nar=true",
];

fn skipped(o: &std::process::Output) -> usize {
    String::from_utf8_lossy(&o.stderr)
        .matches("already complete, skipped")
        .count()
}

/// `report` over a shell glob of a sweep folder (run folders, their .log files and sweep.csv)
/// skips what is not a run and says so.
fn report_over_a_glob_skips_what_is_not_a_run(dir: &Path) {
    let entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        entries
            .iter()
            .any(|p| p.extension().is_some_and(|x| x == "log"))
    );
    let r = Command::new(BIN)
        .arg("report")
        .args(&entries)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("skipped 5 path(s) that are not runs"), "{err}");
    assert!(String::from_utf8_lossy(&r.stdout).contains("nar=true"));
}

/// `--emit`: one command per point, run here by the Slurm array script, gives the CSVs of
/// `reference`; a later `fedrun sweep` over the same folder sees the points as complete.
fn emitted_commands_give_the_same_csvs(cfg: &Path, d: &Path, reference: &Path) {
    let cmds = d.join("cmds.txt");
    let emitted = d.join("emitted");
    let e = sweep_grid(cfg, &emitted, &["--emit", cmds.to_str().unwrap()]);
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));
    assert!(!emitted.exists(), "--emit runs nothing");
    let lines = std::fs::read_to_string(&cmds).unwrap();
    assert_eq!(lines.lines().count(), 4);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm_array.sh");
    for id in 1..=4 {
        let st = Command::new("bash")
            .arg(&script)
            .arg(&cmds)
            .env("SLURM_ARRAY_TASK_ID", id.to_string())
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
    for n in POINTS {
        assert_eq!(
            without_time(&emitted.join(n).join("rounds.csv")),
            without_time(&reference.join(n).join("rounds.csv")),
            "{n} run from its emitted line"
        );
    }
    assert_eq!(skipped(&sweep_grid(cfg, &emitted, &[])), 4);
}

#[test]
fn sweep_runs_the_grid_in_parallel_like_in_sequence_and_skips_finished_points() {
    let d = TempDir::new("sweep");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let (j1, j2) = (d.path().join("j1"), d.path().join("j2"));
    let a = sweep_grid(&cfg, &j2, &["--jobs", "2"]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = sweep_grid(&cfg, &j1, &["--jobs", "1"]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    // each point as it ends, with the sweep's time left
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(
        err.contains("complete (1 of 4 points ended; about "),
        "{err}"
    );
    assert!(
        err.contains("complete (4 of 4 points ended; about "),
        "{err}"
    );
    for n in POINTS {
        assert_eq!(
            without_time(&j2.join(n).join("rounds.csv")),
            without_time(&j1.join(n).join("rounds.csv")),
            "{n}"
        );
    }
    let csv = std::fs::read_to_string(j2.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .starts_with("local.weight_decay,local.nar,run,status")
    );
    assert_eq!(csv.matches(",complete,").count(), 4);
    // re-run: every point is skipped
    let c = sweep_grid(&cfg, &j2, &["--jobs", "2"]);
    assert!(c.status.success());
    assert_eq!(skipped(&c), 4);
    report_over_a_glob_skips_what_is_not_a_run(&j2);
    emitted_commands_give_the_same_csvs(&cfg, d.path(), &j1);
    // a bad key fails before anything runs
    let e = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&cfg)
        .args(["--grid", "local.weight_decy=1", "--out"])
        .arg(d.path().join("bad"))
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("weight_decay"));
    assert!(!d.path().join("bad").exists());
}

#[test]
fn labels_and_groups_ignore_tables_the_algorithm_does_not_read() {
    // Two FedAvg runs whose specs differ only in `[fedadam]` (which FedAvg does not read) are
    // one configuration; FedAdam runs are told apart by their own `eps`, which labels no other
    // algorithm's runs.
    let d = TempDir::new("labels");
    let runs = vec![
        fake_run(&d.path().join("a0"), &["fedadam.eps=0.01"], &[10.0]),
        fake_run(
            &d.path().join("a1"),
            &["fedadam.eps=0.001", "run.seed=1"],
            &[20.0],
        ),
        fake_run(
            &d.path().join("b0"),
            &["fl.algorithm=\"fedadam\"", "fedadam.eps=0.1"],
            &[30.0],
        ),
        fake_run(
            &d.path().join("b1"),
            &["fl.algorithm=\"fedadam\"", "fedadam.eps=0.2"],
            &[35.0],
        ),
        fake_run(
            &d.path().join("c0"),
            &["fl.algorithm=\"fedams\"", "fedlamb.eps=0.001"],
            &[40.0],
        ),
    ];
    let groups = fedrun::analysis::runs::group(runs);
    let labels: Vec<(&str, usize)> = groups
        .iter()
        .map(|g| (g.label.as_str(), g.runs.len()))
        .collect();
    assert_eq!(
        labels,
        vec![
            ("algorithm=fedadam, eps=0.1", 1),
            ("algorithm=fedadam, eps=0.2", 1),
            ("algorithm=fedams", 1),
            ("algorithm=fedavg", 2),
        ]
    );
}

/// The text elements of an SVG (plotters writes each on a line of its own).
fn svg_texts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// Runs under `dir/r/<name>` with their weight decay, NAR flag and final accuracy.
fn wd_runs(dir: &Path, runs: &[(&str, &str, &str, f64)]) {
    for (name, wd, nar, acc) in runs {
        fake_run(
            &dir.join("r").join(name),
            &[
                &format!("local.weight_decay={wd}"),
                &format!("local.nar={nar}"),
            ],
            &[10.0, *acc],
        );
    }
}

/// `fedrun plot ARGS -o OUT`.
fn plot_to(args: &[&str], out: &Path) -> std::process::Output {
    Command::new(BIN)
        .arg("plot")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn figures_are_fit_for_a_paper() {
    let d = TempDir::new("plot_style");
    wd_runs(
        d.path(),
        &[
            ("a", "0.001", "false", 30.0),
            ("b", "0.003", "false", 32.0),
            ("c", "0.03", "false", 28.0),
            ("e", "0.001", "true", 31.0),
        ],
    );
    let plot = plot_to;
    let r = d.path().join("r");
    let r = r.to_str().unwrap();
    // a log axis labels the swept values themselves, not only decades
    let svg = d.path().join("wd.svg");
    let o = plot(&[r, "--x", "weight_decay"], &svg);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = svg_texts(&svg);
    for want in ["0.001", "0.003", "0.03", "final test accuracy (%)"] {
        assert!(texts.iter().any(|t| t == want), "no `{want}` in the SVG");
    }
    // the Okabe–Ito palette, not plotters' default red/green; a second line dashed
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("#0072B2"), "Okabe–Ito blue");
    assert!(text.contains("#D55E00"), "Okabe–Ito vermillion");
    assert!(!text.contains("#FF0000") && !text.contains("#00FF00"));
    // curves: the x axis counts rounds completed, the y axis has its unit
    let curve = d.path().join("curve.svg");
    let a = d.path().join("r/e");
    let o = plot(&[a.to_str().unwrap()], &curve);
    assert!(o.status.success());
    let texts = svg_texts(&curve);
    assert!(texts.iter().any(|t| t == "rounds completed"));
    assert!(texts.iter().any(|t| t == "test accuracy (%)"));
    // the legend names NAR when the one configuration plotted has it
    assert!(
        texts.iter().any(|t| t == "fedavg + NAR (n=1)"),
        "{:?}",
        texts
            .iter()
            .filter(|t| t.contains("fedavg"))
            .collect::<Vec<_>>()
    );
    // PDF beside PNG and SVG: a vector PDF with the font embedded
    let pdf = d.path().join("wd.pdf");
    let o = plot(&[r, "--x", "weight_decay"], &pdf);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF-"));
    assert!(
        bytes.windows(8).any(|w| w == b"FontFile"),
        "the font is embedded"
    );
    // --x on a key that never varied is an error
    let o = plot(&[r, "--x", "local.lr"], &d.path().join("bad.png"));
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("needs a key that varies"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `plot --x run.seed` (or `--x seed`): the seed, which never tells configurations apart,
/// becomes the axis, each seed's run its own point (the issue's "unknown or ambiguous spec
/// key"); a numeric axis's title says its ±sd is a band, as it draws one, where the categories'
/// title says bars.
#[test]
fn plot_against_the_seed_and_names_its_bands_as_drawn() {
    let d = TempDir::new("plot_seed");
    for (name, seed, wd, acc) in [
        ("a", 0, "0.001", 30.0),
        ("b", 1, "0.001", 34.0),
        ("c", 0, "0.01", 20.0),
        ("e", 1, "0.01", 26.0),
    ] {
        fake_run(
            &d.path().join("r").join(name),
            &[
                &format!("run.seed={seed}"),
                &format!("local.weight_decay={wd}"),
            ],
            &[10.0, acc],
        );
    }
    let r = d.path().join("r");
    // the texts of the figure against `x`
    let plot_texts = |x: &str| {
        let svg = d.path().join(format!("{x}.svg"));
        let o = Command::new(BIN)
            .args(["plot", r.to_str().unwrap(), "--x", x, "-o"])
            .arg(&svg)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        svg_texts(&svg)
    };
    for x in ["run.seed", "seed"] {
        let texts = plot_texts(x);
        assert!(
            texts.iter().any(|t| t.contains("against seed")),
            "{texts:?}"
        );
        // two lines (a weight decay each), no band: each point is one run
        assert!(
            !texts.iter().any(|t| t.contains("sd over seeds")),
            "{texts:?}"
        );
    }
    // against the weight decay, two seeds a point: a band, and the title says so
    let texts = plot_texts("weight_decay");
    assert!(
        texts.iter().any(|t| t.contains("bands: ±1 sd over seeds")),
        "{texts:?}"
    );
}

/// Rewrite a run folder's `rounds.csv` through `f`.
fn edit_csv(dir: &Path, f: impl Fn(String) -> String) {
    let p = dir.join("rounds.csv");
    let t = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, f(t)).unwrap();
}

/// A folder whose files do not read back whole is `damaged`, says what, and its values stay
/// out of the table: a CSV cut mid-row (the cut row is not the final value), a NaN or an
/// infinite cell (never the best value), a corrupt `summary.json` (not `interrupted`).
#[test]
fn damaged_folders_are_named_and_their_bad_values_left_out() {
    let d = TempDir::new("damaged");
    let load = |name: &str, edit: &dyn Fn(&Path)| {
        let dir = d.path().join(name);
        fake_run(&dir, &[], &[10.0, 20.0, 30.0]);
        edit(&dir);
        Run::load(&dir).unwrap()
    };
    let whole = load("whole", &|_| {});
    assert_eq!((whole.status, whole.damage.len()), (Status::Complete, 0));
    // the last row cut inside its accuracy: "3,3" of "3,30,…"
    let cut = load("cut", &|dir: &Path| {
        edit_csv(dir, |t| t[..t.rfind("3,30").unwrap() + 3].to_string())
    });
    assert_eq!(cut.status, Status::Damaged);
    assert!(cut.damage[0].contains("cut"), "{:?}", cut.damage);
    assert_eq!(
        cut.series("test_acc").unwrap().1,
        [10.0, 20.0],
        "the cut row left out"
    );
    let nan = load("nan", &|dir: &Path| {
        edit_csv(dir, |t| {
            t.replace("\n2,20,", "\n2,NaN,")
                .replace("\n3,30,", "\n3,inf,")
        })
    });
    assert_eq!(nan.status, Status::Damaged);
    assert!(
        nan.damage
            .iter()
            .any(|m| m.contains("row 2: test_acc = NaN")),
        "{:?}",
        nan.damage
    );
    assert!(
        nan.damage
            .iter()
            .any(|m| m.contains("row 3: test_acc = inf")),
        "{:?}",
        nan.damage
    );
    assert_eq!(nan.series("test_acc").unwrap().1, [10.0], "no NaN, no inf");
    let summary = load("summary", &|dir: &Path| {
        std::fs::write(dir.join("summary.json"), "{\"status\": \"compl").unwrap();
    });
    assert_eq!(summary.status, Status::Damaged);
    assert!(
        summary.damage[0].contains("summary.json"),
        "{:?}",
        summary.damage
    );
}

/// `plot` refuses sizes it cannot draw, and `report --at 0`, with clap's message naming the
/// flag, never a panic.
#[test]
fn plot_sizes_and_report_rounds_out_of_range_are_refused() {
    let d = TempDir::new("ranges");
    fake_run(&d.path().join("r"), &[], &[10.0, 20.0]);
    let r = d.path().join("r");
    let out = d.path().join("f.png");
    for args in [
        vec!["plot", "--width", "100000", "--height", "100000"],
        vec!["plot", "--width", "0"],
        vec!["report", "--at", "0"],
    ] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fedrun"));
        c.args(&args).arg(&r);
        if args[0] == "plot" {
            c.arg("-o").arg(&out);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("'{}", args[1])) && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// A bad `--grid` value is named as the `--grid` it is, not as a `--set`; `run.name` is refused
/// as an axis with why, not as "the same run".
#[test]
fn grid_errors_name_the_grid() {
    let d = TempDir::new("grid-errors");
    let emit = d.path().join("cmds.txt");
    for (axis, needle) in [
        (
            "local.lr=abc,0.1",
            "--grid local.lr=abc: key `local.lr` expects a number",
        ),
        ("run.name=a,b", "run.name cannot be an axis"),
    ] {
        let o = Command::new(BIN)
            .args(["sweep", "--grid", axis, "--emit"])
            .arg(&emit)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{axis}: {err}");
        let first = axis.split(',').next().unwrap();
        assert!(
            err.contains(needle) && !err.contains(&format!("--set {first}")),
            "{axis}: {err}"
        );
    }
}

/// One number format in every label: the values of a weight-decay sweep read alike, and an
/// extreme value is short.
#[test]
fn key_values_have_one_number_format() {
    use fedrun::analysis::runs::number;
    assert_eq!(number(1e-4), "0.0001");
    assert_eq!(number(0.01), "0.01");
    assert_eq!(number(10.0), "10");
    assert_eq!(number(0.998), "0.998");
    assert_eq!(number(1e-8), "1e-8");
    assert_eq!(number(1e300), "1e300");
    assert_eq!(number(-2.5e7), "-2.5e7");
    assert_eq!(number(0.0), "0");
}

/// The text elements of an SVG whose tag contains `attr`, with the tag's `x`: (x, text).
fn svg_labels(svg: &str, attr: &str) -> Vec<(f64, f64, String)> {
    let lines: Vec<&str> = svg.lines().map(str::trim).collect();
    let num = |tag: &str, key: &str| -> f64 {
        let at = tag.find(&format!(" {key}=\"")).unwrap() + key.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    lines
        .windows(2)
        .filter(|w| w[0].starts_with("<text") && w[0].contains(attr))
        .map(|w| (num(w[0], "x"), num(w[0], "font-size"), w[1].to_string()))
        .collect()
}

/// The y ticks of a curve figure: the texts right-aligned at the axis, not rotated.
fn y_ticks(svg: &str) -> Vec<(f64, f64, String)> {
    svg_labels(svg, "text-anchor=\"end\"")
        .into_iter()
        .filter(|(_, _, t)| t.parse::<f64>().is_ok())
        .collect()
}

/// Rows of (test accuracy, test loss).
type Rows = &'static [(f64, f64)];

/// The SVG of `fedrun plot --metric METRIC` over runs written by hand under `dir/name/`; a
/// run's name sets its seed (its length) and its group (`b…`: lr 0.5, else 0.05).
fn plot_svg(dir: &Path, name: &str, runs: &[(&str, Rows)], metric: &str) -> String {
    for (sub, rows) in runs {
        let seed = format!("run.seed={}", sub.len());
        let lr = format!("local.lr={}", if sub.starts_with('b') { 0.5 } else { 0.05 });
        let run = dir.join(name).join(sub);
        common::write_run(&run, &[&seed, &lr], rows, Status::Complete, 1);
    }
    let out = dir.join(format!("{name}.svg"));
    let o = Command::new(BIN)
        .arg("plot")
        .arg(dir.join(name))
        .args(["--metric", metric, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// The y axis a researcher met: flat data on a hairline axis, `.0` on integer counts, an `inf`
/// drawn as a spike, and the y-axis title over wide tick labels; each pinned on the SVG.
#[test]
fn figure_y_axes_fit_their_data() {
    let d = TempDir::new("plot_axes");
    // flat data: an axis at least 2 % of the values wide, ticks with one decimal at most
    let flat: Rows = &[(55.0, 1.0), (55.01, 1.0), (55.02, 1.0), (55.0, 1.0)];
    let svg = plot_svg(d.path(), "flat", &[("a", flat)], "test_acc");
    let ticks: Vec<f64> = y_ticks(&svg).iter().map(|t| t.2.parse().unwrap()).collect();
    let tenths = |t: &f64| (t * 10.0 - (t * 10.0).round()).abs() < 1e-9;
    assert!(ticks.iter().all(tenths), "{ticks:?}");
    let span = ticks.iter().cloned().fold(f64::MIN, f64::max)
        - ticks.iter().cloned().fold(f64::MAX, f64::min);
    assert!(span > 0.75, "a hairline axis: {ticks:?}");
    // integer counts: no `.0`
    let counts: Rows = &[(500.0, 1.0), (1000.0, 1.0), (1500.0, 1.0), (2000.0, 1.0)];
    let svg = plot_svg(d.path(), "counts", &[("a", counts)], "test_acc");
    let texts: Vec<String> = y_ticks(&svg).into_iter().map(|t| t.2).collect();
    assert!(
        texts.len() >= 3 && texts.iter().all(|t| !t.contains('.')),
        "{texts:?}"
    );
    // an infinite cell is left out, not drawn as a spike to the top of the axis
    let inf: Rows = &[(50.0, 1.0), (51.0, f64::INFINITY), (52.0, 1.1)];
    let svg = plot_svg(d.path(), "inf", &[("a", inf)], "test_loss");
    let top = y_ticks(&svg)
        .iter()
        .map(|t| t.2.parse::<f64>().unwrap())
        .fold(f64::MIN, f64::max);
    assert!(top < 1.2, "the axis reaches {top}");
    // wide tick labels: the rotated y-axis title stays left of every one
    let small: Rows = &[(0.00121, 1.0), (0.00125, 1.0), (0.00131, 1.0)];
    let svg = plot_svg(d.path(), "wide", &[("a", small)], "test_acc");
    let (tx, tsize, _) = svg_labels(&svg, "rotate(270").remove(0);
    let title_right = tx + 0.6 * tsize;
    for (x, size, text) in y_ticks(&svg) {
        let left = x - 0.62 * size * text.chars().count() as f64;
        assert!(
            title_right < left,
            "the y title (to {title_right}) overlaps `{text}` (from {left})"
        );
    }
}

/// Two groups of two seeds: each ±sd band outlined in its own colour over a light fill, so that
/// two bands that overlap do not blend into one grey.
#[test]
fn overlapping_bands_stay_told_apart() {
    let d = TempDir::new("plot_bands");
    let a0: Rows = &[(10.0, 1.0), (20.0, 1.0), (30.0, 1.0)];
    let a1: Rows = &[(12.0, 1.0), (26.0, 1.0), (31.0, 1.0)];
    let b0: Rows = &[(11.0, 1.0), (21.0, 1.0), (29.0, 1.0)];
    let b1: Rows = &[(14.0, 1.0), (25.0, 1.0), (33.0, 1.0)];
    let runs = [("a", a0), ("aa", a1), ("b", b0), ("bb", b1)];
    let svg = plot_svg(d.path(), "bands", &runs, "test_acc");
    for colour in ["#0072B2", "#D55E00"] {
        let edges = svg
            .lines()
            .filter(|l| l.contains(&format!("stroke=\"{colour}\" stroke-width=\"1\"")))
            .count();
        assert_eq!(edges, 2, "{colour}: the band's two edges");
        assert!(svg.contains(&format!("<polygon opacity=\"0.12\" fill=\"{colour}\"")));
    }
}

/// A sweep reads a spec that extends another as a single run does, and refuses a `--set` of a
/// key its grid varies (which would be overridden at every point without a word).
#[test]
fn a_sweep_resolves_extends_and_refuses_a_set_its_grid_overrides() {
    let d = TempDir::new("sweep-extends");
    std::fs::write(d.path().join("base.toml"), synthetic_spec("")).unwrap();
    let child = d.path().join("child.toml");
    std::fs::write(&child, "extends = \"base.toml\"\n[fl]\nrounds = 1\n").unwrap();
    let emit = d.path().join("cmds.txt");
    let o = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&child)
        .args(["--grid", "run.seed=0,1", "--emit"])
        .arg(&emit)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cmds = std::fs::read_to_string(&emit).unwrap();
    assert_eq!(
        cmds.lines().filter(|l| l.contains("run.seed")).count(),
        2,
        "{cmds}"
    );
    let o = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&child)
        .args(["--set", "run.seed=3", "--grid", "run.seed=0,1", "--emit"])
        .arg(&emit)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("--set run.seed=3") && err.contains("the grid varies"),
        "{err}"
    );
}

/// `report`'s EMA is de-biased unless asked otherwise: five rounds at 21 % read 21 at round 5,
/// not the 8.6 of an EMA started from 0 (`--no-debias`).
#[test]
fn reports_ema_is_debiased_by_default() {
    let d = TempDir::new("ema-debias");
    let run = d.path().join("r");
    common::write_run(&run, &[], &[(21.0, 1.0); 5], Status::Complete, 1);
    let ema_at_5 = |extra: &[&str]| -> String {
        let o = Command::new(BIN)
            .arg("report")
            .arg(&run)
            .args(["--ema", "0.9", "--at", "5", "--format", "csv"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (default, plain) = (ema_at_5(&[]), ema_at_5(&["--no-debias"]));
    assert!(
        default.contains("21") && !default.contains("8.6"),
        "{default}"
    );
    assert!(plain.contains("8.6"), "{plain}");
}

/// A point that diverges is marked `diverged` in `sweep.csv` with its reason, an outcome of the
/// study beside the points that completed (the sweep exits 0), not a failure to retry.
#[test]
fn a_sweep_marks_a_diverged_point_as_diverged() {
    let d = TempDir::new("sweep-diverged");
    let cfg = d.path().join("spec.toml");
    std::fs::write(&cfg, synthetic_spec("")).unwrap();
    let out = d.path().join("out");
    let o = Command::new(BIN)
        .args(["sweep", "--config"])
        .arg(&cfg)
        .args([
            "--set",
            "local.max_norm=0",
            "--grid",
            "local.lr=0.01,1e30",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stdout}{err}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let row = |v: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("{v},")))
            .unwrap_or_else(|| panic!("no row for lr={v}: {csv}"))
            .to_string()
    };
    assert!(row("0.01").contains(",complete,"), "{csv}");
    assert!(row("1e30").contains(",diverged,"), "{csv}");
    assert!(stdout.contains("diverged: non-finite"), "{stdout}");
    assert!(!stdout.contains("failed"), "{stdout}");
}

/// `plot`'s own options: legend labels in the lines' order (a count that does not match is an
/// error naming the lines), axis limits, bands left out, and a default title that says what the
/// bands are (and says nothing of bands when there are none).
#[test]
fn plot_takes_labels_limits_and_bands_and_says_what_a_band_is() {
    let d = TempDir::new("plot-options");
    let r = d.path().join("r");
    for (name, sets, accs) in [
        ("a0", ["run.seed=0", "local.nar=false"], [10.0, 20.0, 30.0]),
        ("a1", ["run.seed=1", "local.nar=false"], [12.0, 22.0, 28.0]),
        ("b0", ["run.seed=0", "local.nar=true"], [11.0, 25.0, 33.0]),
        ("b1", ["run.seed=1", "local.nar=true"], [13.0, 21.0, 35.0]),
    ] {
        fake_run(&r.join(name), &sets, &accs);
    }
    let svg = |name: &str, extra: &[&str]| {
        let out = d.path().join(name);
        let o = Command::new(BIN)
            .arg("plot")
            .arg(&r)
            .args(extra)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        (
            o.status.success(),
            std::fs::read_to_string(&out).unwrap_or(err),
        )
    };
    let (ok, plain) = svg("plain.svg", &[]);
    assert!(ok, "{plain}");
    assert!(
        plain.contains("bands: ±1 sd over seeds"),
        "the title says what a band is"
    );
    let (ok, dressed) = svg(
        "dressed.svg",
        &[
            "--labels",
            "FedAvg,FedAvg + NAR",
            "--ylim",
            "0,100",
            "--no-bands",
        ],
    );
    assert!(ok, "{dressed}");
    assert!(dressed.contains("FedAvg + NAR") && !dressed.contains("nar=true"));
    assert!(!dressed.contains("bands:"), "no bands, no word of them");
    let texts: Vec<&str> = dressed
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split('>').nth(1)?.split('<').next())
        .map(str::trim)
        .collect();
    assert!(
        texts.contains(&"100") && texts.contains(&"0"),
        "the y limits' ticks: {texts:?}"
    );
    let fills = |t: &str| t.matches("<polygon").count();
    assert!(fills(&dressed) < fills(&plain), "the bands' fills are gone");
    let (ok, err) = svg("bad.svg", &["--labels", "one"]);
    assert!(
        !ok && err.contains("--labels") && err.contains("2 line(s)"),
        "{err}"
    );
    let (ok, err) = svg("bad2.svg", &["--ylim", "5,1"]);
    assert!(!ok && err.contains("LO must be below HI"), "{err}");
}

/// `plot --x-scale`: linear draws round ticks, not the swept values a log axis labels; log
/// refuses a key whose values are not positive numbers, naming linear; a scale wants `--x`.
#[test]
fn plot_x_scale_forces_the_keys_axis() {
    let d = TempDir::new("xscale");
    wd_runs(
        d.path(),
        &[
            ("a", "0.001", "false", 30.0),
            ("b", "0.003", "false", 32.0),
            ("c", "0.03", "true", 28.0),
        ],
    );
    let plot = plot_to;
    let r = d.path().join("r");
    let r = r.to_str().unwrap();
    let log = d.path().join("wd-log.svg");
    assert!(plot(&[r, "--x", "weight_decay"], &log).status.success());
    assert!(svg_texts(&log).iter().any(|t| t == "0.003"));
    let lin = d.path().join("wd-linear.svg");
    let o = plot(&[r, "--x", "weight_decay", "--x-scale", "linear"], &lin);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = svg_texts(&lin);
    assert!(!texts.iter().any(|t| t == "0.003"), "{texts:?}");
    let o = plot(&[r, "--x", "nar", "--x-scale", "log"], &lin);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--x-scale linear"),
        "{err}"
    );
    let o = plot(&[r, "--x-scale", "log"], &lin);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("--x"), "{err}");
}
