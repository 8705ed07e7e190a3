//! `--backend postgres`: the flags, the server a run talks to, and the refusals.
//!
//! `--postgres-url URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) names a server
//! someone else runs: each run creates its own schema there and drops it at the end, and a
//! broker restart is refused (it would have to restart that server). `--postgres-spawn` starts
//! a private server instead (`initdb` in a temporary folder, a free loopback port, `fsync`
//! on), which a broker restart shuts down at once and starts again; it stops with the command.

use crate::cli::UserError;
use leasehold_model::{Backend, BrokerConfig};
use leasehold_postgres::{PgBackend, PgServer, Target};
use leasehold_sim::seeded::{BackendKind, Fault, FaultPlan};
use std::sync::{Arc, Mutex};

/// The default server.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The Postgres flags of `replay` and `sim`.
#[derive(clap::Args, Debug, Clone)]
pub struct PostgresArgs {
    /// With --backend postgres: the server to use (each run has its own schema, dropped at
    /// the end).
    #[arg(long, default_value = DEFAULT_URL, value_name = "URL")]
    pub postgres_url: String,
    /// With --backend postgres: start a private PostgreSQL server (initdb in a temporary
    /// folder, fsync on) instead of using --postgres-url; a broker restart then restarts it.
    #[arg(long)]
    pub postgres_spawn: bool,
}

/// Where the runs of this process go (`None` until configured).
static TARGET: Mutex<Option<Target>> = Mutex::new(None);

/// Checks the server answers (or that a private one starts) and records where runs go.
/// Errors are one line (exit 2). With another backend the flags are refused by name.
pub fn configure(backend: &str, args: &PostgresArgs) -> Result<(), UserError> {
    if backend != "postgres" {
        let given = if args.postgres_spawn {
            Some("--postgres-spawn")
        } else {
            (args.postgres_url != DEFAULT_URL).then_some("--postgres-url")
        };
        return match given {
            Some(flag) => Err(UserError(format!(
                "{flag}: only with --backend postgres (this run's backend is '{backend}')"
            ))),
            None => Ok(()),
        };
    }
    let target = if args.postgres_spawn {
        let server = PgServer::start().map_err(|e| {
            UserError(format!(
                "--backend postgres --postgres-spawn: {e} (install postgresql, or use --postgres-url)"
            ))
        })?;
        Target::Owned(Arc::new(server))
    } else {
        leasehold_postgres::ping(&args.postgres_url).map_err(|e| {
            UserError(format!(
                "--backend postgres: {e} (pass --postgres-url URL, or --postgres-spawn)"
            ))
        })?;
        Target::Url(args.postgres_url.clone())
    };
    *TARGET.lock().unwrap_or_else(|p| p.into_inner()) = Some(target);
    Ok(())
}

fn target() -> Target {
    let target = TARGET.lock().unwrap_or_else(|p| p.into_inner()).clone();
    target.unwrap_or_else(|| Target::Url(DEFAULT_URL.to_string()))
}

/// A fresh Postgres backend for `config`, on the configured server.
pub fn make(config: &BrokerConfig) -> Result<PgBackend, String> {
    leasehold_postgres::check_config(config)?;
    PgBackend::new(config, target())
}

fn make_boxed(config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
    Ok(Box::new(make(config)?))
}

/// The simulator's handle on the Postgres backend.
pub fn kind() -> BackendKind {
    BackendKind::Other {
        name: "postgres",
        make: make_boxed,
    }
}

/// Refuses a run with broker restarts on a server this process did not start (one line).
pub fn refuse_restarts(restarts: Option<String>) -> Result<(), UserError> {
    match (restarts, target()) {
        (Some(what), Target::Url(url)) => Err(UserError(format!(
            "--backend postgres: {what}, and {}",
            leasehold_postgres::restart_refusal(&url)
        ))),
        _ => Ok(()),
    }
}

/// Describes the broker restarts a fault plan can make, if any.
pub fn plan_restarts(plan: &FaultPlan) -> Option<String> {
    let ratio = plan.ratio(Fault::BrokerRestart);
    (!ratio.is_zero())
        .then(|| format!("the fault plan has broker restarts (broker_restart {ratio})"))
}

/// A server that stops answering mid-run ends the command with one line and exit status 2:
/// the backend panics with a message that starts with `backend postgres`. Other panics go to
/// the hook installed before this one.
pub fn lost_server_is_an_error() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match crate::cli::panic_message(info) {
            Some(message) if message.starts_with("backend postgres") => {
                let line = message.lines().next().unwrap_or(message);
                eprintln!("leasehold: error: {line}");
                shutdown();
                std::process::exit(2);
            }
            _ => previous(info),
        }
    }));
}

/// Stops the private server (`--postgres-spawn`) once no run holds it; call when the command
/// ends.
pub fn shutdown() {
    if let Ok(mut target) = TARGET.try_lock() {
        target.take();
    }
}
