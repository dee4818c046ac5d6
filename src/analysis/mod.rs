//! From many run folders to tables and figures: load runs, group seeds, compute the papers'
//! summary statistics, and plot.

pub mod figure;
pub mod long;
pub mod partition;
pub mod pdf;
pub mod plot;
pub mod report;
pub mod runs;
pub mod stats;
pub mod style;
