//! The docs quote what the scripts compute: PERFORMANCE.md's run-time table is
//! `scripts/bench/round_time.py`'s output, so the two cannot drift apart.

use std::path::Path;
use std::process::Command;

#[test]
fn performance_doc_holds_the_round_time_table_the_script_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(root.join("scripts/bench/round_time.py"))
        .output()
        .expect("python3 (3.11 or later, for tomllib) runs scripts/bench/round_time.py");
    assert!(
        out.status.success(),
        "round_time.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.lines().count() >= 10,
        "a row per paper setting:\n{table}"
    );
    let doc = std::fs::read_to_string(root.join("docs/PERFORMANCE.md")).unwrap();
    assert!(
        doc.contains(table.trim()),
        "docs/PERFORMANCE.md's first table is not round_time.py's output; paste it in:\n{table}"
    );
}

#[test]
fn readme_defines_every_rounds_csv_column() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `")).collect();
    for col in fedrun::metrics::csv::HEADER.split(',') {
        let named = format!("`{col}`");
        assert!(
            rows.iter()
                .any(|r| r.split('|').nth(1).is_some_and(|c| c.contains(&named))),
            "README's table of rounds.csv's columns lacks {named}"
        );
    }
}

/// Every field of `summary.json` (a summary with every optional field set, so that none is
/// left out) and every column of `sweep.csv` is in a README table.
#[test]
fn readme_defines_every_summary_field_and_sweep_column() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let first_cells: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('|').nth(1))
        .collect();
    let named = |f: &str| first_cells.iter().any(|c| c.contains(&format!("`{f}`")));
    let s = fedrun::metrics::summary::Summary {
        best_test_acc: Some(1.0),
        best_round: Some(1),
        final_test_acc: Some(1.0),
        final_test_loss: Some(1.0),
        diverged_round: Some(1),
        diverged_client: Some(1),
        seal: Some(Default::default()),
        ..Default::default()
    };
    let v = serde_json::to_value(&s).unwrap();
    for key in v.as_object().unwrap().keys() {
        assert!(named(key), "README's table of summary.json lacks `{key}`");
    }
    for seal_key in v["seal"].as_object().unwrap().keys() {
        assert!(
            readme.contains(&format!("`{seal_key}`")),
            "README lacks seal's `{seal_key}`"
        );
    }
    for col in fedrun::sweep::COLUMNS.split(',') {
        assert!(named(col), "README's table of sweep.csv lacks `{col}`");
    }
}

/// One source for each speed figure: docs/PERFORMANCE.md. The README links it and quotes no
/// ratio to PyTorch (a ratio there drifted from the table it came from).
#[test]
fn readme_quotes_no_speed_ratio_of_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for (n, line) in readme.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        // `1.8×`, not a size such as `3×3`
        let ratio = chars
            .windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == '×' && !w[2].is_ascii_digit())
            || line.ends_with('×') && chars.len() > 1 && chars[chars.len() - 2].is_ascii_digit();
        assert!(
            !ratio,
            "README line {}: a ratio belongs in docs/PERFORMANCE.md: {line}",
            n + 1
        );
    }
}
