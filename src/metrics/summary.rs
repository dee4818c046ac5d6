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

    pub fn line(&self) -> String {
        let acc = |v: Option<f64>| v.map(|a| format!("{a:.2}%")).unwrap_or_else(|| "-".into());
        format!(
            "{}: {} after {} rounds; final test acc {}, best {} (round {}); {:.1} s ({:.2} s/round)",
            self.name,
            self.status,
            self.rounds,
            acc(self.final_test_acc),
            acc(self.best_test_acc),
            self.best_round
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".into()),
            self.elapsed_s,
            self.seconds_per_round
        )
    }
}
