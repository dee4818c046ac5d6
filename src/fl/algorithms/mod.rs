//! The algorithm registry: one file per algorithm, and this list. Adding an algorithm is a new
//! file implementing [`Strategy`](super::strategy::Strategy) (with its own `Keys` table if
//! it has keys, declared with `key_table!`), its `mod` line, and one line in [`REGISTRY`]
//! that names it, the tables it reads and how to build it.

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
pub mod mime_frozen;
pub mod moon;
pub mod scaffold;

use super::acg::Acg;
use super::per_client::CLIENT_STATE;
use super::strategy::{ExtraWork, FromSetup, Setup, Strategy};
use crate::config::{Alias, KeyTable, Spec, Unread};
use crate::error::Result;

type Build = fn(&Setup) -> Result<Box<dyn Strategy>>;

/// One algorithm: its `fl.algorithm` name, the key tables it reads, the keys of the five
/// sections it reads besides those every run reads (FedExP's `local.lr_decay`), and how to
/// build it.
pub struct Entry {
    pub name: &'static str,
    pub tables: &'static [&'static dyn KeyTable],
    pub reads: &'static [&'static str],
    /// What it needs of the rest of the spec (FedMLB: ResNet-18), checked before anything loads.
    pub check: fn(&Spec) -> Result<()>,
    pub build: Build,
    /// Its server step is plain averaging of the global model it broadcasts, so `fl.acg` may
    /// wrap it.
    pub averages: bool,
    /// The keys of its own tables that a setting of the spec leaves unread, with why (Fed-AMS
    /// reads no trust-ratio key; `mime.base` picks which of `[mime]` and `[fedlamb]` are read).
    pub unread: fn(&Spec) -> Vec<Unread>,
    /// The work its rounds do beyond plain local steps, for `fedrun check` (Mime's full-data
    /// gradients).
    pub extra_work: fn(&Spec) -> Option<ExtraWork>,
}

impl Entry {
    /// The same line, with the keys of its tables that a spec leaves unread.
    const fn leaving(self, unread: fn(&Spec) -> Vec<Unread>) -> Entry {
        Entry { unread, ..self }
    }

    /// The same line, with the work its rounds do beyond plain local steps.
    const fn costing(self, extra_work: fn(&Spec) -> Option<ExtraWork>) -> Entry {
        Entry { extra_work, ..self }
    }

    /// The same line, reading `keys` of the five sections besides the common ones.
    const fn reading(self, keys: &'static [&'static str]) -> Entry {
        Entry {
            reads: keys,
            ..self
        }
    }
}

/// Every algorithm, in the order `fedrun check` lists them.
pub const REGISTRY: &[Entry] = &[
    alg::<fedavg::FedAvg>("fedavg", &[]),
    alg::<fedprox::FedProx>("fedprox", &[fedprox::KEYS]),
    alg::<scaffold::Scaffold>("scaffold", &[]),
    alg::<fedexp::FedExP>("fedexp", &[fedexp::KEYS]),
    with("fedadam", &[fedadam::KEYS], fedadam::adam).reading(fedadam::READS),
    with("fedadagrad", &[fedadam::KEYS], fedadam::adagrad).reading(fedadam::READS),
    with("fedyogi", &[fedadam::KEYS], fedadam::yogi).reading(fedadam::READS),
    alg::<fedavgm::FedAvgM>("fedavgm", &[fedavgm::KEYS]),
    with("fedacg", &[fedacg::KEYS], fedacg::build),
    alg::<feddyn::FedDyn>("feddyn", &[feddyn::KEYS]),
    alg::<feddc::FedDc>("feddc", &[feddc::KEYS]),
    alg::<fedcm::FedCm>("fedcm", &[fedcm::KEYS]),
    alg::<fedlc::FedLc>("fedlc", &[fedlc::KEYS]),
    alg::<fedntd::FedNtd>("fedntd", &[fedntd::KEYS]),
    alg::<feddecorr::FedDecorr>("feddecorr", &[feddecorr::KEYS]),
    alg::<moon::Moon>("moon", &[moon::KEYS]),
    alg::<fedmlb::FedMlb>("fedmlb", &[fedmlb::KEYS]),
    with("fedlamb", &[fedlamb::KEYS], fedlamb::lamb)
        .reading(CLIENT_STATE)
        .leaving(fedlamb::unread_lamb),
    with("fedams", &[fedlamb::KEYS], fedlamb::ams)
        .reading(CLIENT_STATE)
        .leaving(fedlamb::unread_ams),
    with("mimelamb", &[fedlamb::KEYS], fedlamb::mimelamb)
        .reading(CLIENT_STATE)
        .leaving(fedlamb::unread_lamb)
        .costing(fedlamb::full_gradient_work),
    with("mime", &[mime::KEYS, fedlamb::KEYS], mime::build)
        .reading(CLIENT_STATE)
        .leaving(mime::unread)
        .costing(mime::extra_work),
];

