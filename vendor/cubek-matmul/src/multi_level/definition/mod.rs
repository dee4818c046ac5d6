mod blueprint;
mod cube_mapping;
mod spec;
mod tiling_scheme;

pub use blueprint::*;
pub use cube_mapping::*;
pub use spec::*;
pub use tiling_scheme::*;

// Internal-only: external crates name it `cubek_matmul::multi_level::stage::SwizzleModes`.
pub(crate) use crate::multi_level::stage::SwizzleModes;
