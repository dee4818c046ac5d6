//! Mime's keys, and which Mime a spec runs: `fl.algorithm = "mime"` runs the Fed-LAMB paper's
//! Mime (AMSGrad local steps with the server's v̂ of full-data gradients, `fedlamb.rs`) by
//! default; `mime.base = "sgdm"` and `"frozen-amsgrad"` run the original Mime with the server's
//! optimizer state frozen during local steps (`mime_frozen.rs`).

use super::fedlamb::{FedLamb, Keys as FedLambKeys, Source, Step, trust_keys_unread};
use super::mime_frozen::MimeFrozen;
use crate::config::validate::unit_open;
use crate::config::{Spec, Unread};
use crate::error::Result;
use crate::fl::strategy::{ExtraWork, Setup, Strategy};

crate::choice! {
    /// `mime.base`, the base optimizer: `amsgrad` (the Fed-LAMB paper's Mime: AMSGrad local
    /// steps with the server's v̂, keys in `[fedlamb]`) | `sgdm` (the original Mime with SGD and
    /// the server's momentum frozen) | `frozen-amsgrad` (the original Mime with AMSGrad: the
    /// server's m and v̂ frozen, keys in `[fedlamb]`).
    pub enum Base { Amsgrad = "amsgrad", Sgdm = "sgdm", FrozenAmsgrad = "frozen-amsgrad" }
}

crate::key_table! {
    /// `[mime]`
    pub struct Keys in "mime" {
        pub base: Base = Base::Amsgrad;
        /// β of `sgdm`.
        pub momentum: f64 = 0.9 => unit_open;
        /// `sgdm`, `frozen-amsgrad`: MimeLite (true) or Mime with the SVRG correction (false).
        pub lite: bool = true;
    }
}

/// The `[mime]` and `[fedlamb]` keys that `mime.base` leaves unread: `amsgrad` reads neither
/// `mime.momentum` nor `mime.lite` nor the trust ratio's keys; `sgdm` reads no `[fedlamb]` key;
/// `frozen-amsgrad` reads `mime.lite` and `[fedlamb]`'s β1, β2 and ε only.
pub fn unread(spec: &Spec) -> Vec<Unread> {
    let Ok(k) = spec.keys::<Keys>() else {
        return Vec::new();
    };
    let why = format!("because `mime.base = \"{}\"`", k.base);
    let named = |keys: &[&str]| keys.iter().map(|&key| Unread::new(key, &why)).collect();
    match k.base {
        Base::Amsgrad => {
            let mut out: Vec<Unread> = named(&["mime.momentum", "mime.lite"]);
            out.extend(trust_keys_unread(&why));
            out
        }
        Base::Sgdm => super::fedlamb::KEYS
            .defaults()
            .keys()
            .map(|key| Unread::new(format!("fedlamb.{key}"), &why))
            .collect(),
        Base::FrozenAmsgrad => {
            let mut out: Vec<Unread> = named(&["mime.momentum", "fedlamb.sync_every"]);
            out.extend(trust_keys_unread(&why));
            out
        }
    }
}

/// What Mime does beyond its local steps, for `fedrun check`: the full-data gradients (at the
/// sync rounds for the Fed-LAMB paper's Mime, every round for the original one), and Mime's
/// correction's second gradient each step.
pub fn extra_work(spec: &Spec) -> Option<ExtraWork> {
    let k = spec.keys::<Keys>().ok()?;
    if k.base == Base::Amsgrad {
        return super::fedlamb::full_gradient_work(spec);
    }
    let correction = if k.lite {
        ""
    } else {
        ", and each local step a second gradient of its batch at that model (Mime's correction g_i(y) − g_i(x) + c)"
    };
    Some(ExtraWork::every_round(format!(
        "besides, every round each sampled client takes the gradient of all its samples at the broadcast model before any client trains{correction}"
    )))
}

/// `fl.algorithm = "mime"`: with `mime.base = "amsgrad"` the Fed-LAMB paper's Mime (the
/// Fed-LAMB loop with the AMS step and the server's v̂ of full-data gradients), with `"sgdm"` or
/// `"frozen-amsgrad"` the original Mime ([`MimeFrozen`]).
pub fn build(s: &Setup) -> Result<Box<dyn Strategy>> {
    let k: Keys = s.keys()?;
    Ok(match k.base {
        Base::Sgdm => Box::new(MimeFrozen::new(k.lite, k.momentum, None, s.dim)),
        Base::FrozenAmsgrad => {
            let f: FedLambKeys = s.keys()?;
            let second = Some((f.beta2, f.eps));
            Box::new(MimeFrozen::new(k.lite, f.beta1, second, s.dim))
        }
        Base::Amsgrad => Box::new(FedLamb::new(Step::Ams, Source::FullGradient, s)?),
    })
}
