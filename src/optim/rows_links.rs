//! The local rules' links over K clients' rows of device tensors, built from the K clients'
//! links as their plans give them ([`RowsForm`]): AMSGrad's moments against a frozen v̂
//! (each client's m, v and `1/√v̂` uploaded once as rows), the weight decay, the original Mime's
//! fixed elementwise scale (each client's vector uploaded once as rows), and LAMB's trust
//! ratio (each row's per-tensor norms, f32 row sums in pieces).

use std::ops::Range;

use burn::tensor::{Device, Tensor};

use super::buffers::{Buf, Buffers, host};
use super::decay::AddDecayedWeights;
use super::rows::{row_sums, set_rows, upload_rows};
use super::transform::{RowsForm, TensorStep, TensorTransform};

/// The rule links of K clients whose links are `forms[k]` (client k's, in its chain's order)
/// over the parameter tensors at `ranges`; None when the clients' links differ in kind or
/// settings.
pub fn rows_links(
    forms: &[Vec<RowsForm>],
    ranges: &[Range<usize>],
    device: &Device,
) -> Option<Vec<Box<dyn TensorTransform>>> {
    let first = forms.first()?;
    if forms.iter().any(|f| f.len() != first.len()) {
        return None;
    }
    (0..first.len())
        .map(|i| {
            let column: Vec<&RowsForm> = forms.iter().map(|f| &f[i]).collect();
            link(&column, ranges, device)
        })
        .collect()
}

/// One link of K clients, each `column[k]`.
fn link(
    column: &[&RowsForm],
    ranges: &[Range<usize>],
    device: &Device,
) -> Option<Box<dyn TensorTransform>> {
    match column[0] {
        RowsForm::Decay(wd) => column
            .iter()
            .all(|f| matches!(f, RowsForm::Decay(w) if w.to_bits() == wd.to_bits()))
            .then(|| Box::new(AddDecayedWeights(*wd)) as Box<dyn TensorTransform>),
        RowsForm::Trust { on_zero, .. } => column
            .iter()
            .all(|f| {
                matches!(f, RowsForm::Trust { tensors, on_zero: z }
                    if *tensors == ranges && z.to_bits() == on_zero.to_bits())
            })
            .then(|| Box::new(RowsTrust { on_zero: *on_zero }) as Box<dyn TensorTransform>),
        RowsForm::ScaleBy(_) => {
            let rows: Option<Vec<Option<&[f32]>>> = (column.iter())
                .map(|f| match f {
                    RowsForm::ScaleBy(v) => Some(Some(*v)),
                    _ => None,
                })
                .collect();
            let s = upload_rows(&rows?, ranges, device);
            Some(Box::new(RowsScaleBy { s }))
        }
        RowsForm::Amsgrad { beta1, beta2, .. } => {
            let (b1, b2) = (*beta1, *beta2);
            let mut parts: [Vec<Option<&[f32]>>; 3] = Default::default();
            for f in column {
                let RowsForm::Amsgrad {
                    beta1,
                    beta2,
                    m,
                    v,
                    inv_sqrt_vhat,
                } = f
                else {
                    return None;
                };
                if beta1.to_bits() != b1.to_bits() || beta2.to_bits() != b2.to_bits() {
                    return None;
                }
                parts[0].push(Some(m));
                parts[1].push(Some(v));
                parts[2].push(Some(inv_sqrt_vhat));
            }
            let [m, v, inv] = parts.map(|p| upload_rows(&p, ranges, device));
            Some(Box::new(RowsAmsgrad { b1, b2, m, v, inv }))
        }
    }
}

/// AMSGrad's moments of K rows: `m ← β1·m + (1−β1)·u`, `v ← β2·v + (1−β2)·u·u`,
/// `u ← m·(1/√v̂)`, each parameter tensor's rows one `[K, n]` tensor.
struct RowsAmsgrad {
    b1: f32,
    b2: f32,
    m: Vec<Tensor<2>>,
    v: Vec<Tensor<2>>,
    inv: Vec<Tensor<2>>,
}

impl TensorTransform for RowsAmsgrad {
    fn update_tensors(&mut self, s: &mut TensorStep) {
        let (b1, b2) = (self.b1, self.b2);
        for (i, u) in s.u.iter_mut().enumerate() {
            // moments::ema and ema_sq's f32 operations in their order
            let g = u.clone();
            let m = self.m[i].clone().mul_scalar(b1) + g.clone().mul_scalar(1.0f32 - b1);
            let v = self.v[i].clone().mul_scalar(b2) + g.clone().mul_scalar(1.0f32 - b2) * g;
            set_rows(&mut self.m[i], m, &s.active);
            set_rows(&mut self.v[i], v, &s.active);
            *u = self.m[i].clone() * self.inv[i].clone();
        }
    }

    fn moments(&self) -> Option<(Vec<Tensor<2>>, Vec<Tensor<2>>)> {
        Some((self.m.clone(), self.v.clone()))
    }

    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        out.extend([
            Buf::Host(3),
            host(f64::from(self.b1)),
            host(f64::from(self.b2)),
        ]);
        self.m.buffers(out);
        self.v.buffers(out);
        self.inv.buffers(out);
    }
}

/// `u ← s ⊙ u` of K rows, each its client's fixed vector s (the original Mime's `1/√v̂`).
struct RowsScaleBy {
    s: Vec<Tensor<2>>,
}

impl TensorTransform for RowsScaleBy {
    fn update_tensors(&mut self, st: &mut TensorStep) {
        for (u, s) in st.u.iter_mut().zip(&self.s) {
            *u = u.clone() * s.clone();
        }
    }

    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        out.push(Buf::Host(5));
        self.s.buffers(out);
    }
}

/// LAMB's trust ratio of K rows: for each parameter tensor and row k, `u ← (l_k·r)·u` with
/// `r = ‖x‖/‖u‖` (`on_zero` where either norm is 0).
struct RowsTrust {
    on_zero: f64,
}

impl TensorTransform for RowsTrust {
    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        out.extend([Buf::Host(4), host(self.on_zero)]);
    }

    fn update_tensors(&mut self, s: &mut TensorStep) {
        let lr = s.steps.at(&s.steps.lr);
        for (u, x) in s.u.iter_mut().zip(s.x) {
            let xn = row_sums(x.clone() * x.clone()).sqrt();
            let un = row_sums(u.clone() * u.clone()).sqrt();
            let zero = xn
                .clone()
                .equal_elem(0.0)
                .bool_or(un.clone().equal_elem(0.0));
            let ratio = (xn / un).mask_fill(zero, self.on_zero as f32);
            *u = u.clone() * (ratio * lr.clone());
        }
    }

    fn applies_lr(&self) -> bool {
        true
    }
}
