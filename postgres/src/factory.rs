//! [`Postgres`]: the PostgreSQL backend as a registered value ([`BackendFactory`]) carrying
//! where its runs go — a server someone else runs, at a URL, or private servers this value
//! starts (`initdb` in a temporary folder, `fsync` on), which a broker restart shuts down at
//! once and starts again.

use crate::backend::{check_config, PgBackend};
use crate::conn::{ping, redacted, restart_refusal, Target};
use crate::server::ServerPool;
use leasehold_model::{Backend, BackendFactory, BrokerConfig};
use std::sync::Arc;

/// The server the command line uses unless told otherwise.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The PostgreSQL backend, registered as `postgres`, with where its runs go.
#[derive(Debug)]
pub enum Postgres {
    /// A server someone else runs: each run creates its own schema there and drops it at the
    /// end; a broker restart is refused (it would have to restart that server).
    Url(String),
    /// Private servers, one per concurrent run, started on demand and stopped by
    /// [`BackendFactory::shutdown`].
    Spawn(ServerPool),
}

impl Postgres {
    /// Runs go to the server at `url`.
    pub fn url(url: impl Into<String>) -> Postgres {
        Postgres::Url(url.into())
    }

    /// Runs go to private PostgreSQL servers.
    pub fn spawn() -> Postgres {
        Postgres::Spawn(ServerPool::new())
    }

    /// A fresh Postgres backend for `config` on this value's server.
    pub fn backend(&self, config: &BrokerConfig) -> Result<PgBackend, String> {
        check_config(config)?;
        let target = match self {
            Postgres::Url(url) => Target::Url(url.clone()),
            Postgres::Spawn(pool) => Target::Pooled(Arc::new(pool.checkout()?)),
        };
        PgBackend::new(config, target)
    }
}

impl BackendFactory for Postgres {
    fn name(&self) -> &str {
        "postgres"
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(self.backend(config)?))
    }

    fn prepare(&self) -> Result<(), String> {
        match self {
            // Start one now: a missing PostgreSQL is a usage error, not a panic mid-run.
            Postgres::Spawn(pool) => pool.checkout().map(drop).map_err(|e| {
                format!("--backend postgres --postgres-spawn: {e} (install postgresql, or use --postgres-url)")
            }),
            Postgres::Url(url) => ping(url).map_err(|e| {
                format!("--backend postgres: {e} (pass --postgres-url URL, or --postgres-spawn)")
            }),
        }
    }

    fn restarts_refused(&self) -> Option<String> {
        match self {
            Postgres::Url(url) => Some(restart_refusal(url)),
            Postgres::Spawn(_) => None,
        }
    }

    fn flags(&self) -> String {
        match self {
            Postgres::Spawn(_) => " --backend postgres --postgres-spawn".to_string(),
            Postgres::Url(url) if url != DEFAULT_URL => {
                format!(" --backend postgres --postgres-url {}", redacted(url))
            }
            Postgres::Url(_) => " --backend postgres".to_string(),
        }
    }

    fn describe(&self) -> Option<String> {
        Some(match self {
            Postgres::Spawn(pool) => format!(
                "postgres: {} private server(s) (fsync on), {} broker restarts (immediate shutdown + start)",
                pool.started(),
                pool.restarts()
            ),
            Postgres::Url(url) => format!(
                "postgres: {}, each run in its own schema, dropped at the end",
                redacted(url)
            ),
        })
    }

    fn at_url(&self, url: &str) -> Result<std::sync::Arc<dyn BackendFactory>, String> {
        Ok(std::sync::Arc::new(Postgres::url(url)))
    }

    fn spawned(&self) -> Result<std::sync::Arc<dyn BackendFactory>, String> {
        Ok(std::sync::Arc::new(Postgres::spawn()))
    }

    fn shutdown(&self) {
        if let Postgres::Spawn(pool) = self {
            pool.shutdown();
        }
    }
}
