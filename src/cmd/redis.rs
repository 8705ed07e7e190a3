//! `--backend redis`: the flags, and the Redis backend value they configure
//! ([`leasehold_redis::Redis`], which holds the server a run talks to).
//!
//! `--redis-url URL` (default `redis://127.0.0.1:6379`) names a server someone else runs: the
//! run uses its own key prefix there and deletes its keys at the end, and a broker restart is
//! refused (it would have to restart that server). `--redis-spawn` starts private
//! `redis-server` processes instead (AOF on, `appendfsync always`, temporary directories), one
//! per simulator thread, which a broker restart kills and restarts; they are stopped when the
//! command ends.

use crate::cmd::backends::refuse_flags_beside;
use crate::status::UserError;
#[cfg(feature = "redis")]
use leasehold_redis::DEFAULT_URL;
use leasehold_sim::seeded::BackendKind;

/// The Redis backend's default server: this build has no Redis backend (feature `redis`
/// off), so `--backend redis` is an unknown backend.
#[cfg(not(feature = "redis"))]
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

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

impl Default for RedisArgs {
    /// No Redis flag given: the default server.
    fn default() -> RedisArgs {
        RedisArgs {
            redis_url: DEFAULT_URL.to_string(),
            redis_spawn: false,
        }
    }
}

/// The Redis backend `--backend redis` and the Redis flags configure: `None` for another
/// backend, whose name must then come without Redis flags (given, they are refused by name).
pub fn configured(backend: &str, args: &RedisArgs) -> Result<Option<BackendKind>, UserError> {
    if backend != "redis" {
        let given = if args.redis_spawn {
            Some("--redis-spawn")
        } else {
            (args.redis_url != DEFAULT_URL).then_some("--redis-url")
        };
        refuse_flags_beside("redis", backend, given)?;
        return Ok(None);
    }
    Ok(redis(args))
}

/// The Redis backend the flags configure.
#[cfg(feature = "redis")]
fn redis(args: &RedisArgs) -> Option<BackendKind> {
    use leasehold_redis::Redis;
    Some(BackendKind::new(if args.redis_spawn {
        Redis::spawn()
    } else {
        Redis::url(args.redis_url.clone())
    }))
}

/// None: this build has no Redis backend.
#[cfg(not(feature = "redis"))]
fn redis(_: &RedisArgs) -> Option<BackendKind> {
    None
}
