//! `summary.json`: the run's status. It is written as `interrupted` when a run starts and
//! replaced (atomically) by `complete` or `diverged` when it ends, so a folder whose run was
//! killed never looks finished.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

crate::choice! {
    /// How a run stands: `complete`, `diverged`, or `interrupted` (killed, or stopped before
    /// the end); the analysis shows an `interrupted` run whose folder is locked as `running`; a
    /// sweep also records a point that it did not run (`not run`) or whose process failed
    /// (`failed`).
    #[derive(Default)]
    pub enum Status {
        Complete = "complete",
        Diverged = "diverged",
        #[default]
        Interrupted = "interrupted",
        Running = "running",
        NotRun = "not run",
        Failed = "failed",
        /// A folder whose files do not read back whole (`fedrun report` and `plot` say what).
        Damaged = "damaged",
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub status: Status,
    pub name: String,
    /// Rounds finished.
    pub rounds: usize,
    pub final_test_acc: Option<f64>,
    pub best_test_acc: Option<f64>,
    pub best_round: Option<usize>,
    pub final_test_loss: Option<f64>,
    pub elapsed_s: f64,
    pub seconds_per_round: f64,
    /// Where a diverged run stopped.
    pub diverged_round: Option<usize>,
    pub diverged_client: Option<usize>,
    pub message: String,
    /// How `rounds.csv` counts: [`ROUNDS_FROM`](crate::metrics::csv::ROUNDS_FROM) (its `round` is
    /// the number of rounds completed); absent, 0, in folders written before fedrun counted so
    /// (their CSV counted from 0, and the analysis adds 1).
    #[serde(default)]
    pub rounds_from: usize,
    /// The files a finished run ended with (absent in an unfinished run's summary and in
    /// folders written before fedrun sealed them): `fedrun report`, `plot`, a sweep and a rerun
    /// check the folder against it before they trust it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<Seal>,
}

/// What a finished run's `rounds.csv` and `spec.toml` were when it ended: their lengths and
/// CRC-32s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Seal {
    pub csv_bytes: u64,
    pub csv_crc32: u32,
    pub spec_bytes: u64,
    pub spec_crc32: u32,
}

/// The run folder's files a seal covers.
const SEALED: [&str; 2] = ["rounds.csv", "spec.toml"];

impl Seal {
    /// The seal of the files in `dir` as they are now.
    pub fn of(dir: &Path) -> Result<Seal> {
        let read = |f: &str| {
            let p = dir.join(f);
            std::fs::read(&p).map_err(|e| Error::io(format!("cannot read {}", p.display()), e))
        };
        let (csv, spec) = (read(SEALED[0])?, read(SEALED[1])?);
        Ok(Seal {
            csv_bytes: csv.len() as u64,
            csv_crc32: crc32fast::hash(&csv),
            spec_bytes: spec.len() as u64,
            spec_crc32: crc32fast::hash(&spec),
        })
    }
}

impl Summary {
    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("json");
        crate::io::write_atomic(&dir.join("summary.json"), text.as_bytes())
    }

    pub fn read(dir: &Path) -> Result<Summary> {
        let p = dir.join("summary.json");
        let t = std::fs::read_to_string(&p)
            .map_err(|e| Error::io(format!("cannot read {}", p.display()), e))?;
        serde_json::from_str(&t).map_err(|e| Error::Data(format!("{}: {e}", p.display())))
    }

    /// What in `dir` differs from what this summary says the run ended with: a sealed file
    /// edited, cut or replaced since, or the final values and round count not those of the last
    /// row of `rounds.csv` (a summary of another run, or edited). Empty when it all agrees, and
    /// for a summary without a seal (an unfinished run, or one written before fedrun sealed).
    pub fn mismatches(&self, dir: &Path) -> Vec<String> {
        let Some(seal) = self.seal else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let now = Seal::of(dir).unwrap_or_default();
        let files = [
            (seal.csv_bytes, seal.csv_crc32, now.csv_bytes, now.csv_crc32),
            (
                seal.spec_bytes,
                seal.spec_crc32,
                now.spec_bytes,
                now.spec_crc32,
            ),
        ];
        for (f, (b0, c0, b1, c1)) in SEALED.iter().zip(files) {
            if (b0, c0) != (b1, c1) {
                out.push(format!(
                    "{f} is not the file the run ended with ({b0} bytes, CRC-32 {c0:08x}; now {b1} bytes, CRC-32 {c1:08x}): edited, cut or replaced since"
                ));
            }
        }
        if out.is_empty() {
            out.extend(self.last_row_mismatch(dir));
        }
        out
    }

    /// The summary's values against `rounds.csv` (written in full precision): the round count
    /// and final values are its last row's, the best value its largest accuracy's.
    fn last_row_mismatch(&self, dir: &Path) -> Option<String> {
        let (_, rows) = crate::metrics::csv::read(&dir.join(SEALED[0])).ok()?;
        let num = |r: &Vec<String>, i: usize| r.get(i).and_then(|v| v.parse::<f64>().ok());
        let last = rows.last();
        let round = last
            .and_then(|r| r.first())
            .and_then(|v| v.parse::<usize>().ok());
        let (acc, loss) = (last.and_then(|r| num(r, 1)), last.and_then(|r| num(r, 2)));
        let best = rows.iter().filter_map(|r| num(r, 1)).reduce(f64::max);
        // serde_json may read a float back one unit in the last place off
        let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(1.0),
            (a, b) => a.is_none() && b.is_none(),
        };
        let rounds_agree = self.status != Status::Complete || round == Some(self.rounds);
        if rounds_agree
            && same(acc, self.final_test_acc)
            && same(loss, self.final_test_loss)
            && same(best, self.best_test_acc)
        {
            return None;
        }
        Some(format!(
            "summary.json (round {}, final test accuracy {:?}, loss {:?}, best {:?}) does not match rounds.csv (last round {round:?}, {acc:?}, {loss:?}, best {best:?}): a summary of another run, or edited",
            self.rounds, self.final_test_acc, self.final_test_loss, self.best_test_acc
        ))
    }

    pub fn line(&self) -> String {
        let acc = |v: Option<f64>| v.map(|a| format!("{a:.2}%")).unwrap_or_else(|| "-".into());
        format!(
            "{}: {} after {} rounds; final test acc {}, best {} (round {}); {:.1} s ({})",
            self.name,
            self.status,
            self.rounds,
            acc(self.final_test_acc),
            acc(self.best_test_acc),
            self.best_round
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".into()),
            self.elapsed_s,
            self.pace()
        )
    }

    /// The time a round took over the whole run, and the last call's pace where a resumed
    /// run's calls went at other paces (`seconds_per_round` is the last call's).
    fn pace(&self) -> String {
        let all = self.elapsed_s / self.rounds.max(1) as f64;
        let last = self.seconds_per_round;
        match (last - all).abs() > 0.05 * all.max(1e-9) {
            true => format!("{all:.2} s/round; its last call {last:.2} s/round"),
            false => format!("{all:.2} s/round"),
        }
    }
}

/// `s` seconds as a person reads a time left: "40 s", "12 min", "3.5 h", "2.1 days".
pub fn readable_duration(s: f64) -> String {
    match s {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5400.0 => format!("{:.0} min", s / 60.0),
        s if s < 172_800.0 => format!("{:.1} h", s / 3600.0),
        s => format!("{:.1} days", s / 86_400.0),
    }
}
