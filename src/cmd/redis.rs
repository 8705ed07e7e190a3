//! `--backend redis`: the flags, the server a run talks to, and the refusals.
//!
//! `--redis-url URL` (default `redis://127.0.0.1:6379`) names a server someone else runs: the
//! run uses its own key prefix there and deletes its keys at the end, and a broker restart is
//! refused (it would have to restart that server). `--redis-spawn` starts private
//! `redis-server` processes instead (AOF on, `appendfsync always`, temporary directories), one
//! per simulator thread, which a broker restart kills and restarts; they are stopped when the
//! command ends.

use crate::cli::UserError;
use leasehold_model::{Backend, BrokerConfig};
use leasehold_redis::{RedisBackend, ServerPool, Target};
use leasehold_sim::seeded::{BackendKind, Fault, FaultPlan};
use std::sync::OnceLock;

/// The default server.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The Redis flags of `replay`, `timeline`, `sim` and `shrink`.
#[derive(clap::Args, Debug, Clone)]
pub struct RedisArgs {
    /// With --backend redis: the server to use (each run has its own key prefix and deletes
    /// its keys; nothing is flushed).
    #[arg(long, default_value = DEFAULT_URL, value_name = "URL")]
    pub redis_url: String,
    /// With --backend redis: start private redis-server processes (AOF, appendfsync always)
    /// instead of using --redis-url; a broker restart then restarts the process.
    #[arg(long)]
    pub redis_spawn: bool,
}

/// Where the runs of this process go.
enum Server {
    Url(String),
    Spawn(ServerPool),
}

static SERVER: OnceLock<Server> = OnceLock::new();

fn server() -> &'static Server {
    SERVER.get_or_init(|| Server::Url(DEFAULT_URL.to_string()))
}

/// Checks the server answers (or that `redis-server` starts) and records where runs go.
/// Errors are one line (exit 2).
///
/// With another backend the Redis flags would go unused: given, they are refused by name.
pub fn configure(backend: &str, args: &RedisArgs) -> Result<(), UserError> {
    if backend != "redis" {
        let given = if args.redis_spawn {
            Some("--redis-spawn")
        } else {
            (args.redis_url != DEFAULT_URL).then_some("--redis-url")
        };
        return match given {
            Some(flag) => Err(UserError(format!(
                "{flag}: only with --backend redis (this run's backend is '{backend}')"
            ))),
            None => Ok(()),
        };
    }
    let wanted = if args.redis_spawn {
        let pool = ServerPool::new();
        // Start one now: a missing redis-server is a usage error, not a panic mid-run.
        pool.checkout().map_err(|e| {
            UserError(format!(
                "--backend redis --redis-spawn: {e} (install redis-server, or use --redis-url)"
            ))
        })?;
        Server::Spawn(pool)
    } else {
        leasehold_redis::ping(&args.redis_url).map_err(|e| {
            UserError(format!(
                "--backend redis: {e} (start one with 'redis-server --port 6379', or pass --redis-url URL or --redis-spawn)"
            ))
        })?;
        Server::Url(args.redis_url.clone())
    };
    if SERVER.set(wanted).is_err() {
        return Err(UserError("the Redis server is configured once".to_string()));
    }
    Ok(())
}

/// The Redis flags a reproduce line needs after `--backend redis`: ` --redis-spawn`, or
/// ` --redis-url URL` for a server other than the default, its password shown as `***`
/// ([`leasehold_redis::redacted`]: the line is printed and saved into files); empty for any
/// other backend.
pub fn flags() -> String {
    match SERVER.get() {
        Some(Server::Spawn(_)) => " --redis-spawn".to_string(),
        Some(Server::Url(url)) if url != DEFAULT_URL => {
            format!(" --redis-url {}", leasehold_redis::redacted(url))
        }
        _ => String::new(),
    }
}

/// The flags that run a command on `backend` again: none for the default (`pure`), else
/// ` --backend NAME` and, for Redis, where its server was ([`flags`]).
pub fn backend_flags(backend: &str) -> String {
    match backend {
        "pure" => String::new(),
        "redis" => format!(" --backend redis{}", flags()),
        other => format!(" --backend {other}"),
    }
}

/// A Redis server that stops answering in the middle of a run (it died, was stopped, or its
/// connection broke) ends the command with one line and exit status 2, as any input the run
/// cannot proceed with: the backend reports it by panicking with a message that starts with
/// `backend redis`, from whichever thread met it. Other panics keep the default report.
///
/// A campaign's threads may all meet the lost server at once: the first to report it says its
/// line and ends the process; the others wait for that end, so the error stays one line.
pub fn lost_server_is_an_error() {
    static REPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match crate::cli::panic_message(info) {
            Some(message) if message.starts_with("backend redis") => {
                if REPORTING.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    loop {
                        std::thread::park();
                    }
                }
                let line = message.lines().next().unwrap_or(message);
                eprintln!("leasehold: error: {line}");
                shutdown();
                std::process::exit(2);
            }
            _ => default(info),
        }
    }));
}

/// Stops the private servers (`--redis-spawn`); call when the command ends.
pub fn shutdown() {
    if let Some(Server::Spawn(pool)) = SERVER.get() {
        pool.shutdown();
    }
}

/// One line about the private servers after a campaign (`--redis-spawn`), if any.
pub fn servers_line() -> Option<String> {
    match SERVER.get()? {
        Server::Spawn(pool) => Some(format!(
            "redis: private redis-server processes (AOF, appendfsync always), {} broker restarts (SIGKILL + restart)",
            pool.restarts()
        )),
        Server::Url(url) => Some(format!(
            "redis: {}, each run under its own key prefix, keys deleted",
            leasehold_redis::redacted(url)
        )),
    }
}

/// A fresh Redis backend for `config`, on the configured server.
pub fn make(config: &BrokerConfig) -> Result<RedisBackend, String> {
    leasehold_redis::check_config(config)?;
    let target = match server() {
        Server::Url(url) => Target::Url(url.clone()),
        Server::Spawn(pool) => Target::Pooled(pool.checkout()?),
    };
    RedisBackend::new(config, target)
}

fn make_boxed(config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
    Ok(Box::new(make(config)?))
}

/// The simulator's handle on the Redis backend.
pub fn kind() -> BackendKind {
    BackendKind::Other {
        name: "redis",
        make: make_boxed,
    }
}

/// Refuses a run with broker restarts on a server this process did not start (one line).
pub fn refuse_restarts(restarts: Option<String>) -> Result<(), UserError> {
    match (restarts, server()) {
        (Some(what), Server::Url(url)) => Err(UserError(format!(
            "--backend redis: {what}, and {}",
            leasehold_redis::restart_refusal(url)
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
