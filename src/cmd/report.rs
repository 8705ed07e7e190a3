//! `leasehold report` (being built: exits 2 until it lands).

use crate::cli::{CmdResult, UserError};

/// Arguments of `leasehold report`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> CmdResult {
    Err(UserError(
        "'report' is not available in this build yet".to_string(),
    ))
}
