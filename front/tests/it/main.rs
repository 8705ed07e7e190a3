//! The front door's integration tests, one binary: each file is a module, `scratch` holds the
//! scratch folders they share.

mod scratch;

mod campaign_coverage;
mod campaign_story;
mod check_budget;
mod check_flags;
mod files_atomic;
mod matrix_cells;
mod matrix_judge;
mod matrix_report;
mod matrix_request;
mod replay_styled;
mod sim_flags;
mod timeline_lines;
