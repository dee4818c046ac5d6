//! What a forward of K copies gives, and one copy's part of it.

use burn::tensor::Tensor;

/// What a model computes on a batch, for the local objectives that read more than the logits
/// (one client's part of [`Outputs3`]).
#[derive(Clone, Debug)]
pub struct Outputs {
    /// `[batch, classes]`.
    pub logits: Tensor<2>,
    /// The representation the classifier reads `[batch, d]`: the CNN's last hidden layer
    /// (192) or MOON's projection of it, ResNet-18's pooled features (512), the MLP's hidden
    /// layer; the logits for the sequence models and softmax regression.
    pub features: Tensor<2>,
    /// ResNet-18's activations after the stem and after each stage (FedMLB); empty for the
    /// other models.
    pub levels: Vec<Tensor<4>>,
}

impl Outputs {
    /// The same outputs cut from the autodiff graph.
    pub fn detach(self) -> Outputs {
        Outputs {
            logits: self.logits.detach(),
            features: self.features.detach(),
            levels: self.levels.into_iter().map(|l| l.detach()).collect(),
        }
    }
}

/// The K copies' logits `[K, b, classes]`, features `[K, b, d]` (the representation the
/// classifier reads, as [`Outputs`] has it for one) and ResNet-18's levels (the copies side by
/// side in the channels, `[b, K·c, h, w]`).
pub struct Outputs3 {
    pub logits: Tensor<3>,
    pub features: Tensor<3>,
    pub levels: Vec<Tensor<4>>,
}

impl Outputs3 {
    /// Outputs whose features are the logits (the character models).
    pub fn logits_only(logits: Tensor<3>) -> Outputs3 {
        Outputs3 {
            features: logits.clone(),
            logits,
            levels: Vec::new(),
        }
    }

    /// Copy `i`'s outputs (of K copies; with one copy its outputs as they are, so that the
    /// backward sums into them in the same order).
    pub fn copy(&self, i: usize) -> Outputs {
        let k = self.logits.dims()[0];
        let one = |t: &Tensor<3>| -> Tensor<2> {
            let [_, b, d] = t.dims();
            match k {
                1 => t.clone().reshape([b, d]),
                _ => t.clone().narrow(0, i, 1).reshape([b, d]),
            }
        };
        // a level is always narrowed, even the one copy's whole: the gradients of what reads
        // a copy's level (FedMLB's hybrid branch: a frozen block's convolution and shortcut)
        // are then summed at the narrow before they join the level's other gradients, with
        // one copy as in a stack (without it, one copy's level summed its four gradients in
        // another grouping: 5e-5 apart after two FedMLB rounds of ResNet-18, 6e-4 on a Zen 1)
        let levels = self.levels.iter().map(|l| {
            let c = l.dims()[1] / k;
            l.clone().narrow(1, i * c, c)
        });
        Outputs {
            logits: one(&self.logits),
            features: one(&self.features),
            levels: levels.collect(),
        }
    }
}
