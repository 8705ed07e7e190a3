//! `leasehold shrink FILE`: minimises a failing seeded scenario while it still breaks the same
//! invariant, writes the result beside the input (never overwriting) and prints what shrank.

use crate::cli::{CmdResult, Status, UserError};
use crate::cmd::sim::{load_scenario, load_seeded_file};
use crate::files;
use leasehold_model::Invariant;
use leasehold_sim::seeded::seeded_file::{run_setup, scenario_of, to_toml};
use leasehold_sim::seeded::shrink::{self, size};
use std::path::PathBuf;

/// Arguments of `leasehold shrink`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The failing seeded scenario (as `leasehold sim` writes them).
    pub file: PathBuf,
    /// Bound on the runs tried.
    #[arg(long, default_value_t = 500)]
    pub runs_max: u64,
    /// The broker: `pure`, `embedded` or `redis`.
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The Redis server (with `--backend redis`).
    #[command(flatten)]
    pub redis: crate::cmd::redis::RedisArgs,
    /// Where to write the result (default: beside the input).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args) -> CmdResult {
    let name = args.file.display().to_string();
    let backend = crate::cmd::sim::backend_kind(&args.backend)?;
    if args.backend == "redis" {
        crate::cmd::redis::configure(&args.redis)?;
    }
    let scenario = load_scenario(&args.file)?;
    if scenario.seed.is_none() {
        return Err(UserError(format!(
            "{name}: only seeded scenarios (seed = N) can be shrunk; a scripted one is already explicit"
        )));
    }
    let (_, setup) = load_seeded_file(&args.file)?;
    backend
        .check(&setup)
        .map_err(|e| UserError(format!("{name}: {e}")))?;
    if args.backend == "redis" {
        crate::cmd::redis::refuse_restarts(crate::cmd::redis::plan_restarts(&setup.faults))
            .map_err(|e| UserError(format!("{name}: {e}")))?;
    }
    let wanted = scenario.expect.as_ref().and_then(|e| e.violated.clone());
    let target = match &wanted {
        Some(id) => Invariant::parse(id)
            .ok_or_else(|| UserError(format!("{name}: expect.violated: unknown '{id}'")))?,
        None => {
            let outcome = run_setup(&setup, backend, false);
            match outcome.violations.first() {
                Some(v) => v.invariant,
                None => {
                    println!("{name}: every invariant holds; nothing to shrink");
                    return Ok(Status::Failed);
                }
            }
        }
    };
    if !shrink::breaks(&setup, backend, target) {
        println!("{name}: the run does not break {target}; nothing to shrink");
        return Ok(Status::Failed);
    }
    let shrunk = shrink::shrink(&setup, backend, target, args.runs_max);
    println!(
        "shrinking {name} (seed {}) while it breaks {target}: {} runs",
        setup.seed, shrunk.runs
    );
    for change in &shrunk.changes {
        println!("  {change}");
    }
    println!("size {} → {}", size(&setup), size(&shrunk.setup));
    let note = format!(
        "shrunk from {name}: {}",
        if shrunk.changes.is_empty() {
            "nothing could be removed".to_string()
        } else {
            shrunk.changes.join(", ")
        }
    );
    let result = scenario_of(&shrunk.setup, Some(target.id()), Some(note));
    let dir = args.out.clone().unwrap_or_else(|| {
        args.file
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
    });
    let stem = args
        .file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scenario");
    let path = files::write_new(
        &dir,
        &format!("{stem}-shrunk"),
        "toml",
        to_toml(&result).as_bytes(),
    )?;
    println!("wrote {}", path.display());
    Ok(Status::Ok)
}
