//! `leasehold replay` (being built: exits 2 until it lands).

use crate::cli::{CmdResult, UserError};

/// Arguments of `leasehold replay`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> CmdResult {
    Err(UserError(
        "'replay' is not available in this build yet".to_string(),
    ))
}
