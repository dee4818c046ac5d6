//! `run.json`: what ran, so that any result can be traced. One entry per invocation of the run
//! (a resumed run has several, possibly on other machines): the command line, the data folder
//! actually read, the fedrun version and the commit it was built from, the machine (CPU model,
//! the SIMD features detected at run time, threads), the rounds it ran and the wall time of each
//! phase. The file is rewritten atomically at the start and at the end of each invocation.

use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::error::{Error, Result};
use crate::io::write_atomic;

/// The file's name in a run folder.
pub const FILE: &str = "run.json";

/// How the run folder counts rounds, as stated in `run.json`.
pub const ROUNDS: &str = "rounds.csv's `round` is the number of rounds completed, from 1 (the model after k rounds is row k); summary.json and `fedrun report`/`plot` count the same way";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub rounds_convention: String,
    pub invocations: Vec<Invocation>,
}

/// One `fedrun` process that ran (part of) the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// Seconds since the Unix epoch when it started.
    pub started_unix: u64,
    /// The command line, as the process received it.
    pub command: Vec<String>,
    pub working_dir: String,
    /// The data folder read (`--data-dir`, else `data.path`, else the data set's default).
    pub data_dir: String,
    pub fedrun_version: String,
    /// `git describe` of the checkout the binary was built from (`-dirty`: with uncommitted
    /// changes), or `unknown` outside a git checkout.
    pub git_commit: String,
    pub machine: Machine,
    pub backend: String,
    /// The rounds this invocation ran: from `first_round` to `last_round` (counted as in the
    /// CSV; `last_round` < `first_round` when it ran none).
    pub first_round: usize,
    pub last_round: usize,
    /// Wall time of each phase, in seconds (0 until the invocation ends).
    pub phases: Phases,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub cpu_model: String,
    /// SIMD features detected at run time (fedrun's kernels and gemm pick their code by them).
    pub cpu_features: Vec<String>,
    /// The SIMD level fedrun's kernels and their products ran at (`avx512`, `avx2`, `sse2`):
    /// the CPU's widest, or the lower one `FEDRUN_SIMD` named. Bit-for-bit reproduction holds
    /// between invocations of the same level.
    #[serde(default)]
    pub simd: String,
    /// Threads of the compute pool (`RAYON_NUM_THREADS`, else the cores).
    pub threads: usize,
    pub os: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    pub load_data_s: f64,
    pub build_s: f64,
    /// Local training and the server updates.
    pub train_s: f64,
    pub eval_s: f64,
    pub checkpoint_s: f64,
    pub total_s: f64,
}

impl Machine {
    /// This machine, as the run sees it.
    pub fn here() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpu
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        Machine {
            hostname,
            cpu_model,
            cpu_features: features(),
            simd: crate::kernels::simd::level().name().into(),
            threads: rayon::current_num_threads(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// The SIMD features of this CPU that fedrun's code paths depend on.
fn features() -> Vec<String> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut f = Vec::new();
        macro_rules! probe {
            ($($name:tt),*) => {
                $( if std::arch::is_x86_feature_detected!($name) { f.push($name.to_string()); } )*
            };
        }
        probe!(
            "sse4.2", "avx", "avx2", "fma", "avx512f", "avx512vl", "avx512bw"
        );
        f
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

impl Invocation {
    /// This process, about to run rounds from `first_round` of a run reading `data_dir`.
    pub fn start(data_dir: &Path, backend: &str, first_round: usize) -> Invocation {
        Invocation {
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            command: std::env::args().collect(),
            working_dir: std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            data_dir: std::path::absolute(data_dir)
                .unwrap_or_else(|_| data_dir.to_path_buf())
                .display()
                .to_string(),
            fedrun_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("FEDRUN_GIT_DESCRIBE").into(),
            machine: Machine::here(),
            backend: backend.into(),
            first_round,
            last_round: first_round.saturating_sub(1),
            phases: Phases::default(),
        }
    }
}

impl Provenance {
    /// The folder's record so far, or a new one; a file that does not parse is not trusted:
    /// it is kept as `run.json.unreadable` and a new record starts, with a warning.
    pub fn read_or_new(dir: &Path) -> Provenance {
        let p = dir.join(FILE);
        let fresh = Provenance {
            rounds_convention: ROUNDS.into(),
            invocations: Vec::new(),
        };
        let Ok(text) = std::fs::read_to_string(&p) else {
            return fresh;
        };
        match serde_json::from_str::<Provenance>(&text) {
            Ok(mut r) => {
                r.rounds_convention = ROUNDS.into();
                r
            }
            Err(e) => {
                eprintln!(
                    "warning: {} is damaged ({e}); kept as {FILE}.unreadable, a new record starts",
                    p.display()
                );
                let _ = std::fs::rename(&p, dir.join(format!("{FILE}.unreadable")));
                fresh
            }
        }
    }

    /// Write the record (atomically).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Run(format!("cannot encode {FILE}: {e}")))?;
        write_atomic(&dir.join(FILE), text.as_bytes())
    }
}

/// The record of a run folder while this invocation runs.
pub struct Record {
    prov: Provenance,
    started: std::time::Instant,
}

impl Record {
    /// Append `inv` to the folder's record and write it; `started` is when this process began
    /// the run (the phases' total counts from it).
    pub fn start(dir: &Path, inv: Invocation, started: std::time::Instant) -> Result<Record> {
        let mut prov = Provenance::read_or_new(dir);
        prov.invocations.push(inv);
        prov.write(dir)?;
        Ok(Record { prov, started })
    }

    /// The invocation ran up to `last_round` with `phases`: write it.
    pub fn finish(&mut self, dir: &Path, last_round: usize, mut phases: Phases) -> Result<()> {
        phases.total_s = self.started.elapsed().as_secs_f64();
        if let Some(inv) = self.prov.invocations.last_mut() {
            inv.last_round = last_round;
            inv.phases = phases;
        }
        self.prov.write(dir)
    }
}
