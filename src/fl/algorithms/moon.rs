//! MOON (§5, the official MOON code), μ = 1, τ = 0.5: loss
//! `CE + μ·CE([cos(z, z_glob), cos(z, z_prev)]/τ, target 0)`, z the representation the
//! classifier reads (the projection head's output with `model.projection = 256`, as MOON's
//! `ModelFedCon`), z_glob from the frozen broadcast model, z_prev from the client's own
//! previous local model (buffer size 1). Server as FedAvg (the official code weighs clients by
//! size: `fl.aggregation = "size"`). μ = 0 is FedAvg.
//!
//! A client that has not trained yet (`moon.new_client_prev`): in MOON's code each party holds
//! a network of its own from the start, drawn independently of the global one and of each other,
//! and the pool of previous models is empty in round 0 and all parties' networks after it. So
//! `own` (the default): in round 0 no client contrasts (the term of a single logit is 0: CE
//! alone), and from round 1 a client's first previous model is an initial network of its own,
//! drawn as θ_0 is from its own stream. `initial`: every such client uses θ_0 (fedrun's form
//! until 2026-12-06; in round 0 the global, previous and local models then coincide, and the
//! term is the constant μ·ln 2).
//!
//! The previous models are stored per client once it has one: one model-sized vector each.

use burn::tensor::Tensor;

use crate::config::validate::{non_negative, positive};
use crate::error::Result;
use crate::fl::losses::{cross_entropy, model_contrastive};
use crate::fl::per_client::{CLIENT_STATE, PerClient};
use crate::fl::plan::{ClientPlan, Frozen, LocalLoss, LossInput, Report};
use crate::fl::strategy::{
    ExtraWork, FromSetup, InitialModel, RoundInfo, RoundNeeds, Setup, State, Strategy,
};

crate::choice! {
    /// `moon.new_client_prev`, the previous model of a client that has not trained yet: `own`
    /// (MOON's code: an initial network of its own; none in round 0) | `initial` (θ_0).
    pub enum NewClientPrev { Own = "own", Initial = "initial" }
}

crate::key_table! {
    /// `[moon]`
    pub struct Keys in "moon" {
        pub mu: f64 = 1.0 => non_negative;
        pub temperature: f64 = 0.5 => positive;
        pub new_client_prev: NewClientPrev = NewClientPrev::Own;
    }
}

/// The init stream's sub-stream of client `i`'s own initial network (θ_0's is `&[]`).
fn own_stream(i: usize) -> [u64; 2] {
    [1, i as u64]
}

pub struct Moon {
    mu: f64,
    tau: f64,
    dim: usize,
    new_prev: NewClientPrev,
    draw: InitialModel,
    /// The model the round started from (the anchor of its clients).
    start: Vec<f32>,
    /// θ_0, the previous model of a client that has not trained yet (`initial`).
    initial: Option<Vec<f32>>,
    prev: PerClient,
}

impl LocalLoss for Moon {
    fn loss(&self, input: &LossInput) -> Tensor<1> {
        let ce = cross_entropy(input.out.logits.clone(), input.targets.clone(), input.kept);
        let con = model_contrastive(
            input.out.features.clone(),
            input.frozen[0].features.clone(),
            input.frozen[1].features.clone(),
            self.tau,
            input.kept,
        );
        ce + con.mul_scalar(self.mu as f32)
    }
}

impl FromSetup for Moon {
    const READS: &'static [&'static str] = CLIENT_STATE;

    const AVERAGES: bool = true;

    fn extra_work(spec: &crate::config::Spec) -> Option<ExtraWork> {
        let k: Keys = spec.keys().ok()?;
        (k.mu != 0.0).then(|| {
            ExtraWork::every_round(
                "besides, each local step of a client with a previous model runs its batch forward through two frozen models, the broadcast one and the client's previous one",
            )
        })
    }

    fn from_setup(s: &Setup) -> Result<Self> {
        let k: Keys = s.keys()?;
        Ok(Moon {
            mu: k.mu,
            tau: k.temperature,
            dim: s.dim,
            new_prev: k.new_client_prev,
            draw: s.initial_model.clone(),
            start: vec![0.0; s.dim],
            initial: None,
            prev: PerClient::new("prev", s.client_sizes.len(), s.dim),
        })
    }
}

impl Strategy for Moon {
    fn begin_round(&mut self, info: &RoundInfo, global: &[f32]) -> Result<RoundNeeds> {
        self.start.copy_from_slice(global);
        match self.new_prev {
            NewClientPrev::Initial if self.initial.is_none() => {
                self.initial = Some(global.to_vec());
            }
            // a client's own network joins the pool after round 0, as MOON's code keeps it
            NewClientPrev::Own if info.round > 0 && self.mu != 0.0 => {
                for &i in &info.sampled {
                    if !self.prev.has(i) {
                        self.prev.set(i, (self.draw)(&own_stream(i)))?;
                    }
                }
            }
            _ => {}
        }
        Ok(RoundNeeds::default())
    }

    fn plan(&self, client: usize) -> ClientPlan<'_> {
        // begin_round stored θ_0 (`initial`) or the round's new clients' own networks (`own`,
        // from round 1) before any client trains
        let prev = match self.new_prev {
            NewClientPrev::Own => self.prev.get(client),
            NewClientPrev::Initial => self.prev.get(client).or(self.initial.as_deref()),
        };
        match prev {
            Some(prev) if self.mu != 0.0 => ClientPlan {
                frozen: vec![Frozen::Anchor, Frozen::Params(prev)],
                loss: Some(self),
                ..ClientPlan::default()
            },
            _ => ClientPlan::default(),
        }
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        if self.mu == 0.0 {
            return Ok(());
        }
        let p = self.prev.get_mut(client)?;
        p.iter_mut()
            .zip(self.start.iter().zip(report.delta))
            .for_each(|(p, (s, d))| *p = s + d);
        Ok(())
    }

    /// θ_0 once drawn, and each client's previous model when the contrastive term is on.
    fn state(&mut self) -> State<'_> {
        let st = State::none().optional("initial", &mut self.initial, self.dim);
        match self.mu != 0.0 {
            true => st.store(&mut self.prev),
            false => st,
        }
    }
}
