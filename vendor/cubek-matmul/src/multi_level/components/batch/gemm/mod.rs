mod config;
pub(crate) mod io;
mod mat_layout;
mod matmul;
mod setup;

pub use config::*;
pub use matmul::*;
pub use setup::*;
