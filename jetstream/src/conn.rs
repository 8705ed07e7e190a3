//! Where a backend's server is ([`Target`]), whether one answers, and how a URL is shown.
//!
//! The engines' `Backend` methods cannot fail for I/O reasons, and a run whose server stopped
//! answering cannot be trusted, so a server error in the middle of a run is a panic whose
//! message starts with `backend jetstream` (the command line turns it into one line and exit
//! status 2). Every error the user can cause (no server, a wrong URL) is found when the backend
//! is built and returned as one line.

use crate::server::{NatsServer, PooledServer};
use std::sync::Arc;
use std::time::Duration;

/// How long connecting may take.
pub const CONNECT_WAIT_MAX: Duration = Duration::from_secs(5);

/// The server a backend talks to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A server someone else runs. Broker restarts are refused.
    Url(String),
    /// A server this process started: a broker restart restarts it.
    Owned(Arc<NatsServer>),
    /// A server lent by a pool to one run alone; it goes back when the last clone is dropped.
    Pooled(Arc<PooledServer>),
}

impl Target {
    /// The server's URL.
    pub fn url(&self) -> &str {
        match self {
            Target::Url(url) => url,
            Target::Owned(server) => server.url(),
            Target::Pooled(server) => server.url(),
        }
    }

    /// The server process, when this process started it (and so may restart it).
    pub fn server(&self) -> Option<&NatsServer> {
        match self {
            Target::Url(_) => None,
            Target::Owned(server) => Some(server),
            Target::Pooled(server) => Some(server),
        }
    }
}

/// `url` as it may be printed or saved: a password shown as `***`.
pub use leasehold_model::factory::redacted_url as redacted;

/// Why a broker restart is refused on `url` (one line; the URL [`redacted`]).
pub fn restart_refusal(url: &str) -> String {
    format!(
        "a broker restart restarts the nats-server, and the server at {} was not started by \
         leasehold (use private servers, or turn broker restarts off)",
        redacted(url)
    )
}

/// A runtime for the client: one thread, the caller's.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime for the NATS client: {e}"))
}

/// Connects to `url` (bounded by [`CONNECT_WAIT_MAX`]); the error is one line.
pub(crate) async fn connect(url: &str) -> Result<async_nats::Client, String> {
    let options = async_nats::ConnectOptions::new()
        .name("leasehold")
        .connection_timeout(CONNECT_WAIT_MAX)
        .request_timeout(Some(CONNECT_WAIT_MAX));
    let connecting = options.connect(url);
    let client = match tokio::time::timeout(CONNECT_WAIT_MAX, connecting).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => return Err(format!("nats-server at {}: {e}", redacted(url))),
        Err(_) => {
            return Err(format!(
                "nats-server at {}: no answer within {} s",
                redacted(url),
                CONNECT_WAIT_MAX.as_secs()
            ))
        }
    };
    // The connection is up once a round trip succeeds.
    match tokio::time::timeout(CONNECT_WAIT_MAX, client.flush()).await {
        Ok(Ok(())) => Ok(client),
        _ => Err(format!(
            "nats-server at {}: no answer within {} s",
            redacted(url),
            CONNECT_WAIT_MAX.as_secs()
        )),
    }
}

/// Whether a nats-server with JetStream answers at `url`; the error is one line.
pub fn ping(url: &str) -> Result<(), String> {
    let rt = runtime()?;
    rt.block_on(async {
        let client = connect(url).await?;
        let no_js = |why: String| format!("nats-server at {}: JetStream: {why}", redacted(url));
        let answer =
            tokio::time::timeout(CONNECT_WAIT_MAX, client.request("$JS.API.INFO", "".into()))
                .await
                .map_err(|_| no_js("no answer (is it started with -js?)".to_string()))?
                .map_err(|e| no_js(e.to_string()))?;
        let value: serde_json::Value =
            serde_json::from_slice(&answer.payload).map_err(|e| no_js(e.to_string()))?;
        match value.get("error") {
            Some(error) => Err(no_js(
                error["description"].as_str().unwrap_or("error").to_string(),
            )),
            None => Ok(()),
        }
    })
}
