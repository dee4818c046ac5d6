//! The pieces the stacked forms are built from: the copies' maps side by side in the
//! channels, a cursor over the stacked parameters in the layout's order, and the copies'
//! convolution.

use burn::backend::ops::ConvOptions;
use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use crate::kernels::{Kernels, conv2d_of, is_flex};

/// The K copies' batches `[K·b, c, h, w]` side by side in the channels: `[b, K·c, h, w]` (the
/// grouped convolutions' layout: group i is copy i).
pub fn to_channels(x: Tensor<4>, k: usize) -> Tensor<4> {
    let [n, c, h, w] = x.dims();
    let x5: Tensor<5> = x.reshape([k, n / k, c, h, w]);
    x5.swap_dims(0, 1).reshape([n / k, k * c, h, w])
}

/// The stacked parameters in the layout's order, taken one tensor at a time as a model's
/// forward reads them.
pub struct Cursor<'a> {
    pub params: &'a [Tensor<1>],
    pub shapes: &'a [Vec<usize>],
    pub at: usize,
    /// K, the number of copies.
    pub copies: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor from the first of `params`, K = `copies` copies each.
    pub fn new(params: &'a [Tensor<1>], shapes: &'a [Vec<usize>], copies: usize) -> Self {
        Cursor {
            params,
            shapes,
            at: 0,
            copies,
        }
    }

    /// Whether every tensor has been taken.
    pub fn done(&self) -> bool {
        self.at >= self.params.len()
    }

    /// Copy `i`'s own part of the first `n` tensors (views, one copy each).
    pub fn copy(&self, i: usize, n: usize) -> Vec<Tensor<1>> {
        self.params[..n]
            .iter()
            .zip(self.shapes)
            .map(|(p, s)| {
                let len: usize = s.iter().product();
                p.clone().narrow(0, i * len, len)
            })
            .collect()
    }

    fn next(&mut self) -> (Tensor<1>, &[usize]) {
        let i = self.at;
        self.at += 1;
        (self.params[i].clone(), &self.shapes[i])
    }

    /// The next tensor, a convolution's weight: the copies' `[K·out, in, kh, kw]`.
    pub fn conv(&mut self) -> Tensor<4> {
        let k = self.copies;
        let (p, s) = self.next();
        assert_eq!(s.len(), 4, "a convolution's weight");
        p.reshape([k * s[0], s[1], s[2], s[3]])
    }

    /// The next tensor, a vector: the copies' `[K·n]`.
    pub fn vector(&mut self) -> Tensor<1> {
        let (p, s) = self.next();
        assert_eq!(s.len(), 1, "a vector");
        p
    }

    /// The next tensor, a matrix (an embedding table): the copies' `[K·rows, cols]` and the
    /// one copy's `[rows, cols]`.
    pub fn matrix(&mut self) -> (Tensor<2>, [usize; 2]) {
        let k = self.copies;
        let (p, s) = self.next();
        assert_eq!(s.len(), 2, "a matrix");
        let (rows, cols) = (s[0], s[1]);
        (p.reshape([k * rows, cols]), [rows, cols])
    }

    /// The next two tensors, a linear layer's weight and bias: `[K, in, out]` and `[K, 1, out]`.
    pub fn linear(&mut self) -> (Tensor<3>, Tensor<3>) {
        let k = self.copies;
        let (w, s) = self.next();
        assert_eq!(s.len(), 2, "a linear layer's weight");
        let (din, dout) = (s[0], s[1]);
        let b = self.vector();
        (w.reshape([k, din, dout]), b.reshape([k, 1, dout]))
    }
}

/// The K copies' convolution on their maps side by side in the channels (`[b, K·c, h, w]`,
/// weights `[K·o, c, kh, kw]`): one grouped convolution, or on flex with fedrun's kernels each
/// copy's own (burn's grouped convolution takes a slower direct path there, and rounds unlike
/// fedrun's kernels that one client at a time uses).
pub fn copies_conv(x: Tensor<4>, w: Tensor<4>, o: ConvOptions<2>, kernels: Kernels) -> Tensor<4> {
    let k = o.groups;
    if !(kernels == Kernels::Fedrun && is_flex(&x.device())) || k == 1 {
        return conv2d_of(x, w, None, o, kernels);
    }
    let (c, out) = (x.dims()[1] / k, w.dims()[0] / k);
    let one = ConvOptions {
        groups: 1,
        ..o.clone()
    };
    let per: Vec<Tensor<4>> = (0..k)
        .map(|i| {
            let xi = x.clone().narrow(1, i * c, c);
            let wi = w.clone().narrow(0, i * out, out);
            conv2d_of(xi, wi, None, one.clone(), kernels)
        })
        .collect();
    Tensor::cat(per, 1)
}

/// The linear layers from the cursor's tensor on to the last on `h` (`[K, b, in]`), a ReLU
/// between them: each a batched product `[K, b, in]·[K, in, out]`. The copies' outputs, with
/// the last layer's input as their features (what the classifier reads).
pub fn linear_chain(mut h: Tensor<3>, cursor: &mut Cursor) -> Outputs3 {
    loop {
        let (w, b) = cursor.linear();
        let out = h.clone().matmul(w) + b;
        if cursor.done() {
            return Outputs3 {
                logits: out,
                features: h,
            };
        }
        h = relu(out);
    }
}

/// The K copies' logits `[K, b, classes]` and features `[K, b, d]` (the representation the
/// classifier reads, as [`crate::model::Outputs`] has it for one model).
pub struct Outputs3 {
    pub logits: Tensor<3>,
    pub features: Tensor<3>,
}

impl Outputs3 {
    /// Outputs whose features are the logits (the character and linear models).
    pub fn logits_only(logits: Tensor<3>) -> Outputs3 {
        Outputs3 {
            features: logits.clone(),
            logits,
        }
    }
}
