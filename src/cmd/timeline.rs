//! `leasehold timeline FILE [--svg OUT] [--lines A..B]`: prints a scenario's timeline, or draws
//! it as SVG.
//!
//! The timeline is the same one `replay` prints, for a scripted or a seeded file. The exit
//! status answers the question `replay`'s does (docs/cli.md): 0 when the run matched the
//! file's `[expect]` (a file that expects its known violation draws with 0), 1 when it did
//! not (a violation a file without `[expect]` did not announce), 2 for a bad file or an
//! unwritable output.
//!
//! A drawing shows at most [`drawing::DRAWN_LINES`] lines unless `--lines` asks for others
//! (`leasehold_sim::drawing`): a long run's every line would be a smear.

use crate::cmd::backends::Context;
use crate::cmd::sim::record_if_seeded;
use crate::status::{CmdResult, Status, UserError};
use leasehold_front::draw::{Drawable, Drawing};
use leasehold_front::replay::{lines_shown, load, run_script, timeline_lines};
use leasehold_front::seeded::{seeded_setup, streamed_violations};
use leasehold_front::stream::{StdoutTimeline, Story};
use leasehold_sim::drawing;
use leasehold_sim::seeded::seeded_file::check_expect;
use leasehold_sim::seeded::BackendKind;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Arguments of `leasehold timeline`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario file (TOML).
    pub file: PathBuf,
    /// Write an SVG drawing of the timeline to this file (atomically) instead of printing;
    /// `-` writes it to standard output.
    /// A run of more than 40 lines is drawn in part: the 40 lines up to its first violation
    /// (or its last 40), unless `--lines` asks for others.
    #[arg(long, value_name = "OUT")]
    pub svg: Option<PathBuf>,
    /// Only the shown lines tA..tB (B excluded; `40..100` or `t40..t100`): printed, or drawn
    /// on a time axis of their own.
    #[arg(long, value_name = "A..B", value_parser = drawing::parse_lines)]
    pub lines: Option<Range<usize>>,
    /// Print the timeline as one JSON object (its lines and a structured record per line; the
    /// object `replay --json` prints).
    #[arg(long, conflicts_with_all = ["svg", "lines"])]
    pub json: bool,
    /// Show each line's virtual time after its `tN`, and each lease's deadline where a fetch
    /// issues it or a request names it (the deadline its holder knows):
    /// `t4  [32000 ms] worker A tries ACK L1 (deadline 30000 ms) → rejected (stale_lease)`;
    /// `t0  [0 ms] worker A fetches event E1 → lease L1 (deadline 30000 ms)`. An expiry told
    /// after its deadline (a lazy broker's) adds `(deadline N ms)`. Times are the run's
    /// virtual milliseconds. Without it the timeline is unchanged.
    #[arg(long, conflicts_with = "svg")]
    pub times: bool,
    /// The broker under test: `pure`, `embedded` (`fenced` only), `redis` (the
    /// `redis-streams` variants), `postgres` (`pg-visibility`, `pg-fenced`), `jetstream`
    /// (`jetstream`), `rabbitmq` (`rabbitmq`, `rabbitmq-channel`), or one a suite registered
    /// (`cli::main_with`).
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The backend's server (`--url URL`, `--spawn`).
    #[command(flatten)]
    pub server: crate::cmd::backends::ServerArgs,
}

/// Runs the command.
pub fn run(args: Args, context: &Context) -> CmdResult {
    if args.json {
        let replay = crate::cmd::replay::Args {
            file: args.file,
            json: true,
            times: args.times,
            backend: args.backend,
            server: args.server,
        };
        return crate::cmd::replay::run(replay, context);
    }
    let backend = context.select(&args.backend, &args.server)?;
    match &args.svg {
        Some(out) => draw(&args, &backend, out),
        None => print(&args, &backend),
    }
}

/// Prints the timeline (its lines `--lines`), then the violations.
fn print(args: &Args, backend: &BackendKind) -> CmdResult {
    // A seeded run's timeline streams as the run tells it.
    let out = StdoutTimeline::new();
    let story = match &args.lines {
        Some(lines) => Story::StreamedLines(out, lines.clone()),
        None => Story::Streamed(out),
    };
    let style = crate::cmd::replay::style(args.times);
    let seeded = record_if_seeded(&args.file, backend, &story, style)?;
    if let Some((scenario, outcome)) = seeded {
        for violation in streamed_violations(&outcome) {
            println!("{violation}");
        }
        let shown = outcome.streamed.as_ref().map_or(0, |s| s.lines);
        lines_shown(&args.file.display().to_string(), args.lines.as_ref(), shown)?;
        return Ok(said_mismatches(&check_expect(&scenario, &outcome)));
    }
    let replay = run_script(&load(&args.file)?, backend)?;
    for line in timeline_lines(&replay, style, args.lines.clone())? {
        println!("{line}");
    }
    Ok(said_mismatches(&replay.mismatches))
}

/// Prints each way the run differs from the file's `[expect]`, as `replay` words it: a file
/// that does not match exits 1 and says why.
fn said_mismatches(mismatches: &[String]) -> Status {
    for mismatch in mismatches {
        println!("mismatch: {mismatch}");
    }
    Status::held(mismatches.is_empty())
}

/// Draws the timeline (a stretch of it) into `out`.
fn draw(args: &Args, backend: &BackendKind, out: &Path) -> CmdResult {
    let name = args.file.display().to_string();
    let in_file = |e: String| UserError(format!("{name}: {e}"));
    let drawable = match seeded_setup(&args.file, backend)? {
        Some((scenario, setup, kind)) => {
            let drawn = crate::cmd::sim::progress::draw_seeded(&setup, &kind, args.lines.clone())
                .map_err(in_file)?;
            Drawable::seeded(scenario, drawn, &name)
        }
        None => {
            let script = load(&args.file)?;
            let replay = run_script(&script, backend)?;
            Drawable::scripted(&script, replay, &name, args.lines.clone())?
        }
    };
    let command = format!(
        "leasehold timeline {name} --svg {}{}",
        out.display(),
        backend.flags()
    );
    let drawing = Drawing {
        trace: &drawable.trace,
        stretch: drawable.stretch.as_ref(),
        title: &drawable.title,
        subtitle: drawable.subtitle,
        command,
        lines: args.lines.clone(),
    };
    for line in drawing.write(out)? {
        println!("{line}");
    }
    Ok(said_mismatches(&drawable.mismatches))
}
