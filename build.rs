//! Records the commit the binary is built from (`git describe --always --dirty`) for `run.json`;
//! `unknown` outside a git checkout or without git. `--no-optional-locks` keeps git from
//! refreshing `.git/index` (one of this script's triggers) while it checks for changes: without
//! it every cargo command after a build compiled fedrun again.

fn main() {
    for p in [".git/HEAD", ".git/index", "src"] {
        println!("cargo:rerun-if-changed={p}");
    }
    let describe = std::process::Command::new("git")
        .args([
            "--no-optional-locks",
            "describe",
            "--always",
            "--dirty",
            "--abbrev=12",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FEDRUN_GIT_DESCRIBE={describe}");
}
