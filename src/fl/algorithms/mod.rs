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
mod fedlc;
mod fedntd;
mod fedprox;
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
pub use fedlc::{FedLc, offsets as fedlc_offsets};
pub use fedntd::FedNtd;
pub use fedprox::{FedProx, prox_grad};
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
        self.moon.validate()
    }
}

type Build = fn(&Setup) -> Box<dyn Algorithm>;

/// Every algorithm: its `fl.algorithm` name, the table its keys are in, and how to build it.
pub const REGISTRY: &[(&str, &str, Build)] = &[
    ("fedavg", "", |s| Box::new(FedAvg::new(s.spec.fl.global_lr))),
    ("fedprox", "fedprox", |s| {
        Box::new(FedProx::new(
            s.spec.algorithms.fedprox.mu,
            s.spec.fl.global_lr,
        ))
    }),
    ("scaffold", "", |s| {
        Box::new(Scaffold::new(s.dim, s.client_sizes, s.spec.fl.global_lr))
    }),
    ("fedexp", "fedexp", |s| Box::new(FedExP::new(s.spec, s.dim))),
    ("fedadam", "fedadam", |s| {
        Box::new(AdaptiveServer::new(Rule::Adam, s.spec, s.dim))
    }),
    ("fedadagrad", "fedadam", |s| {
        Box::new(AdaptiveServer::new(Rule::Adagrad, s.spec, s.dim))
    }),
    ("fedyogi", "fedadam", |s| {
        Box::new(AdaptiveServer::new(Rule::Yogi, s.spec, s.dim))
    }),
    ("fedavgm", "fedavgm", |s| {
        Box::new(FedAvgM::new(
            s.spec.algorithms.fedavgm.momentum,
            s.spec.fl.global_lr,
            s.dim,
        ))
    }),
    ("fedacg", "fedacg", |s| Box::new(FedAcg::new(s))),
    ("feddyn", "feddyn", |s| Box::new(FedDyn::new(s))),
    ("feddc", "feddc", |s| Box::new(FedDc::new(s))),
    ("fedcm", "fedcm", |s| Box::new(FedCm::new(s))),
    ("fedlc", "fedlc", |s| Box::new(FedLc::new(s))),
    ("fedntd", "fedntd", |s| Box::new(FedNtd::new(s))),
    ("feddecorr", "feddecorr", |s| Box::new(FedDecorr::new(s))),
    ("moon", "moon", |s| Box::new(Moon::new(s))),
];

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
    let (_, _, build) = REGISTRY.iter().find(|e| e.0 == name).expect("checked");
    Ok(build(setup))
}
