//! The algorithm registry: one file per algorithm, and this list. Adding an algorithm is a new
//! file implementing [`Algorithm`](super::algorithm::Algorithm) (with its own `Keys` table if
//! it has keys), one entry in [`REGISTRY`], and, for keys, one field in [`AlgorithmKeys`].

mod fedacg;
mod fedadam;
mod fedavg;
mod fedavgm;
mod fedcm;
mod feddc;
mod feddecorr;
mod feddyn;
mod fedexp;
mod fedlamb;
mod fedlc;
mod fedmlb;
mod fedntd;
mod fedprox;
mod mime;
mod moon;
mod scaffold;

pub use fedacg::FedAcg;
pub use fedadam::{AdaptiveServer, Rule};
pub use fedavg::FedAvg;
pub use fedavgm::FedAvgM;
pub use fedcm::FedCm;
pub use feddc::FedDc;
pub use feddecorr::FedDecorr;
pub use feddyn::FedDyn;
pub use fedexp::FedExP;
pub use fedlamb::{AdaptiveRule, FedLamb, Source, Step};
pub use fedlc::{FedLc, offsets as fedlc_offsets};
pub use fedmlb::FedMlb;
pub use fedntd::FedNtd;
pub use fedprox::FedProx;
pub use mime::MimeSgdm;
pub use moon::Moon;
pub use scaffold::Scaffold;

use serde::{Deserialize, Serialize};

use super::algorithm::{Algorithm, Setup};
use crate::error::{Error, Result};

/// Each algorithm's own table in the spec (`[fedprox]`, `[fedacg]`, …). The FedAdam table is
/// shared by the three adaptive servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AlgorithmKeys {
    pub fedprox: fedprox::Keys,
    pub fedavgm: fedavgm::Keys,
    pub fedadam: fedadam::Keys,
    pub fedexp: fedexp::Keys,
    pub fedacg: fedacg::Keys,
    pub feddyn: feddyn::Keys,
    pub feddc: feddc::Keys,
    pub fedcm: fedcm::Keys,
    pub fedlc: fedlc::Keys,
    pub fedntd: fedntd::Keys,
    pub feddecorr: feddecorr::Keys,
    pub moon: moon::Keys,
    pub fedmlb: fedmlb::Keys,
    pub fedlamb: fedlamb::Keys,
    pub mime: mime::Keys,
}

impl AlgorithmKeys {
    pub fn validate(&self) -> Result<()> {
        self.fedprox.validate()?;
        self.fedavgm.validate()?;
        self.fedadam.validate()?;
        self.fedexp.validate()?;
        self.fedacg.validate()?;
        self.feddyn.validate()?;
        self.feddc.validate()?;
        self.fedcm.validate()?;
        self.fedlc.validate()?;
        self.fedntd.validate()?;
        self.feddecorr.validate()?;
        self.moon.validate()?;
        self.fedmlb.validate()?;
        self.fedlamb.validate()?;
        self.mime.validate()
    }
}

/// Whether `algorithm` reads the algorithm table `table`: its own, or the one it shares (the
/// adaptive servers share `[fedadam]`; the Fed-LAMB family `[fedlamb]`, and Mime `[mime]` too).
fn reads(algorithm: &str, table: &str) -> bool {
    match algorithm {
        "fedadagrad" | "fedyogi" => table == "fedadam",
        "fedams" | "mimelamb" => table == "fedlamb",
        "mime" => table == "mime" || table == "fedlamb",
        own => table == own,
    }
}

/// Whether `table` is an algorithm's table that a run of `algorithm` does not read, so that its
/// keys cannot change the run (the analysis leaves them out of labels and grouping).
pub fn ignores_table(algorithm: &str, table: &str) -> bool {
    is_algorithm_table(table) && !reads(algorithm, table)
}

/// Whether `table` is one of the algorithms' tables (a field of [`AlgorithmKeys`]).
pub fn is_algorithm_table(table: &str) -> bool {
    static TABLES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        match toml::Value::try_from(AlgorithmKeys::default()).expect("keys") {
            toml::Value::Table(t) => t.keys().cloned().collect(),
            _ => unreachable!("a struct serialises to a table"),
        }
    });
    TABLES.iter().any(|t| t == table)
}

type Build = fn(&Setup) -> Result<Box<dyn Algorithm>>;

/// Every algorithm: its `fl.algorithm` name and how to build it.
pub const REGISTRY: &[(&str, Build)] = &[
    ("fedavg", |s| ok(FedAvg::new(s.spec.fl.global_lr))),
    ("fedprox", |s| {
        let k = &s.spec.algorithms.fedprox;
        ok(FedProx::new(k.mu, s.spec.fl.global_lr))
    }),
    ("scaffold", |s| {
        ok(Scaffold::new(s.dim, s.client_sizes, s.spec.fl.global_lr))
    }),
    ("fedexp", |s| ok(FedExP::new(s.spec, s.dim))),
    ("fedadam", |s| {
        ok(AdaptiveServer::new(Rule::Adam, s.spec, s.dim))
    }),
    ("fedadagrad", |s| {
        ok(AdaptiveServer::new(Rule::Adagrad, s.spec, s.dim))
    }),
    ("fedyogi", |s| {
        ok(AdaptiveServer::new(Rule::Yogi, s.spec, s.dim))
    }),
    ("fedavgm", |s| {
        let k = &s.spec.algorithms.fedavgm;
        ok(FedAvgM::new(k.momentum, s.spec.fl.global_lr, s.dim))
    }),
    ("fedacg", |s| ok(FedAcg::new(s))),
    ("feddyn", |s| ok(FedDyn::new(s))),
    ("feddc", |s| ok(FedDc::new(s))),
    ("fedcm", |s| ok(FedCm::new(s))),
    ("fedlc", |s| ok(FedLc::new(s))),
    ("fedntd", |s| ok(FedNtd::new(s))),
    ("feddecorr", |s| ok(FedDecorr::new(s))),
    ("moon", |s| ok(Moon::new(s))),
    ("fedmlb", |s| Ok(Box::new(FedMlb::new(s)?))),
    ("fedlamb", |s| {
        ok(FedLamb::new(Step::Lamb, Source::ClientV, s))
    }),
    ("fedams", |s| {
        ok(FedLamb::new(Step::Ams, Source::ClientV, s))
    }),
    ("mimelamb", |s| {
        ok(FedLamb::new(Step::Lamb, Source::FullGradient, s))
    }),
    ("mime", |s| match s.spec.algorithms.mime.base.as_str() {
        "sgdm" => ok(MimeSgdm::new(s)),
        _ => ok(FedLamb::new(Step::Ams, Source::FullGradient, s)),
    }),
];

fn ok(a: impl Algorithm + 'static) -> Result<Box<dyn Algorithm>> {
    Ok(Box::new(a))
}

/// The algorithm names, in registry order.
pub const NAMES: &[&str] = &{
    let mut out = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        out[i] = REGISTRY[i].0;
        i += 1;
    }
    out
};

pub fn check_name(name: &str) -> Result<()> {
    if NAMES.contains(&name) {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "key `fl.algorithm`: unknown algorithm \"{name}\"; expected one of: {}",
            NAMES.join(", ")
        )))
    }
}

/// Build the algorithm a spec names.
pub fn build(setup: &Setup) -> Result<Box<dyn Algorithm>> {
    let name = setup.spec.fl.algorithm.as_str();
    check_name(name)?;
    let (_, build) = REGISTRY.iter().find(|e| e.0 == name).expect("checked");
    build(setup)
}
