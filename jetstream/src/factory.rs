//! [`JetStream`]: the JetStream backend as a registered value ([`BackendFactory`]) carrying
//! where its runs go — a server someone else runs, at a URL, or private `nats-server -js`
//! processes this value starts, which a broker restart stops cleanly and starts again.

use crate::backend::{check_config, JsBackend};
use crate::conn::{ping, redacted, restart_refusal, Target};
use crate::server::ServerPool;
use leasehold_model::{Backend, BackendFactory, BrokerConfig};
use std::sync::Arc;

/// The server the command line uses unless told otherwise.
pub const DEFAULT_URL: &str = "nats://127.0.0.1:4222";

/// The JetStream backend, registered as `jetstream`, with where its runs go.
#[derive(Debug)]
pub enum JetStream {
    /// A server someone else runs: each run creates its own stream there and deletes it at the
    /// end; a broker restart is refused (it would have to restart that server).
    Url(String),
    /// Private servers, one per concurrent run, started on demand and stopped by
    /// [`BackendFactory::shutdown`].
    Spawn(ServerPool),
}

impl JetStream {
    /// Runs go to the server at `url`.
    pub fn url(url: impl Into<String>) -> JetStream {
        JetStream::Url(url.into())
    }

    /// Runs go to private nats-servers.
    pub fn spawn() -> JetStream {
        JetStream::Spawn(ServerPool::new())
    }

    /// A fresh JetStream backend for `config` on this value's server.
    pub fn backend(&self, config: &BrokerConfig) -> Result<JsBackend, String> {
        check_config(config)?;
        let target = match self {
            JetStream::Url(url) => Target::Url(url.clone()),
            JetStream::Spawn(pool) => Target::Pooled(Arc::new(pool.checkout()?)),
        };
        JsBackend::new(config, target)
    }
}

impl BackendFactory for JetStream {
    fn name(&self) -> &str {
        "jetstream"
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(self.backend(config)?))
    }

    fn prepare(&self) -> Result<(), String> {
        match self {
            JetStream::Spawn(pool) => pool.checkout().map(drop).map_err(|e| {
                format!("--backend jetstream (private servers): {e} (install nats-server)")
            }),
            JetStream::Url(url) => ping(url).map_err(|e| {
                format!("--backend jetstream: {e} (start nats-server -js, or use private servers)")
            }),
        }
    }

    fn restarts_refused(&self) -> Option<String> {
        match self {
            JetStream::Url(url) => Some(restart_refusal(url)),
            JetStream::Spawn(_) => None,
        }
    }

    fn flags(&self) -> String {
        match self {
            JetStream::Spawn(_) => " --backend jetstream --spawn".to_string(),
            JetStream::Url(url) if url != DEFAULT_URL => {
                format!(" --backend jetstream --url {}", redacted(url))
            }
            JetStream::Url(_) => " --backend jetstream".to_string(),
        }
    }

    fn describe(&self) -> Option<String> {
        Some(match self {
            JetStream::Spawn(pool) => format!(
                "jetstream: {} private nats-server(s), {} broker restarts (clean stop + start), \
                 {} consumer states emptied by a stop and put back",
                pool.started(),
                pool.restarts(),
                crate::stop::states_put_back()
            ),
            JetStream::Url(url) => format!(
                "jetstream: {}, each run on its own stream, deleted at the end",
                redacted(url)
            ),
        })
    }

    fn at_url(&self, url: &str) -> Result<Arc<dyn BackendFactory>, String> {
        Ok(Arc::new(JetStream::url(url)))
    }

    fn spawned(&self) -> Result<Arc<dyn BackendFactory>, String> {
        Ok(Arc::new(JetStream::spawn()))
    }

    fn shutdown(&self) {
        if let JetStream::Spawn(pool) = self {
            pool.shutdown();
        }
    }
}
