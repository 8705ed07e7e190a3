//! [`RabbitMq`]: the RabbitMQ backend as a registered value ([`BackendFactory`]) carrying the
//! server its runs go to.

use crate::backend::{check_config, RabbitBackend};
use crate::conn::{parse, ping, redacted};
use leasehold_model::{Backend, BackendFactory, BrokerConfig};
use std::sync::Arc;

/// The server the command line uses unless told otherwise.
pub const DEFAULT_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// The RabbitMQ backend, registered as `rabbitmq`: runs go to the server at a URL, each in
/// its own exchange and queues, deleted at the end.
#[derive(Debug, Clone)]
pub struct RabbitMq {
    url: String,
}

impl RabbitMq {
    /// Runs go to the server at `url`.
    pub fn url(url: impl Into<String>) -> RabbitMq {
        RabbitMq { url: url.into() }
    }

    /// The server's URL.
    pub fn server_url(&self) -> &str {
        &self.url
    }

    /// A fresh RabbitMQ backend for `config` on this value's server.
    pub fn backend(&self, config: &BrokerConfig) -> Result<RabbitBackend, String> {
        check_config(config)?;
        RabbitBackend::new(config, &self.url)
    }
}

impl Default for RabbitMq {
    fn default() -> RabbitMq {
        RabbitMq::url(DEFAULT_URL)
    }
}

impl BackendFactory for RabbitMq {
    fn name(&self) -> &str {
        "rabbitmq"
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(self.backend(config)?))
    }

    fn prepare(&self) -> Result<(), String> {
        parse(&self.url)?;
        ping(&self.url).map_err(|e| format!("--backend rabbitmq: {e}"))
    }

    fn restarts_refused(&self) -> Option<String> {
        Some(
            "a broker restart closes every RabbitMQ channel and returns every delivery, which \
             the rabbitmq model does not describe (turn broker restarts off)"
                .to_string(),
        )
    }

    fn flags(&self) -> String {
        if self.url == DEFAULT_URL {
            " --backend rabbitmq".to_string()
        } else {
            format!(" --backend rabbitmq --url {}", redacted(&self.url))
        }
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "rabbitmq: {}, each run in its own exchange and quorum queues, deleted at the end",
            redacted(&self.url)
        ))
    }

    fn at_url(&self, url: &str) -> Result<Arc<dyn BackendFactory>, String> {
        parse(url)?;
        Ok(Arc::new(RabbitMq::url(url)))
    }

    fn spawned(&self) -> Result<Arc<dyn BackendFactory>, String> {
        Err(
            "--spawn: backend 'rabbitmq' starts no server of its own yet: start one (.ci/run \
             shows how) and pass --url amqp://…"
                .to_string(),
        )
    }
}
