//! Every thread that computes runs with subnormal floats flushed to zero (x86-64's FTZ and DAZ
//! bits), and `run.flush_subnormals = false` turns that off everywhere. Alone in its test binary:
//! the mode of rayon's global pool is process-wide, and a test beside it would run in the mode
//! this one sets.
#![cfg(target_arch = "x86_64")]

mod common;

use common::synthetic_spec;
use fedrun::data;
use fedrun::fl::engine::Experiment;
use fedrun::kernels::fpu;

#[test]
fn every_compute_thread_flushes_subnormals_unless_told_not_to() {
    for flush in [true, false, true] {
        let s = fedrun::schema::parse(
            &synthetic_spec(""),
            "t",
            &[
                "run.client_workers=2".into(),
                format!("run.flush_subnormals={flush}"),
            ],
        )
        .unwrap();
        let mut ex = Experiment::new(&s, data::load(&s, None).unwrap()).unwrap();
        ex.round_stats(0).unwrap();
        assert_eq!(fpu::this_thread_flushes(), flush, "the calling thread");
        let global = rayon::broadcast(|_| fpu::this_thread_flushes());
        assert!(
            global.iter().all(|&f| f == flush),
            "rayon's global pool: {global:?}"
        );
        assert_eq!(ex.pools.len(), 2, "two client workers");
        for (k, p) in ex.pools.iter().enumerate() {
            let got = p.broadcast(|_| fpu::this_thread_flushes());
            assert!(got.iter().all(|&f| f == flush), "worker pool {k}: {got:?}");
        }
    }
}
