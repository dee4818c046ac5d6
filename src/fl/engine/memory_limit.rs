//! The memory a run may use: the smallest of the machine's available memory (`MemAvailable` in
//! `/proc/meminfo`), what is left under the process's cgroup limit (cgroup v2 `memory.max` less
//! the working set, `memory.current` less the inactive file cache; v1 `memory.limit_in_bytes`
//! less `memory.usage_in_bytes` and `total_inactive_file`: the limit Slurm's `--mem` and
//! containers enforce, by killing the process), and Slurm's `SLURM_MEM_PER_NODE`, or
//! `SLURM_MEM_PER_CPU` times `SLURM_CPUS_ON_NODE`, when set (megabytes). Each with where it came
//! from, so that a refusal names the limit that binds.

use std::path::{Path, PathBuf};

/// A memory limit: bytes, and where they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub source: String,
}

/// The binding limit of this process, or None where none can be read.
pub fn limit() -> Option<Limit> {
    let root =
        std::env::var_os("FEDRUN_CGROUP_ROOT").map_or("/sys/fs/cgroup".into(), PathBuf::from);
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let env = |k: &str| std::env::var(k).ok();
    [meminfo(), cgroup(&root, &cgroups), slurm(env)]
        .into_iter()
        .flatten()
        .min_by_key(|l| l.bytes)
}

/// How many processes of this process's cgroup the out-of-memory killer has killed so far
/// (v2 `memory.events`' `oom_kill`, v1 `memory.oom_control`'s), or None where it cannot be read.
pub fn oom_kills() -> Option<u64> {
    let root =
        std::env::var_os("FEDRUN_CGROUP_ROOT").map_or("/sys/fs/cgroup".into(), PathBuf::from);
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    oom_kills_in(&root, &cgroups)
}

/// [`oom_kills`] of the process whose `/proc/self/cgroup` is `cgroups`, under `root`.
pub fn oom_kills_in(root: &Path, cgroups: &str) -> Option<u64> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        let file = match ctrl {
            "" => root.join(rel).join("memory.events"),
            c if c.split(',').any(|c| c == "memory") => {
                root.join("memory").join(rel).join("memory.oom_control")
            }
            _ => return None,
        };
        let text = std::fs::read_to_string(file).ok()?;
        (text.lines()).find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
    })
}

/// `MemAvailable` of `/proc/meminfo`.
fn meminfo() -> Option<Limit> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(Limit {
        bytes: kb.checked_mul(1024)?,
        source: "the machine's available memory (MemAvailable)".into(),
    })
}

/// A number of bytes in a cgroup file: None for `max`, an absent file, or v1's "no limit" (a
/// value near 2⁶³).
fn bytes_in(path: &Path) -> Option<u64> {
    let v: u64 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

/// What is left under the cgroup limit of the process whose `/proc/self/cgroup` is `cgroups`,
/// with the cgroup file systems under `root`: the tightest of its cgroup and the cgroups above
/// it (a container sees its own cgroup at the root, so the root's files count too).
pub fn cgroup(root: &Path, cgroups: &str) -> Option<Limit> {
    let mut out: Option<Limit> = None;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (base, max, used, cache) = match ctrl {
            "" => (
                root.to_path_buf(),
                "memory.max",
                "memory.current",
                "inactive_file",
            ),
            c if c.split(',').any(|c| c == "memory") => (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "total_inactive_file",
            ),
            _ => continue,
        };
        // the cgroup's folder and each one above it, up to the mount's root
        let rel = path.trim_start_matches('/');
        let mut at = Path::new(rel);
        loop {
            let dir = base.join(at);
            if let Some(cap) = bytes_in(&dir.join(max)) {
                let left = cap.saturating_sub(working_set(&dir, used, cache));
                if out.as_ref().is_none_or(|o| left < o.bytes) {
                    let file = dir.join(max);
                    out = Some(Limit {
                        bytes: left,
                        source: format!(
                            "the job's memory limit left ({} in {})",
                            human(cap),
                            file.display()
                        ),
                    });
                }
            }
            match at.parent() {
                Some(p) => at = p,
                None => break,
            }
        }
    }
    out
}

/// The memory a cgroup at `dir` holds that it cannot give back: its usage (file `used`) less the
/// inactive file cache (key `cache` of `memory.stat`), which the kernel reclaims before it kills
/// (the working set, as container runtimes count it).
fn working_set(dir: &Path, used: &str, cache: &str) -> u64 {
    let usage = bytes_in(&dir.join(used)).unwrap_or(0);
    let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
    let inactive = (stat.lines())
        .find_map(|l| {
            l.strip_prefix(cache)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    usage.saturating_sub(inactive)
}

/// Slurm's memory request from its environment `env`: `SLURM_MEM_PER_NODE`, or
/// `SLURM_MEM_PER_CPU` × `SLURM_CPUS_ON_NODE` (megabytes).
pub fn slurm(env: impl Fn(&str) -> Option<String>) -> Option<Limit> {
    let num = |k: &str| env(k).and_then(|v| v.trim().parse::<u64>().ok());
    let (mb, how) = match (num("SLURM_MEM_PER_NODE"), num("SLURM_MEM_PER_CPU")) {
        (Some(n), _) => (n, "SLURM_MEM_PER_NODE".to_string()),
        (None, Some(c)) => {
            let cpus = num("SLURM_CPUS_ON_NODE").unwrap_or(1);
            (c * cpus, format!("SLURM_MEM_PER_CPU × {cpus} CPUs"))
        }
        _ => return None,
    };
    (mb > 0).then(|| Limit {
        bytes: mb.saturating_mul(1 << 20),
        source: format!("Slurm's --mem ({how} = {mb} MB)"),
    })
}

/// `n` bytes in MB or GB.
fn human(n: u64) -> String {
    match n >= 1_000_000_000 {
        true => format!("{:.1} GB", n as f64 / 1e9),
        false => format!("{:.0} MB", n as f64 / 1e6),
    }
}
