//! Loss terms of the local objectives, as burn tensor ops (so autodiff gives their gradient):
//! cross-entropy, FedLC's calibrated cross-entropy, FedNTD's not-true distillation and
//! FedDecorr's decorrelation. Each returns a one-element tensor. A batch mean reads [`Kept`]
//! where a step is padded: the mean of the client's samples only.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

/// Which rows of a client's batch count at a padded step ([`crate::model::copies::RowMask`]'s row for
/// the client): `keep` `[b, 1]`, 1 a sample and 0 padding, and `scale` `[1]`, b over the
/// samples. A batch mean over `[b, …]` rows is then taken over the rows times `keep`, times
/// `scale`: the mean of the samples. A full batch's mean is times 1: the same bits as without.
#[derive(Clone, Debug)]
pub struct Kept {
    pub keep: Tensor<2>,
    pub scale: Tensor<1>,
}

/// `rows` `[b, n]` with the padding's rows zeroed (all of them without `kept`).
fn weigh(rows: Tensor<2>, kept: Option<&Kept>) -> Tensor<2> {
    match kept {
        None => rows,
        Some(k) => rows * k.keep.clone(),
    }
}

/// A batch mean scaled to the samples' mean (as it is without `kept`).
fn scaled(mean: Tensor<1>, kept: Option<&Kept>) -> Tensor<1> {
    match kept {
        None => mean,
        Some(k) => mean * k.scale.clone(),
    }
}

/// Mean cross-entropy of `logits` `[B, C]` against `targets` `[B]` (burn's
/// `CrossEntropyLoss`, the default local loss; with `kept`, its ops with the padding's rows
/// zeroed: the log-softmax, the targets picked, their mean).
pub fn cross_entropy(logits: Tensor<2>, targets: Tensor<1, Int>, kept: Option<&Kept>) -> Tensor<1> {
    if kept.is_none() {
        return CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits, targets);
    }
    let b = targets.dims()[0];
    let picked = log_softmax(logits, 1).gather(1, targets.reshape([b, 1]));
    scaled(weigh(picked, kept).reshape([b]).mean(), kept).neg()
}

/// FedLC: `−mean_b log softmax(z + offset)_y` with a per-class offset `[1, C]`
/// (`−τ·n_c^{−1/4}`; [`MASKED`] for a class the client does not hold).
pub fn calibrated_cross_entropy(
    logits: Tensor<2>,
    offsets: Tensor<2>,
    targets: Tensor<1, Int>,
    kept: Option<&Kept>,
) -> Tensor<1> {
    let [b, c] = logits.dims();
    let lp = log_softmax(logits + offsets, 1);
    let onehot = targets.one_hot::<2>(c).float();
    scaled(weigh(lp * onehot, kept).sum().div_scalar(b as f32), kept).neg()
}

/// A logit far below any real one: masks a class out of a softmax (exp underflows to 0
/// exactly) without the NaN that −∞ gives in `0·(−∞)`.
pub const MASKED: f32 = -1.0e9;

/// FedNTD: `KL(softmax(g_nt/T) ‖ softmax(z_nt/T))`, batch mean, where `_nt` drops the true
/// class (here: masks it out of both softmaxes), `g` the frozen global model's logits.
pub fn not_true_kl(
    logits: Tensor<2>,
    global: Tensor<2>,
    targets: Tensor<1, Int>,
    temperature: f64,
    kept: Option<&Kept>,
) -> Tensor<1> {
    let c = logits.dims()[1];
    let mask = targets.one_hot::<2>(c).float().mul_scalar(MASKED);
    kl_divergence(global + mask.clone(), logits + mask, temperature, kept)
}

/// FedDecorr: standardise each feature over the batch (`(f − mean)/sqrt(1e-8 + var)`,
/// unbiased variance), `K = zᵀz`, and return `mean(offdiag(K)²)/N` (0 for N = 1). It reads the
/// batch's statistics, so a padded batch cannot stand for it.
pub fn decorrelation(features: Tensor<2>) -> Tensor<1> {
    let [n, c] = features.dims();
    if n < 2 || c < 2 {
        return features.sum().mul_scalar(0.0);
    }
    let x = features.clone() - features.mean_dim(0);
    let var = (x.clone() * x.clone())
        .sum_dim(0)
        .div_scalar((n - 1) as f32);
    let z = x / var.add_scalar(1e-8).sqrt();
    let k = z.clone().transpose().matmul(z.clone());
    let total = (k.clone() * k).sum();
    let diag = (z.clone() * z).sum_dim(0);
    let diag_sq = (diag.clone() * diag).sum();
    (total - diag_sq).div_scalar((c * (c - 1)) as f32 * n as f32)
}

/// Cosine similarity of the rows of `a` and `b` `[B, d]` → `[B, 1]`, as PyTorch's
/// `CosineSimilarity`: `a·b / max(‖a‖·‖b‖, 1e-8)`.
pub fn cosine(a: Tensor<2>, b: Tensor<2>) -> Tensor<2> {
    let dot = (a.clone() * b.clone()).sum_dim(1);
    let na = (a.clone() * a).sum_dim(1).sqrt();
    let nb = (b.clone() * b).sum_dim(1).sqrt();
    dot / (na * nb).clamp_min(1e-8)
}

/// MOON's model-contrastive term: `CE([cos(z, z_glob), cos(z, z_prev)]/τ, target 0)`, batch
/// mean.
pub fn model_contrastive(
    z: Tensor<2>,
    glob: Tensor<2>,
    prev: Tensor<2>,
    tau: f64,
    kept: Option<&Kept>,
) -> Tensor<1> {
    let b = z.dims()[0];
    let pos = cosine(z.clone(), glob);
    let neg = cosine(z, prev);
    let logits = Tensor::cat(vec![pos, neg], 1).div_scalar(tau as f32);
    let lp = log_softmax(logits, 1);
    scaled(
        weigh(lp.narrow(1, 0, 1), kept).sum().div_scalar(b as f32),
        kept,
    )
    .neg()
}

/// `KL(softmax(p/T) ‖ softmax(q/T))`, batch mean (PyTorch `KLDivLoss(log_softmax(q/T),
/// softmax(p/T), "batchmean")`, the FedMLB code's `KD`); the gradient flows into both.
pub fn kl_divergence(
    p: Tensor<2>,
    q: Tensor<2>,
    temperature: f64,
    kept: Option<&Kept>,
) -> Tensor<1> {
    let b = p.dims()[0];
    let t = temperature as f32;
    let lp = log_softmax(p.div_scalar(t), 1);
    let lq = log_softmax(q.div_scalar(t), 1);
    scaled(
        weigh(lp.clone().exp() * (lp - lq), kept)
            .sum()
            .div_scalar(b as f32),
        kept,
    )
}
