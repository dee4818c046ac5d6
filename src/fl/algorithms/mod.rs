//! The algorithm registry: one file per algorithm, and this list. Adding an algorithm is a new
//! file implementing [`Strategy`](super::strategy::Strategy) (with its own `Keys` table if
//! it has keys, declared with `key_table!`) and one entry in [`REGISTRY`], which names the
//! tables it reads.

pub mod fedacg;
pub mod fedadam;
pub mod fedavg;
pub mod fedavgm;
pub mod fedcm;
pub mod feddc;
pub mod feddecorr;
pub mod feddyn;
pub mod fedexp;
pub mod fedlamb;
pub mod fedlc;
pub mod fedmlb;
pub mod fedntd;
pub mod fedprox;
pub mod mime;
pub mod moon;
pub mod scaffold;

pub use fedacg::FedAcg;
pub use fedadam::AdaptiveServer;
pub use fedavg::FedAvg;
pub use fedavgm::FedAvgM;
pub use fedcm::FedCm;
pub use feddc::FedDc;
pub use feddecorr::FedDecorr;
pub use feddyn::FedDyn;
pub use fedexp::FedExP;
pub use fedlamb::{FedLamb, Source, Step};
pub use fedlc::{FedLc, offsets as fedlc_offsets};
pub use fedmlb::FedMlb;
pub use fedntd::FedNtd;
pub use fedprox::FedProx;
pub use mime::MimeSgdm;
pub use moon::Moon;
pub use scaffold::Scaffold;

use super::strategy::{Setup, Strategy};
use crate::config::{KeyTable, table};
use crate::error::Result;
use crate::optim::AdaptiveRule;

type Build = fn(&Setup) -> Result<Box<dyn Strategy>>;

/// One algorithm: its `fl.algorithm` name, the key tables it reads, and how to build it.
pub struct Entry {
    pub name: &'static str,
    pub tables: &'static [&'static dyn KeyTable],
    pub build: Build,
}

const FEDPROX: &dyn KeyTable = table::<fedprox::Keys>();
const FEDAVGM: &dyn KeyTable = table::<fedavgm::Keys>();
const FEDADAM: &dyn KeyTable = table::<fedadam::Keys>();
const FEDEXP: &dyn KeyTable = table::<fedexp::Keys>();
const FEDACG: &dyn KeyTable = table::<fedacg::Keys>();
const FEDDYN: &dyn KeyTable = table::<feddyn::Keys>();
const FEDDC: &dyn KeyTable = table::<feddc::Keys>();
const FEDCM: &dyn KeyTable = table::<fedcm::Keys>();
const FEDLC: &dyn KeyTable = table::<fedlc::Keys>();
const FEDNTD: &dyn KeyTable = table::<fedntd::Keys>();
const FEDDECORR: &dyn KeyTable = table::<feddecorr::Keys>();
const MOON: &dyn KeyTable = table::<moon::Keys>();
const FEDMLB: &dyn KeyTable = table::<fedmlb::Keys>();
const FEDLAMB: &dyn KeyTable = table::<fedlamb::Keys>();
const MIME: &dyn KeyTable = table::<mime::Keys>();

