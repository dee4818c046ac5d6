//! The local chain's formulas over flat vectors, written out plainly as the reference the
//! step's chain over device rows is tested against: the term, the clip and the weight decay in
//! either order (FedNAR), the rule's links read from their descriptions (AMSGrad's moments, the
//! decay, a fixed scale, LAMB's trust ratio with its norms in f64) and `x ← x − l·u`.

use fedrun::fl::client::ClipDecay;
use fedrun::fl::plan::Rule;
use fedrun::fl::term::{Coef, Term};
use fedrun::optim::{Ctx, Log, RowsForm, global_norm};

/// `g ← scale·g + (prox·(x − anchor) + Σ c_k·v_k + anchor_grad·g_anchor)`, the factors at `ctx`.
pub fn term(t: &Term, anchor: &[f32], x: &[f32], g_anchor: &[f32], g: &mut [f32], ctx: &Ctx) {
    let coef = |c: &Coef| match *c {
        Coef::Fixed(c) => c,
        Coef::PerStepLength(k) => (k / (ctx.lr * ctx.steps as f64)) as f32,
    };
    for i in 0..g.len() {
        let mut s = if t.prox != 0.0 {
            t.prox * (x[i] - anchor[i])
        } else {
            0.0
        };
        for (c, v) in &t.shifts {
            s += coef(c) * v[i];
        }
        if t.anchor_grad != 0.0 {
            s += t.anchor_grad * g_anchor[i];
        }
        g[i] = if t.scale == 1.0 {
            g[i] + s
        } else {
            t.scale * g[i] + s
        };
    }
}

/// `u ← u·min(1, A/(‖u‖ + 1e-6))` (A = 0: no clip), the norm in f64.
fn clip(a: f32, u: &mut [f32], log: &mut Log) {
    let norm = global_norm(u);
    log.pre_clip_norm = norm;
    if a > 0.0 {
        log.clipped = norm >= f64::from(a);
        let coef = (f64::from(a) / (norm + 1e-6)).min(1.0) as f32;
        u.iter_mut().for_each(|v| *v *= coef);
    }
}

fn decay(wd: f32, u: &mut [f32], x: &[f32]) {
    if wd != 0.0 {
        u.iter_mut().zip(x).for_each(|(u, x)| *u += wd * x);
    }
}

/// AMSGrad's β1, β2, m, v and `1/√v̂`.
type Amsgrad = (f32, f32, Vec<f32>, Vec<f32>, Vec<f32>);

/// One client's chain over vectors, its rule's state its own copy.
pub struct Chain<'a> {
    term: Term<'a>,
    anchor: &'a [f32],
    base: ClipDecay,
    /// AMSGrad's m, v and `1/√v̂` when the rule has them.
    amsgrad: Option<Amsgrad>,
    rule: &'a Rule,
}

impl<'a> Chain<'a> {
    pub fn new(term: Term<'a>, anchor: &'a [f32], base: ClipDecay, rule: &'a Rule) -> Self {
        let amsgrad = rule.links.iter().find_map(|l| match l.rows_form() {
            RowsForm::Amsgrad {
                beta1,
                beta2,
                m,
                v,
                inv_sqrt_vhat,
            } => Some((beta1, beta2, m.to_vec(), v.to_vec(), inv_sqrt_vhat.to_vec())),
            _ => None,
        });
        Chain {
            term,
            anchor,
            base,
            amsgrad,
            rule,
        }
    }

    /// One step at `ctx` from the gradient `g` (and the starting model's `g_anchor`): `g`
    /// becomes the update u, and `x ← x − l·u` (`x ← x − u` after a trust ratio).
    pub fn step(&mut self, x: &mut [f32], g: &mut [f32], g_anchor: &[f32], ctx: &Ctx) -> Log {
        let mut log = Log::default();
        term(&self.term, self.anchor, x, g_anchor, g, ctx);
        let b = self.base;
        if b.nar {
            decay(b.weight_decay, g, x);
            clip(b.max_norm, g, &mut log);
        } else {
            clip(b.max_norm, g, &mut log);
            decay(b.weight_decay, g, x);
        }
        let mut scaled = false;
        for l in &self.rule.links {
            match l.rows_form() {
                RowsForm::Amsgrad { .. } => {
                    let (b1, b2, m, v, inv) = self.amsgrad.as_mut().expect("its state");
                    for i in 0..g.len() {
                        m[i] = *b1 * m[i] + (1.0 - *b1) * g[i];
                        v[i] = *b2 * v[i] + (1.0 - *b2) * g[i] * g[i];
                        g[i] = m[i] * inv[i];
                    }
                }
                RowsForm::Decay(wd) => decay(wd, g, x),
                RowsForm::ScaleBy(s) => g.iter_mut().zip(s).for_each(|(u, s)| *u *= s),
                RowsForm::Trust { tensors, on_zero } => {
                    for r in tensors {
                        let (xn, un) = (global_norm(&x[r.clone()]), global_norm(&g[r.clone()]));
                        let ratio = if xn > 0.0 && un > 0.0 {
                            xn / un
                        } else {
                            on_zero
                        };
                        let s = (ctx.lr * ratio) as f32;
                        g[r.clone()].iter_mut().for_each(|u| *u *= s);
                    }
                    scaled = true;
                }
            }
        }
        let l = if scaled { 1.0 } else { ctx.lr as f32 };
        x.iter_mut().zip(g.iter()).for_each(|(x, u)| *x -= u * l);
        log
    }

    /// AMSGrad's (m, v) now, when the rule keeps them.
    pub fn moments(&self) -> Option<(Vec<f32>, Vec<f32>)> {
        self.amsgrad.as_ref().map(|a| (a.2.clone(), a.3.clone()))
    }
}
