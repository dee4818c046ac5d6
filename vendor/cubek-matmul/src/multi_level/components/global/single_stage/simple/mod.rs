mod matmul;
mod setup;

pub use setup::SimpleMatmulFamily;
