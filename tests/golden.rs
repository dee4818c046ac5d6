//! The FedNAR family's CSVs, pinned: every algorithm fedrun had before the FedACG-family hooks,
//! with and without NAR, two rounds on synthetic data, against `tests/golden/fednar_family.csv`
//! (written from the code before the FedACG-family refactor, which left it unchanged; rewritten
//! once since, when the random streams moved to `rand_xoshiro`/`rand_distr` and every
//! partition, initial model and batch order changed by design). Values are compared to 1e-4 relative, not
//! bitwise, because gemm picks its SIMD kernels per machine (AVX2 or AVX-512) and rounds
//! differently; an algorithmic change moves them by far more. `FEDRUN_BLESS=1` rewrites the file.

mod common;

use common::{TempDir, synthetic_spec};
use fedrun::config::Spec;
use fedrun::fl::engine::{RunOptions, run};

const FAMILY: &[&str] = &[
    "fedavg",
    "fedprox",
    "scaffold",
    "fedexp",
    "fedadam",
    "fedadagrad",
    "fedyogi",
    "fedavgm",
];

fn family_csv() -> String {
    let mut out = String::from("algorithm,nar,");
    out.push_str(
        fedrun::metrics::csv::HEADER
            .rsplit_once(',')
            .expect("header")
            .0,
    );
    out.push('\n');
    for alg in FAMILY {
        for nar in [false, true] {
            let set = vec![
                format!("fl.algorithm=\"{alg}\""),
                format!("local.nar={nar}"),
                // a threshold that clips, so that NAR and the baseline differ
                "local.max_norm=1.0".into(),
            ];
            let spec = Spec::from_str_with(&synthetic_spec(""), "golden", &set).unwrap();
            let d = TempDir::new("golden");
            let opts = RunOptions {
                out: d.path().to_path_buf(),
                ..Default::default()
            };
            let s = run(&spec, &opts).unwrap();
            assert_eq!(s.status, "complete", "{alg} nar={nar}: {}", s.message);
            let text = std::fs::read_to_string(d.path().join("t/rounds.csv")).unwrap();
            for line in text.lines().skip(1) {
                let row = line.rsplit_once(',').unwrap().0;
                out.push_str(&format!("{alg},{nar},{row}\n"));
            }
        }
    }
    out
}

fn close(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-4 * x.abs().max(y.abs()) + 1e-7,
        _ => false,
    }
}

#[test]
fn fednar_family_csvs_match_the_golden_file() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/fednar_family.csv");
    let now = family_csv();
    if std::env::var_os("FEDRUN_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap();
    let (g, n): (Vec<&str>, Vec<&str>) = (golden.lines().collect(), now.lines().collect());
    assert_eq!(g.len(), n.len(), "row count");
    assert_eq!(g[0], n[0], "header");
    for (gl, nl) in g.iter().zip(&n).skip(1) {
        let ok = gl.split(',').count() == nl.split(',').count()
            && gl.split(',').zip(nl.split(',')).all(|(a, b)| close(a, b));
        assert!(ok, "row changed:\n golden {gl}\n now    {nl}");
    }
}
