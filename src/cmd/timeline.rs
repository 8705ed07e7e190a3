//! `leasehold timeline FILE [--svg OUT]`: prints a scenario's timeline, or draws it as SVG.
//!
//! The timeline is the same one `replay` prints; this command does not judge the run (exit 0
//! whenever the file runs; 2 for a bad file or an unwritable output).

use crate::cli::{CmdResult, Status};
use crate::cmd::replay::{load, run_on};
use crate::files::write_atomic;
use leasehold_sim::svg;
use std::path::PathBuf;

/// Arguments of `leasehold timeline`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario file (TOML).
    pub file: PathBuf,
    /// Write an SVG drawing of the timeline to this file (atomically) instead of printing.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
    /// The broker under test.
    #[arg(long, default_value = "pure", value_parser = ["pure"])]
    pub backend: String,
}

/// Runs the command.
pub fn run(args: Args) -> CmdResult {
    let script = load(&args.file)?;
    let replay = run_on(&script, &args.backend)?;
    match &args.svg {
        Some(out) => {
            let title = format!(
                "{} — {} ({})",
                script.scenario.name,
                script.variant,
                args.file.display()
            );
            write_atomic(out, svg::render(&replay.trace, &title).as_bytes())?;
            println!("wrote {}", out.display());
        }
        None => {
            for line in &replay.timeline {
                println!("{line}");
            }
        }
    }
    Ok(Status::Ok)
}
