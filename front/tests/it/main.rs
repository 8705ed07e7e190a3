//! The front door's integration tests, one binary: each file is a module, `scratch` holds the
//! scratch folders they share.

mod scratch;

mod campaign_coverage;
mod campaign_story;
mod check_budget;
mod check_flags;
mod matrix_report;
mod matrix_request;
mod sim_flags;
mod timeline_lines;
