//! What fedrun's backend extensions share: the flex tensors' memory as slices, and new
//! contiguous flex tensors. Each op is an extension of its own, as burn's backend-extension
//! crates are: the convolution (`ext_conv.rs`), GroupNorm (`ext_norm.rs`), max-pooling
//! (`ext_pool.rs`), the linear layer (`ext_linear.rs`), the LSTM (`ext_lstm.rs`), the
//! activations and dropout (`ext_act.rs`), the K copies' dropout mask from seeds on the device
//! (`ext_mask.rs`).

use burn::backend::flex::{FlexTensor, Layout};
use burn::backend::{Bytes, DType, Shape};

/// The f32 data of `t`, borrowed when contiguous.
pub(super) fn with_slice<R>(t: &FlexTensor, f: impl FnOnce(&[f32]) -> R) -> R {
    match t.as_slice::<f32>() {
        Some(s) => f(s),
        None => f(t.to_contiguous().as_slice::<f32>().expect("contiguous f32")),
    }
}

pub(super) fn vector(v: Vec<f32>) -> FlexTensor {
    let n = v.len();
    tensor(v, &[n])
}

/// A contiguous f32 flex tensor of `shape` that owns `v` (no copy).
pub(super) fn tensor(v: Vec<f32>, shape: &[usize]) -> FlexTensor {
    FlexTensor::new(
        Bytes::from_elems(v),
        Layout::contiguous(Shape::from(shape.to_vec())),
        DType::F32,
    )
}
