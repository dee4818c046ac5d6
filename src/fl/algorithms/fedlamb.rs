//! Fed-LAMB, Fed-AMS, Mime-LAMB and Mime with AMSGrad (the Fed-LAMB paper's Algorithm 1 with
//! its typos corrected, no official code). Each client keeps its first moment `m_i` across its
//! rounds (0 until it first trains); its local `v` restarts from the broadcast `v̂`. The local
//! rule is a chain of links after the clip and weight decay (so FedNAR acts on g before the
//! moments): `optim::ScaleByAmsgrad`, then for Fed-LAMB `add_decayed_weights(λ)` and the
//! trust ratio (`optim::ScaleByTrustRatio`, a per-tensor learning rate), for Fed-AMS plain SGD:
//! - `m ← β1·m + (1−β1)·g`, `v ← β2·v + (1−β2)·g²`, `ψ = m/√v̂` (the frozen broadcast v̂; no
//!   bias correction; ε only through `v̂_0 = ε`);
//! - Fed-LAMB, per parameter tensor ℓ: `θˡ ← θˡ − α·φ(‖θˡ‖)·(ψˡ + λθˡ)/‖ψˡ + λθˡ‖` with
//!   φ(x) = x (`fedlamb.trust = false`: `θ ← θ − α·(ψ + λθ)`);
//! - Fed-AMS: `θ ← θ − α·ψ`.
//!
//! Server: `θ̄ = mean θ_i` (the Fed-LAMB configs aggregate uniformly) and, at a sync round,
//! `v̂ ← max(v̂, mean v_i)` over that round's clients. Mime-LAMB and Mime (§6.3) run the same
//! local loop, and each client also sends the gradient of its whole data at the round's
//! starting model; the server keeps its own `v` (0 at start): `∇f = mean ∇f_i`,
//! `v ← β2·v + (1−β2)·(∇f)²`, `v̂ ← max(v̂, v)`; the clients' local v is unused. Skip-sync (§6.2): a sync every
//! `fedlamb.sync_every` = Z rounds (rounds Z−1, 2Z−1, …); in between v̂ stays as broadcast, and
//! the clients send up neither their v nor (Mime) the full-data gradient, which they then do not
//! compute: the server's v is a running average over the sync rounds' gradients alone.
//!
//! A tensor whose norm (or whose update's norm) is 0: `fedlamb.zero_rule = "lamb"` takes the
//! step `α·u` (trust ratio 1, as LAMB implementations do), `"paper"` the literal φ(0) = 0 (the
//! tensor never moves: zero-initialised biases stay 0).

use crate::config::validate::{at_least_one, non_negative};
use crate::config::{Spec, Unread};
use crate::error::{Error, Result};
use crate::fl::per_client::PerClient;
use crate::fl::plan::{ClientPlan, Report, Rule};
use crate::fl::strategy::{
    ExtraWork, RoundInfo, RoundNeeds, ServerLog, ServerStep, Setup, State, Strategy, Traffic,
    average,
};
use crate::optim::{
    AddDecayedWeights, LocalLink, ScaleByAmsgrad, ScaleByTrustRatio, SecondMoment, global_norm,
};

crate::choice! {
    /// `fedlamb.zero_rule`, the step of a tensor whose norm (or whose update's norm) is 0:
    /// `lamb` (trust ratio 1) | `paper` (φ(0) = 0: no step).
    pub enum ZeroRule { Lamb = "lamb", Paper = "paper" }
}

crate::key_table! {
    /// `[fedlamb]`, read by `fedlamb` and `fedams` (and the Mime variants' local rule).
    pub struct Keys in "fedlamb" {
        pub beta1: f64 = 0.9 => non_negative;
        pub beta2: f64 = 0.999 => non_negative;
        /// ε: the initial v̂ (elementwise). The paper gives no value.
        pub eps: f64 = 1e-8 => non_negative;
        /// λ: LAMB's decoupled weight decay inside the trust-ratio normalisation.
        pub lambda: f64 = 0.0 => non_negative;
        /// Scale each tensor's step by its trust ratio φ(‖θ‖)/‖u‖ (false: a plain step α·u).
        pub trust: bool = true;
        pub zero_rule: ZeroRule = ZeroRule::Lamb;
        /// Skip-sync: update and broadcast v̂ every this many rounds.
        pub sync_every: usize = 1 => at_least_one;
    }
}

