//! `leasehold timeline` (being built: exits 2 until it lands).

use crate::cli::{CmdResult, UserError};

/// Arguments of `leasehold timeline`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> CmdResult {
    Err(UserError(
        "'timeline' is not available in this build yet".to_string(),
    ))
}
