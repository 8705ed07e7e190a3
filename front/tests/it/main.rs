//! The front door's integration tests, one binary: each file is a module, `scratch` holds the
//! scratch folders they share.

mod scratch;

mod campaign_coverage;
mod campaign_story;
mod check_budget;
mod matrix_report;
