//! The algorithm registry: one file per algorithm, and this list. Adding an algorithm is a new
//! file implementing [`Algorithm`](super::algorithm::Algorithm) and one line here.

mod fedadam;
mod fedavg;
mod fedavgm;
mod fedexp;
mod fedprox;
mod scaffold;

pub use fedadam::{AdaptiveServer, Rule};
pub use fedavg::FedAvg;
pub use fedavgm::FedAvgM;
pub use fedexp::FedExP;
pub use fedprox::FedProx;
pub use scaffold::Scaffold;

use super::algorithm::Algorithm;
use crate::config::Spec;
use crate::error::{Error, Result};

pub const NAMES: &[&str] = &[
    "fedavg",
    "fedprox",
    "scaffold",
    "fedexp",
    "fedadam",
    "fedadagrad",
    "fedyogi",
    "fedavgm",
];

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

/// Build the algorithm a spec names, for a model of `dim` parameters and clients of the given
/// training-set sizes.
pub fn build(spec: &Spec, dim: usize, client_sizes: &[usize]) -> Result<Box<dyn Algorithm>> {
    let fl = &spec.fl;
    Ok(match fl.algorithm.as_str() {
        "fedavg" => Box::new(FedAvg::new(fl.global_lr)),
        "fedprox" => Box::new(FedProx::new(fl.prox_mu, fl.global_lr)),
        "scaffold" => Box::new(Scaffold::new(dim, client_sizes, fl.global_lr)),
        "fedexp" => Box::new(FedExP::new(spec, dim)),
        "fedadam" => Box::new(AdaptiveServer::new(Rule::Adam, spec, dim)),
        "fedadagrad" => Box::new(AdaptiveServer::new(Rule::Adagrad, spec, dim)),
        "fedyogi" => Box::new(AdaptiveServer::new(Rule::Yogi, spec, dim)),
        "fedavgm" => Box::new(FedAvgM::new(fl.server_momentum, fl.global_lr, dim)),
        other => {
            check_name(other)?;
            unreachable!()
        }
    })
}