/// How a step turns ψ into a parameter update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Per-tensor trust ratio (LAMB).
    Lamb,
    /// `θ ← θ − α·ψ` (AMSGrad with the shared v̂).
    Ams,
}

/// Where v̂'s updates come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Source {
    /// The clients' local second moments (Fed-LAMB, Fed-AMS).
    ClientV,
    /// The server's own v of the mean full-data gradient (Mime-LAMB, Mime).
    FullGradient,
}

/// The local rule of a client that starts from the first moment `m` and the broadcast `vhat`:
/// AMSGrad's moments, then for the LAMB step `add_decayed_weights(λ)` and the trust ratio.
pub fn rule(
    step: Step,
    keys: &Keys,
    tensors: &[std::ops::Range<usize>],
    m: Vec<f32>,
    vhat: &[f32],
) -> Rule {
    let mut links: Vec<Box<dyn LocalLink>> = vec![Box::new(ScaleByAmsgrad::new(
        keys.beta1, keys.beta2, m, vhat,
    ))];
    if step == Step::Lamb {
        links.push(Box::new(AddDecayedWeights(keys.lambda as f32)));
        if keys.trust {
            let on_zero = match keys.zero_rule {
                ZeroRule::Lamb => 1.0,
                ZeroRule::Paper => 0.0,
            };
            links.push(Box::new(ScaleByTrustRatio {
                tensors: tensors.to_vec(),
                on_zero,
            }));
        }
    }
    Rule { links }
}

pub struct FedLamb {
    step: Step,
    source: Source,
    /// v̂, and for Mime the server's v of the mean full-data gradient.
    second: SecondMoment,
    keys: Keys,
    dim: usize,
    tensors: Vec<std::ops::Range<usize>>,
    mi: PerClient,
    /// Σ v_i of the round's clients so far, and how many.
    sum_v: Vec<f64>,
    n_v: usize,
    /// The current round (from `begin_round`), for whether it syncs v̂.
    round: usize,
}

impl FedLamb {
    pub fn new(step: Step, source: Source, s: &Setup) -> Result<Self> {
        let keys: Keys = s.keys()?;
        Ok(FedLamb {
            step,
            source,
            second: SecondMoment::new(keys.beta2, keys.eps, s.dim),
            dim: s.dim,
            tensors: s.tensors.to_vec(),
            mi: PerClient::new("m", s.client_sizes.len(), s.dim),
            sum_v: vec![0.0; s.dim],
            n_v: 0,
            round: 0,
            keys,
        })
    }

    /// Whether round `round` updates and broadcasts v̂ (rounds Z−1, 2Z−1, …).
    fn syncs(&self, round: usize) -> bool {
        (round + 1).is_multiple_of(self.keys.sync_every)
    }

    /// `v̂ ← max(v̂, mean v_i)`, or with the server's own v of the mean full-data gradient
    /// (in f64, then stored as f32).
    fn sync(&mut self) {
        let n = self.n_v as f64;
        let mean = self.sum_v.iter().map(|s| s / n);
        match self.source {
            Source::ClientV => self.second.raise(mean.map(|m| m as f32)),
            Source::FullGradient => self.second.step(mean),
        }
    }
}

/// `[fedlamb]` keys of the trust ratio that an AMS step (Fed-AMS, the Fed-LAMB paper's Mime)
/// leaves unread, each with `why`.
pub fn trust_keys_unread(why: &str) -> Vec<Unread> {
    ["fedlamb.lambda", "fedlamb.trust", "fedlamb.zero_rule"]
        .into_iter()
        .map(|k| Unread::new(k, why))
        .collect()
}

/// Fed-LAMB and Mime-LAMB: without the trust ratio, `fedlamb.zero_rule` (its rule for a zero
/// norm) is not read.
pub fn unread_lamb(spec: &Spec) -> Vec<Unread> {
    match spec.keys::<Keys>() {
        Ok(k) if !k.trust => vec![Unread::new(
            "fedlamb.zero_rule",
            "because `fedlamb.trust = false` (no trust ratio, so no rule for a zero norm)",
        )],
        _ => Vec::new(),
    }
}

