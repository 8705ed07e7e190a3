//! [`Redis`]: the Redis backend as a registered value ([`BackendFactory`]) carrying where its
//! runs go — a server someone else runs, at a URL, or private `redis-server` processes this
//! value spawns (AOF on, `appendfsync always`), which a broker restart kills and restarts.

use crate::backend::{check_config, RedisBackend};
use crate::conn::{ping, redacted, restart_refusal, Target};
use crate::server::ServerPool;
use leasehold_model::{Backend, BackendFactory, BrokerConfig};

/// The server the command line uses unless told otherwise.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The Redis backend, registered as `redis`, with where its runs go.
#[derive(Debug)]
pub enum Redis {
    /// A server someone else runs: each run uses its own key prefix there and deletes its
    /// keys at the end; a broker restart is refused (it would have to restart that server).
    Url(String),
    /// Private servers, one per concurrent run, started on demand and stopped by
    /// [`BackendFactory::shutdown`].
    Spawn(ServerPool),
}

impl Redis {
    /// Runs go to the server at `url`.
    pub fn url(url: impl Into<String>) -> Redis {
        Redis::Url(url.into())
    }

    /// Runs go to private `redis-server` processes.
    pub fn spawn() -> Redis {
        Redis::Spawn(ServerPool::new())
    }

    /// A fresh Redis backend for `config` on this value's server.
    pub fn backend(&self, config: &BrokerConfig) -> Result<RedisBackend, String> {
        check_config(config)?;
        let target = match self {
            Redis::Url(url) => Target::Url(url.clone()),
            Redis::Spawn(pool) => Target::Pooled(pool.checkout()?),
        };
        RedisBackend::new(config, target)
    }
}

impl BackendFactory for Redis {
    fn name(&self) -> &str {
        "redis"
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(self.backend(config)?))
    }

    fn prepare(&self) -> Result<(), String> {
        match self {
            // Start one now: a missing redis-server is a usage error, not a panic mid-run.
            Redis::Spawn(pool) => pool.checkout().map(drop).map_err(|e| {
                format!("--backend redis --redis-spawn: {e} (install redis-server, or use --redis-url)")
            }),
            Redis::Url(url) => ping(url).map_err(|e| {
                format!("--backend redis: {e} (start one with 'redis-server --port 6379', or pass --redis-url URL or --redis-spawn)")
            }),
        }
    }

    fn restarts_refused(&self) -> Option<String> {
        match self {
            Redis::Url(url) => Some(restart_refusal(url)),
            Redis::Spawn(_) => None,
        }
    }

    fn flags(&self) -> String {
        match self {
            Redis::Spawn(_) => " --backend redis --redis-spawn".to_string(),
            Redis::Url(url) if url != DEFAULT_URL => {
                format!(" --backend redis --redis-url {}", redacted(url))
            }
            Redis::Url(_) => " --backend redis".to_string(),
        }
    }

    fn describe(&self) -> Option<String> {
        Some(match self {
            Redis::Spawn(pool) => format!(
                "redis: private redis-server processes (AOF, appendfsync always), {} broker restarts (SIGKILL + restart)",
                pool.restarts()
            ),
            Redis::Url(url) => format!(
                "redis: {}, each run under its own key prefix, keys deleted",
                redacted(url)
            ),
        })
    }

    fn at_url(&self, url: &str) -> Result<std::sync::Arc<dyn BackendFactory>, String> {
        Ok(std::sync::Arc::new(Redis::url(url)))
    }

    fn spawned(&self) -> Result<std::sync::Arc<dyn BackendFactory>, String> {
        Ok(std::sync::Arc::new(Redis::spawn()))
    }

    fn shutdown(&self) {
        if let Redis::Spawn(pool) = self {
            pool.shutdown();
        }
    }
}
