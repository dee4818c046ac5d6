mod base;
mod dot;
mod outer_product;

pub use base::{Gemm, matmul_entry};