/// Fed-AMS takes a plain AMSGrad step: none of the trust ratio's keys is read.
pub fn unread_ams(_spec: &Spec) -> Vec<Unread> {
    trust_keys_unread("by `fl.algorithm = \"fedams\"` (a plain AMSGrad step: no trust ratio)")
}

/// What Mime-LAMB and the Fed-LAMB paper's Mime do beyond their local steps, for `fedrun
/// check`: each sampled client's full-data gradient, at the sync rounds alone.
pub fn full_gradient_work(spec: &Spec) -> Option<ExtraWork> {
    let z = spec.keys::<Keys>().map_or(1, |k| k.sync_every);
    let when = match z {
        1 => "every round".to_string(),
        z => format!("in one round of every {z} (the sync rounds of `fedlamb.sync_every`)"),
    };
    Some(ExtraWork {
        line: format!(
            "besides, {when} each sampled client takes the gradient of all its samples at the model it starts from: one more forward and backward pass over its data"
        ),
        every: z,
    })
}

/// Fed-LAMB.
pub fn lamb(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(FedLamb::new(Step::Lamb, Source::ClientV, s)?))
}

/// Fed-AMS.
pub fn ams(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(FedLamb::new(Step::Ams, Source::ClientV, s)?))
}

/// Mime-LAMB.
pub fn mimelamb(s: &Setup) -> Result<Box<dyn Strategy>> {
    Ok(Box::new(FedLamb::new(Step::Lamb, Source::FullGradient, s)?))
}

impl Strategy for FedLamb {
    fn begin_round(&mut self, info: &RoundInfo, _global: &[f32]) -> Result<RoundNeeds> {
        self.round = info.round;
        Ok(RoundNeeds::default())
    }

    fn plan(&self, client: usize) -> ClientPlan<'_> {
        let m = self
            .mi
            .get(client)
            .map_or_else(|| vec![0.0; self.dim], <[f32]>::to_vec);
        ClientPlan {
            rule: rule(self.step, &self.keys, &self.tensors, m, self.second.vhat()),
            full_gradient: self.source == Source::FullGradient && self.syncs(self.round),
            ..ClientPlan::default()
        }
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        let missing = |what: &str| Error::Run(format!("client {client} sent no {what}"));
        let moments = report.uplink.moments.ok_or_else(|| missing("moments"))?;
        self.mi.set(client, moments.m)?;
        if !self.syncs(self.round) {
            return Ok(());
        }
        let v = match self.source {
            Source::ClientV => moments.v,
            Source::FullGradient => report
                .uplink
                .full_gradient
                .ok_or_else(|| missing("full-data gradient"))?,
        };
        self.sum_v
            .iter_mut()
            .zip(&v)
            .for_each(|(s, v)| *s += *v as f64);
        self.n_v += 1;
        Ok(())
    }

    /// v̂ down every round; up, at a sync round, v_i (Fed-LAMB, Fed-AMS) or the full-data
    /// gradient (Mime-LAMB, Mime).
    fn traffic(&self, info: &RoundInfo) -> Traffic {
        Traffic {
            down: 1,
            up: usize::from(self.syncs(info.round)),
        }
    }

    /// `θ ← θ + η_g·Δ̄`; at a sync round, v̂ from the round's clients. Not a chain on Δ̄: v̂
    /// syncs from the clients' v_i (or the full-data gradient), which no link sees.
    fn server_update(&mut self, s: ServerStep) -> ServerLog {
        let ServerStep { info, global, agg } = s;
        let log = average(info, global, agg);
        if self.syncs(info.round) && self.n_v > 0 {
            self.sync();
        }
        self.sum_v.fill(0.0);
        self.n_v = 0;
        ServerLog {
            state_norm: Some(global_norm(self.second.vhat())),
            at_floor: Some(self.second.at_floor()),
            ..log
        }
    }

    /// v̂ (and Mime's server v), and each client's first moment.
    fn state(&mut self) -> State<'_> {
        let (v, vhat) = self.second.vectors();
        let st = State::none().vector("vhat", vhat);
        let st = match self.source {
            Source::FullGradient => st.vector("server_v", v),
            Source::ClientV => st,
        };
        st.store(&mut self.mi)
    }
}
