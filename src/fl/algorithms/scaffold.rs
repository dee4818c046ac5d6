//! SCAFFOLD, option II, as in the FedNAR code:
//! - every client's control variate c_i starts at 0 and persists across rounds;
//! - at round start `c = Σ_j p_j c_j` over all N clients (p_j = n_j / Σ n; with clients that
//!   come and go, over the federation's members, Σ n scaled to its size);
//! - the local gradient becomes `g + c − c_i`, clipped with g;
//! - after K local steps at rate l_t: `c_i ← c_i − c − Δ_i/(K·l_t)`;
//! - server as FedAvg.

use crate::error::Result;
use crate::fl::per_client::{CLIENT_STATE, PerClient};
use crate::fl::plan::{ClientPlan, Report};
use crate::fl::strategy::{FromSetup, RoundInfo, RoundNeeds, Setup, State, Strategy, Traffic};
use crate::fl::term::Term;
use crate::optim::global_norm;

pub struct Scaffold {
    dim: usize,
    weights: Vec<f64>,
    /// c_i, allocated when client i first trains (None = 0).
    ci: PerClient,
    c: Vec<f32>,
}

impl Scaffold {
    pub fn control_variate(&self, client: usize) -> Option<&[f32]> {
        self.ci.get(client)
    }

    pub fn server_variate(&self) -> &[f32] {
        &self.c
    }
}

impl FromSetup for Scaffold {
    const READS: &'static [&'static str] = CLIENT_STATE;
    /// Its server step is FedAvg's (it logs ‖c‖ through `state_norm`), so ACG composes with it.
    const AVERAGES: bool = true;

    fn from_setup(s: &Setup) -> Result<Self> {
        // p_j = n_j / Σ n over the federation: the pool's total scaled to the federation's size
        // (×1 when every client is in it), so that c stays the members' weighted mean
        let total = s.client_sizes.iter().sum::<usize>() as f64;
        let total = total * (s.federation as f64 / s.client_sizes.len() as f64);
        Ok(Scaffold {
            dim: s.dim,
            weights: s.client_sizes.iter().map(|&n| n as f64 / total).collect(),
            ci: PerClient::new("c", s.client_sizes.len(), s.dim),
            c: vec![0.0; s.dim],
        })
    }
}

impl Strategy for Scaffold {
    fn begin_round(&mut self, _info: &RoundInfo, _global: &[f32]) -> Result<RoundNeeds> {
        let mut acc = vec![0f64; self.dim];
        let weights = &self.weights;
        self.ci.for_each(|j, ci| {
            let p = weights[j];
            acc.iter_mut()
                .zip(ci)
                .for_each(|(a, c)| *a += p * *c as f64);
        })?;
        self.c
            .iter_mut()
            .zip(&acc)
            .for_each(|(c, a)| *c = *a as f32);
        Ok(RoundNeeds::default())
    }

    fn plan(&self, client: usize) -> ClientPlan<'_> {
        // g ← g + c − c_i
        let term = Term::none()
            .shift(1.0, &self.c)
            .shift_if(-1.0, self.ci.get(client));
        ClientPlan {
            term,
            ..ClientPlan::default()
        }
    }

    fn receive(&mut self, client: usize, report: Report) -> Result<()> {
        let scale = (1.0 / (report.info.steps as f64 * report.info.lr)) as f32;
        let ci = self.ci.get_mut(client)?;
        ci.iter_mut()
            .zip(self.c.iter().zip(report.delta))
            .for_each(|(ci, (c, d))| *ci = *ci - c - d * scale);
        Ok(())
    }

    /// c down, Δc_i up.
    fn traffic(&self, _info: &RoundInfo) -> Traffic {
        Traffic { down: 1, up: 1 }
    }

    /// ‖c‖ in the log.
    fn state_norm(&self) -> Option<f64> {
        Some(global_norm(&self.c))
    }

    fn state(&mut self) -> State<'_> {
        State::none().vector("c", &mut self.c).store(&mut self.ci)
    }
}
