//! A device training's state as a list of buffers, so that a captured graph can serve the next
//! training: the graph replays on the buffers it recorded, so the next training's values (its
//! anchors, tables, moments, a step index back at 0) are written into those same buffers, in
//! place, once the two lists are found alike (the same kinds and shapes in the same order, and
//! the same host numbers, which a recorded launch keeps as it was given them).

use burn::tensor::{Int, Tensor};

use crate::kernels::capture::in_place;

/// One buffer of a training's state, or a host number its launches are given.
pub enum Buf<'a> {
    F2(&'a mut Tensor<2>),
    I1(&'a mut Tensor<1, Int>),
    I2(&'a mut Tensor<2, Int>),
    Host(u64),
}

/// Something whose state is such buffers, listed in a fixed order.
pub trait Buffers {
    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>);
}

/// Whether `to` can take `from`'s values: the same kinds and shapes, the same host numbers.
pub fn alike(to: &[Buf], from: &[Buf]) -> bool {
    to.len() == from.len()
        && to.iter().zip(from).all(|pair| match pair {
            (Buf::F2(a), Buf::F2(b)) => a.dims() == b.dims(),
            (Buf::I1(a), Buf::I1(b)) => a.dims() == b.dims(),
            (Buf::I2(a), Buf::I2(b)) => a.dims() == b.dims(),
            (Buf::Host(a), Buf::Host(b)) => a == b,
            _ => false,
        })
}

/// Write `from`'s values into `to`'s buffers, each in place (lists [`alike`]), every element's
/// bits (NaNs too).
pub fn refill(to: Vec<Buf>, from: Vec<Buf>) {
    for pair in to.into_iter().zip(from) {
        match pair {
            (Buf::F2(a), Buf::F2(b)) => in_place(a, |_| b.clone()),
            (Buf::I1(a), Buf::I1(b)) => in_place(a, |_| b.clone()),
            (Buf::I2(a), Buf::I2(b)) => in_place(a, |_| b.clone()),
            _ => {}
        }
    }
}

/// A host number as a list entry (its bits).
pub fn host(v: f64) -> Buf<'static> {
    Buf::Host(v.to_bits())
}

impl Buffers for Vec<Tensor<2>> {
    fn buffers<'a>(&'a mut self, out: &mut Vec<Buf<'a>>) {
        out.push(Buf::Host(self.len() as u64));
        out.extend(self.iter_mut().map(Buf::F2));
    }
}
