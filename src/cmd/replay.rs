//! `leasehold replay FILE`: re-runs a scenario, prints its timeline, checks its expectations.
//!
//! Exit status (docs/cli.md): 0 when the run matched the file (every step's `expect` and the
//! `[expect]` block — a file expecting `violated = "I1"` that reproduces it matched); 1 when it
//! did not (the output names the step or expectation); 2 when the file cannot be read or parsed.

use crate::cmd::backends::Context;
use crate::status::{CmdResult, Status};
use leasehold_front::replay::{load, run_script};
use std::path::PathBuf;

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
    /// in-process thread-safe broker; `fenced` only), `redis` (a Redis server; the
    /// `redis-streams` variants), `postgres` (a PostgreSQL server; `pg-visibility`,
    /// `pg-fenced`), `jetstream` (a nats-server with JetStream; `jetstream`), `rabbitmq` (a
    /// RabbitMQ server; `rabbitmq`, `rabbitmq-channel`), or one a suite registered
    /// (`cli::main_with`).
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The backend's server (`--url URL`, `--spawn`).
    #[command(flatten)]
    pub server: crate::cmd::backends::ServerArgs,
}

/// The timeline's style asked for: `--times`.
pub fn style(times: bool) -> leasehold_sim::timeline::Style {
    leasehold_sim::timeline::Style { times }
}

/// Runs the command.
pub fn run(args: Args, context: &Context) -> CmdResult {
    let backend = context.select(&args.backend, &args.server)?;
    // A seeded file (a simulator finding) replays through the simulator.
    let style = style(args.times);
    let seeded = crate::cmd::sim::replay_if_seeded(&args.file, args.json, &backend, style)?;
    if let Some(status) = seeded {
        return Ok(status);
    }
    let script = load(&args.file)?;
    let mut replay = run_script(&script, &backend)?;
    if args.json {
        println!("{}", leasehold_front::replay::json(&replay, style));
    } else {
        leasehold_front::replay::restyle(&mut replay, style);
        let command = format!("leasehold replay {}{}", replay.file, backend.flags());
        print!("{}", replay.text_reproduced_by(&command));
    }
    Ok(Status::held(replay.matched))
}