/// Other names of algorithms: the papers' names for a variant chosen by a key.
pub const ALIASES: &[Alias] = &[
    Alias {
        name: "fedsgd",
        algorithm: "fedavg",
        sets: &[],
    },
    Alias {
        name: "adpfed",
        algorithm: "fedadam",
        sets: &[("fedadam.variant", "\"adpfed\"")],
    },
    Alias {
        name: "mimelite",
        algorithm: "mime",
        sets: &[("mime.base", "\"sgdm\""), ("mime.lite", "true")],
    },
];

/// A registry line: the algorithm `A` under `name`, reading `tables`.
const fn alg<A: FromSetup>(name: &'static str, tables: &'static [&'static dyn KeyTable]) -> Entry {
    Entry {
        check: A::check,
        averages: A::AVERAGES,
        unread: A::unread,
        extra_work: A::extra_work,
        ..with(name, tables, build_boxed::<A>).reading(A::READS)
    }
}

/// A registry line with its own builder (the variants of one strategy type).
const fn with(name: &'static str, tables: &'static [&'static dyn KeyTable], build: Build) -> Entry {
    Entry {
        name,
        tables,
        reads: &[],
        check: |_| Ok(()),
        build,
        averages: false,
        unread: |_| Vec::new(),
        extra_work: |_| None,
    }
}

fn build_boxed<A: FromSetup>(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(A::from_setup(s)?))
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

/// The names of the tables `algorithm` reads.
pub fn tables_of(algorithm: &str) -> Vec<&'static str> {
    entry(algorithm).map_or(Vec::new(), |e| e.tables.iter().map(|t| t.name()).collect())
}

/// Whether `algorithm` reads `key` of the five sections beyond what every run reads.
pub fn reads_key(algorithm: &str, key: &str) -> bool {
    entry(algorithm).is_some_and(|e| e.reads.contains(&key))
}

/// The work the spec's algorithm does beyond plain local steps, if any.
pub fn extra_work(spec: &Spec) -> Option<ExtraWork> {
    entry(&spec.fl.algorithm).and_then(|e| (e.extra_work)(spec))
}

/// The keys of its own tables that the spec's algorithm leaves unread in this spec.
pub fn own_unread(spec: &Spec) -> Vec<Unread> {
    entry(&spec.fl.algorithm).map_or(Vec::new(), |e| (e.unread)(spec))
}

/// Whether `table` is one of the algorithms' tables.
pub fn is_algorithm_table(table: &str) -> bool {
    REGISTRY
        .iter()
        .flat_map(|e| e.tables)
        .any(|t| t.name() == table)
}

/// The spec's algorithm's check of the rest of the spec (part of the schema), and that
/// `fl.acg` wraps an algorithm whose server step is plain averaging.
pub fn check_spec(spec: &Spec) -> Result<()> {
    let Some(e) = entry(&spec.fl.algorithm) else {
        return Ok(());
    };
    if spec.fl.acg && !e.averages {
        let plain: Vec<&str> = REGISTRY
            .iter()
            .filter(|e| e.averages)
            .map(|e| e.name)
            .collect();
        return Err(crate::error::Error::Config(format!(
            "key `fl.acg`: \"{}\" has a server step of its own{}; ACG replaces plain averaging, so it composes with: {}",
            e.name,
            if e.name == "fedacg" {
                " (FedACG is ACG already, with `fedacg.lambda`)"
            } else {
                ""
            },
            plain.join(", ")
        )));
    }
    (e.check)(spec)
}

/// Build the algorithm a spec names.
pub fn build(setup: &Setup) -> Result<Box<dyn Strategy>> {
    let name = setup.spec.fl.algorithm.as_str();
    match entry(name) {
        Some(e) if setup.spec.fl.acg => {
            let inner = (e.build)(setup)?;
            let (lambda, eta) = (setup.spec.fl.acg_lambda, setup.spec.fl.global_lr);
            Ok(Box::new(Acg::new(inner, lambda, eta, setup.dim)))
        }
        Some(e) => (e.build)(setup),
        None => Err(crate::error::Error::Config(format!(
            "key `fl.algorithm`: unknown algorithm \"{name}\"; expected one of: {}",
            NAMES.join(", ")
        ))),
    }
}
