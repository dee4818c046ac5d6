//! Mime's SVRG anchor gradient and the step's own forward draw the same dropout masks. Alone in
//! its test binary: dropout draws from the backend's process-wide generator, so a test running
//! beside it in the same process (another thread drawing random numbers between the seeding
//! and the forward) would change the masks.

use fedrun::data;
use fedrun::fl::client::Work;
use fedrun::fl::engine::Experiment;
use fedrun::fl::plan::ClientPlan;
use fedrun::fl::schedule::Schedule;
use fedrun::fl::term::Term;
use fedrun::optim::global_norm;
use fedrun::rng::Rng;

fn random(rng: &mut Rng, n: usize, scale: f64) -> Vec<f32> {
    (0..n).map(|_| (rng.normal() * scale) as f32).collect()
}

#[test]
fn svrg_anchor_gradient_draws_the_models_dropout_masks() {
    // the quickstart's transformer with dropout 0.5 and Mime's SVRG term without c:
    // g ← g(x) − g(anchor). At the first step x = anchor, so with the same masks for both
    // forwards the direction is exactly 0 and the client does not move; with masks of its own
    // the anchor's gradient would not cancel
    let s = fedrun::schema::parse(
        fedrun::config::QUICKSTART,
        "q",
        &["model.dropout=0.5".into(), "local.weight_decay=0".into()],
    )
    .unwrap();
    let mut ex = Experiment::new(&s, data::load(&s, None).unwrap()).unwrap();
    let at = ex.global.clone();
    let schedule = Schedule::new(&s.local);
    let c: Vec<f32> = random(&mut Rng::from_seed(3), at.len(), 1e-3);
    let train = |ex: &mut Experiment, anchor_grad: f32, c: &[f32], steps: usize, seed: u64| {
        let plan = ClientPlan {
            term: Term {
                anchor_grad,
                ..Term::none()
            }
            .shift(1.0, c),
            ..ClientPlan::default()
        };
        let w = Work {
            client: 0,
            round: 0,
            anchor: &at,
            steps,
            batch_size: 8,
            schedule: &schedule,
            dropout_seed: seed,
            stop: None,
        };
        let (data, tr) = (&ex.data, &mut ex.trainers[0]);
        tr.train_one(data, plan, &w, &mut Rng::from_seed(1))
            .expect("trained");
        tr.delta(0).to_vec()
    };
    let zero = vec![0.0; at.len()];
    assert!(
        train(&mut ex, -1.0, &zero, 1, 7).iter().all(|d| *d == 0.0),
        "the correction cancels at the anchor"
    );
    assert!(
        global_norm(&train(&mut ex, 0.0, &zero, 1, 7)) > 0.0,
        "a plain step moves"
    );
    // with c the client moves away from the anchor: the correction no longer cancels, and the
    // masks follow the seed
    let a = train(&mut ex, -1.0, &c, 3, 7);
    assert!(a == train(&mut ex, -1.0, &c, 3, 7), "the same masks");
    assert!(a != train(&mut ex, -1.0, &c, 3, 8), "other masks");
}
