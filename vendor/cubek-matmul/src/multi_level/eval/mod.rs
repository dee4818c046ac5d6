//! Benchmark catalogues for the multi-level routines.

pub mod gemm;
pub mod gemv;
pub mod quantized_matmul;
