//! `leasehold protocols`: the variants and mutants, a line each, with the bounds `check` uses
//! for each when no flag is given (budgets not shown are 0): [`leasehold_front::protocols`].

use crate::status::{CmdResult, Status};
use leasehold_front::protocols;

/// Arguments of `leasehold protocols`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> CmdResult {
    if args.json {
        let rows = protocols::json();
        println!("{}", serde_json::to_string_pretty(&rows).expect("json"));
    } else {
        print!("{}", protocols::table());
    }
    Ok(Status::Ok)
}
