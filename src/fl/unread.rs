//! Which `[local]` keys and algorithm tables a spec's run reads (the others are named, with
//! why): the tables the run's algorithm does not read, the keys of its own tables that its
//! settings leave unread (each algorithm's `unread` hook), the schedule's keys, and `local.steps`
//! when `local.epochs` sets the steps, and the `[fl]` keys of options left off.

use super::algorithms::{own_unread, reads_key, tables, tables_of};
use crate::config::{Backend, LrSchedule, Spec, Unread};

/// The algorithm tables a spec's run does not read, key by key.
fn tables_unread(s: &Spec) -> Vec<Unread> {
    let alg = s.fl.algorithm.as_str();
    let own = tables_of(alg);
    let reads = match own.as_slice() {
        [] => "no table".to_string(),
        t => t
            .iter()
            .map(|n| format!("`[{n}]`"))
            .collect::<Vec<_>>()
            .join(" and "),
    };
    tables()
        .into_iter()
        .filter(|t| !own.contains(&t.name()))
        .flat_map(|t| {
            let why = format!("by `fl.algorithm = \"{alg}\"` (it reads {reads})");
            t.defaults()
                .keys()
                .map(|k| Unread::new(format!("{}.{k}", t.name()), why.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The `[local]` keys a spec's run does not read.
fn local_unread(s: &Spec) -> Vec<Unread> {
    let l = &s.local;
    let mut out = Vec::new();
    let schedule = format!("because `local.lr_schedule = \"{}\"`", l.lr_schedule);
    if l.lr_schedule == LrSchedule::Step {
        if !reads_key(&s.fl.algorithm, "local.lr_decay") {
            let why =
                format!("{schedule} (it uses `local.lr_milestones` and `local.lr_step_factor`)");
            out.push(Unread::new("local.lr_decay", why));
        }
    } else {
        for k in ["local.lr_milestones", "local.lr_step_factor"] {
            out.push(Unread::new(k, format!("{schedule} (only `step` reads it)")));
        }
    }
    if l.epochs > 0 {
        let why = format!(
            "because `local.epochs = {}` sets the number of steps; set `local.epochs = 0` to run `local.steps` steps",
            l.epochs
        );
        out.push(Unread::new("local.steps", why));
    }
    // FedNAR changes only the order of the clip and the decay: without one of them the two
    // orders are the same step
    let order = if l.max_norm == 0.0 {
        Some(
            "because `local.max_norm = 0` (no clip: decay then clip, FedNAR's order, is the baseline's step)",
        )
    } else if l.weight_decay == 0.0 {
        Some("because `local.weight_decay = 0` (no decay: FedNAR's order is the baseline's step)")
    } else {
        None
    };
    if let Some(why) = order {
        out.push(Unread::new("local.nar", why));
    }
    out
}

/// The algorithm tables, `[local]`, `[fl]` and `[run]` keys a spec's run does not read.
pub fn unread_keys(s: &Spec) -> Vec<Unread> {
    let mut out = tables_unread(s);
    out.extend(own_unread(s));
    out.extend(local_unread(s));
    if s.fl.uplink_levels == 0 {
        out.push(Unread::new(
            "fl.uplink_scope",
            "because `fl.uplink_levels = 0` (the update is sent unquantized)",
        ));
    }
    out.extend(fl_unread(s));
    if s.run.backend != Backend::Cuda {
        let why = format!(
            "because `run.backend = \"{}\"` (TF32 is CUDA's)",
            s.run.backend
        );
        out.push(Unread::new("run.tf32", why.clone()));
        out.push(Unread::new("run.tf32_conv", why));
    }
    if s.run.backend == Backend::Flex {
        let why = "because `run.backend = \"flex\"` (flex gathers its batches in its own memory)";
        out.push(Unread::new("run.device_data_mb", why));
    }
    if s.run.cohort != crate::config::COHORT_AUTO {
        let why = "because `run.cohort` is a count, not \"auto\"";
        out.push(Unread::new("run.cohort_mb", why));
    }
    if !reads_key(&s.fl.algorithm, "run.client_state_mb") {
        let why = format!(
            "by `fl.algorithm = \"{}\"` (it keeps no per-client state)",
            s.fl.algorithm
        );
        out.push(Unread::new("run.client_state_mb", why));
    }
    out
}

/// The `[fl]` keys of ACG and of the dynamic client set that a spec's run does not read.
fn fl_unread(s: &Spec) -> Vec<Unread> {
    let fl = &s.fl;
    let mut out = Vec::new();
    if !fl.acg {
        out.push(Unread::new("fl.acg_lambda", "because `fl.acg = false`"));
    }
    if fl.active_clients == 0 {
        let why =
            "because `fl.active_clients = 0` (every client is in the federation: none can join)";
        out.push(Unread::new("fl.replace_every", why));
        out.push(Unread::new("fl.replace_prob", why));
    } else if fl.replace_every == 0 {
        let why = "because `fl.replace_every = 0` (the federation never changes)";
        out.push(Unread::new("fl.replace_prob", why));
    }
    out
}