/// Every algorithm, in the order `fedrun check` lists them.
pub const REGISTRY: &[Entry] = &[
    alg("fedavg", &[], |s| ok(FedAvg::new(s)?)),
    alg("fedprox", &[FEDPROX], |s| ok(FedProx::new(s)?)),
    alg("scaffold", &[], |s| ok(Scaffold::new(s)?)),
    alg("fedexp", &[FEDEXP], |s| ok(FedExP::new(s)?)),
    alg("fedadam", &[FEDADAM], |s| {
        ok(AdaptiveServer::new(AdaptiveRule::Adam, s)?)
    }),
    alg("fedadagrad", &[FEDADAM], |s| {
        ok(AdaptiveServer::new(AdaptiveRule::Adagrad, s)?)
    }),
    alg("fedyogi", &[FEDADAM], |s| {
        ok(AdaptiveServer::new(AdaptiveRule::Yogi, s)?)
    }),
    alg("fedavgm", &[FEDAVGM], |s| ok(FedAvgM::new(s)?)),
    alg("fedacg", &[FEDACG], |s| ok(FedAcg::new(s)?)),
    alg("feddyn", &[FEDDYN], |s| ok(FedDyn::new(s)?)),
    alg("feddc", &[FEDDC], |s| ok(FedDc::new(s)?)),
    alg("fedcm", &[FEDCM], |s| ok(FedCm::new(s)?)),
    alg("fedlc", &[FEDLC], |s| ok(FedLc::new(s)?)),
    alg("fedntd", &[FEDNTD], |s| ok(FedNtd::new(s)?)),
    alg("feddecorr", &[FEDDECORR], |s| ok(FedDecorr::new(s)?)),
    alg("moon", &[MOON], |s| ok(Moon::new(s)?)),
    alg("fedmlb", &[FEDMLB], |s| ok(FedMlb::new(s)?)),
    alg("fedlamb", &[FEDLAMB], |s| {
        ok(FedLamb::new(Step::Lamb, Source::ClientV, s)?)
    }),
    alg("fedams", &[FEDLAMB], |s| {
        ok(FedLamb::new(Step::Ams, Source::ClientV, s)?)
    }),
    alg("mimelamb", &[FEDLAMB], |s| {
        ok(FedLamb::new(Step::Lamb, Source::FullGradient, s)?)
    }),
    alg("mime", &[MIME, FEDLAMB], mime::build),
];

/// A registry line: the name, the tables it reads, how to build it.
const fn alg(name: &'static str, tables: &'static [&'static dyn KeyTable], build: Build) -> Entry {
    Entry {
        name,
        tables,
        build,
    }
}

fn ok(a: impl Strategy + 'static) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(a))
}

/// The algorithm names, in registry order.
pub const NAMES: &[&str] = &{
    let mut out = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        out[i] = REGISTRY[i].name;
        i += 1;
    }
    out
};

/// Tables printed before the others, in this order: the FedNAR family's, in the order their
/// `spec.toml` files have always listed them. Every other table follows in registry order.
const PRINTED_FIRST: [&str; 4] = ["fedprox", "fedavgm", "fedadam", "fedexp"];

/// Every algorithm's table, once, in the order `spec.toml` prints them.
pub fn tables() -> Vec<&'static dyn KeyTable> {
    let mut out: Vec<&'static dyn KeyTable> = Vec::new();
    for t in REGISTRY.iter().flat_map(|e| e.tables) {
        if !out.iter().any(|o| o.name() == t.name()) {
            out.push(*t);
        }
    }
    let rank = |t: &&dyn KeyTable| {
        PRINTED_FIRST
            .iter()
            .position(|n| *n == t.name())
            .unwrap_or(PRINTED_FIRST.len())
    };
    out.sort_by_key(rank);
    out
}

fn entry(algorithm: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == algorithm)
}

/// Whether `table` is an algorithm's table that a run of `algorithm` does not read, so that its
/// keys cannot change the run (the analysis leaves them out of labels and grouping).
pub fn ignores_table(algorithm: &str, table: &str) -> bool {
    is_algorithm_table(table)
        && !entry(algorithm).is_some_and(|e| e.tables.iter().any(|t| t.name() == table))
}

/// Whether `table` is one of the algorithms' tables.
pub fn is_algorithm_table(table: &str) -> bool {
    REGISTRY
        .iter()
        .flat_map(|e| e.tables)
        .any(|t| t.name() == table)
}

/// Build the algorithm a spec names.
pub fn build(setup: &Setup) -> Result<Box<dyn Strategy>> {
    let name = setup.spec.fl.algorithm.as_str();
    match entry(name) {
        Some(e) => (e.build)(setup),
        None => Err(crate::error::Error::Config(format!(
            "key `fl.algorithm`: unknown algorithm \"{name}\"; expected one of: {}",
            NAMES.join(", ")
        ))),
    }
}
