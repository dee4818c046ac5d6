//! Benchmark catalogues for the tile-DSL routines.

pub mod gemm;
pub mod gemm_cpu_tiled;
pub mod gemm_storage;
pub mod split_cubes;
pub mod split_k;
pub mod tile_quant_stage;
