//! `leasehold replay FILE`: re-runs a scenario, prints its timeline, checks its expectations.
//!
//! Exit status (docs/cli.md): 0 when the run matched the file (every step's `expect` and the
//! `[expect]` block — a file expecting `violated = "I1"` that reproduces it matched); 1 when it
//! did not (the output names the step or expectation); 2 when the file cannot be read or parsed.

use crate::cmd::backends::Context;
use crate::cmd::redis::RedisArgs;
use crate::status::{CmdResult, Status, UserError};
use leasehold_sim::parse;
use leasehold_sim::script::{Replay, Script};
use leasehold_sim::seeded::BackendKind;
use std::path::{Path, PathBuf};

/// Arguments of `leasehold replay`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario file (TOML).
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Show each line's virtual time after its `tN`, and each lease's deadline where a fetch
    /// issues it or a request names it (the deadline its holder knows):
    /// `t4  [32000 ms] worker A tries ACK L1 (deadline 30000 ms) → rejected (stale_lease)`;
    /// `t0  [0 ms] worker A fetches event E1 → lease L1 (deadline 30000 ms)`. An expiry told
    /// after its deadline (a lazy broker's) adds `(deadline N ms)`. Times are the run's
    /// virtual milliseconds. Without it the timeline is unchanged.
    #[arg(long)]
    pub times: bool,
    /// The broker under test: `pure` (the reference state machine), `embedded` (the
    /// in-process thread-safe broker; `fenced` only) `redis` (a Redis server; the
    /// `redis-streams` variants only), `postgres` (a PostgreSQL server; `pg-visibility`,
    /// `pg-fenced`), or one a suite registered (`cli::main_with`).
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The Redis server (with `--backend redis`).
    #[command(flatten)]
    pub redis: RedisArgs,
    /// The PostgreSQL server (with `--backend postgres`).
    #[command(flatten)]
    pub postgres: crate::cmd::postgres::PostgresArgs,
}

/// Reads and parses a scenario file; any failure is a one-line user error.
pub fn load(path: &Path) -> Result<Script, UserError> {
    let name = path.display().to_string();
    let src = std::fs::read_to_string(path)
        .map_err(|e| UserError(format!("{name}: cannot read: {e}")))?;
    let script = parse::parse(&src, &name).map_err(|e| UserError(e.to_string()))?;
    if script.steps.is_empty() {
        return Err(UserError(format!(
            "{name}: a seeded scenario (no [[step]]) is replayed by the simulator, which this build does not include"
        )));
    }
    Ok(script)
}

/// Runs `script` on `backend` (the executor is generic over `Backend`); an error names the
/// file.
pub fn run_on(script: &Script, backend: &BackendKind) -> Result<Replay, UserError> {
    backend
        .run_script(script)
        .map_err(|e| UserError(format!("{}: {e}", script.file)))
}

/// The timeline's style asked for: `--times`.
pub fn style(times: bool) -> leasehold_sim::timeline::Style {
    leasehold_sim::timeline::Style { times }
}

/// Runs the command.
pub fn run(args: Args, context: &Context) -> CmdResult {
    let backend = context.select(&args.backend, &args.redis, &args.postgres)?;
    // A seeded file (a simulator finding) replays through the simulator.
    let style = style(args.times);
    let seeded = crate::cmd::sim::replay_if_seeded_styled(&args.file, args.json, &backend, style)?;
    if let Some(status) = seeded {
        return Ok(status);
    }
    let script = load(&args.file)?;
    let mut replay = run_on(&script, &backend)?;
    if args.json {
        println!("{}", leasehold_front::replay::json(&replay, style));
    } else {
        leasehold_front::replay::restyle(&mut replay, style);
        let command = format!("leasehold replay {}{}", replay.file, backend.flags());
        print!("{}", replay.text_reproduced_by(&command));
    }
    Ok(Status::held(replay.matched))
}
