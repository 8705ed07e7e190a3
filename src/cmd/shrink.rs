//! `leasehold shrink FILE`: minimises a failing scenario while it still breaks the same
//! invariant, on the backend it failed on (the library's [`leasehold_front::shrink()`]) —
//! a seeded one first in its size and faults, then as the run written as a scripted scenario,
//! step by step (delta debugging); a scripted one step by step at once — writes the scripted
//! result beside the input (never overwriting) and prints what shrank.

use crate::cmd::backends::Context;
use crate::cmd::sim::progress::{bars_wanted, catch_interrupts, INTERRUPTED};
use crate::status::{CmdResult, Status};
use leasehold_sim::seeded::shrink::{size, Shrunk};
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `leasehold shrink`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The failing scenario: seeded (as `leasehold sim` writes them) or scripted.
    pub file: PathBuf,
    /// Bound on the runs tried.
    #[arg(long, default_value_t = leasehold_front::shrink::RUNS_MAX)]
    pub runs_max: u64,
    /// The broker the finding was made on, for both phases: `pure`, `embedded`, `redis`,
    /// `postgres`, `jetstream`, `rabbitmq`, or one a suite registered (`cli::main_with`).
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The backend's server (`--url URL`, `--spawn`).
    #[command(flatten)]
    pub server: crate::cmd::backends::ServerArgs,
    /// Where to write the result: a folder, or a file when it ends in `.toml` (default:
    /// `<input>-shrunk.toml` beside the input). An existing file is never replaced: the result
    /// then takes the next free name (`-2`, `-3`, …).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print one JSON object at the end (what shrank, the file written) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Stop trying smaller variations after this long (`90s`, `10m`), and write the smallest
    /// failing scenario found by then. Ctrl-C or SIGTERM stops it the same way; a second
    /// Ctrl-C quits at once.
    #[arg(long = "for", value_name = "DURATION")]
    pub for_: Option<String>,
}

/// Runs the command: the library's shrink ([`leasehold_front::shrink()`]) on the backend
/// `--backend` selects, with a spinner on a terminal; prints what it says (or one JSON object).
pub fn run(args: Args, context: &Context) -> CmdResult {
    let budget = args
        .for_
        .as_deref()
        .map(leasehold_front::budget::parse_budget)
        .transpose()?;
    let backend = context.select(&args.backend, &args.server)?;
    catch_interrupts(
        "no other run starts; the smallest failing scenario found is written",
        false,
    );
    let mut shrink = leasehold_front::shrink(&args.file)
        .backend(backend)
        .runs_max(args.runs_max)
        .stop_on(Arc::clone(&INTERRUPTED));
    if let Some(budget) = budget {
        shrink = shrink.for_at_most(budget);
    }
    if let Some(out) = &args.out {
        shrink = shrink.out(out);
    }
    let spinner = bars_wanted(false).then(|| {
        let spinner = indicatif::ProgressBar::new_spinner();
        spinner.enable_steady_tick(std::time::Duration::from_millis(120));
        spinner
    });
    if let Some(spinner) = spinner.clone() {
        let runs_max = args.runs_max;
        shrink = shrink.progress(move |now: &Shrunk| {
            let last = now.changes.last().map_or("none yet", String::as_str);
            spinner.set_message(format!(
                "shrinking: run {} of at most {runs_max} · size {} · last change kept: {last}",
                now.runs + 1,
                size(&now.setup)
            ));
        });
    }
    let done = shrink.run();
    if let Some(spinner) = spinner {
        spinner.finish_and_clear();
    }
    let done = done?;
    if args.json {
        println!("{}", done.json());
    } else {
        for line in &done.lines {
            println!("{line}");
        }
    }
    Ok(Status::held(done.written.is_some()))
}
