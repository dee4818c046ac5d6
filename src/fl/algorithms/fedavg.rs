//! FedAvg: local SGD; server `x ← x + η_g·Δ̄`. Every hook is the [`Strategy`] default.

use crate::error::Result;
use crate::fl::strategy::{FromSetup, Setup, Strategy};

pub struct FedAvg;

impl FromSetup for FedAvg {
    const AVERAGES: bool = true;

    fn from_setup(_s: &Setup) -> Result<Self> {
        Ok(FedAvg)
    }
}

impl Strategy for FedAvg {}
