//! Where a backend's server is ([`Target`]), connecting to it, and how a URL is shown.
//!
//! The engines' `Backend` methods cannot fail for I/O reasons (`publish`, `expire_due` and
//! `restart` return no `Result`), and a run whose server stopped answering cannot be trusted,
//! so a server error in the middle of a run is a panic whose message starts with
//! `backend postgres` (the command line turns it into one line and exit status 2). Every
//! error the user can cause (no server, a wrong URL) is found when the backend is built and
//! returned as one line.

use crate::server::{PgServer, PooledServer};
use postgres::{Client, NoTls};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection attempt may take.
const CONNECT_WAIT_MAX: Duration = Duration::from_secs(5);

/// The server a backend talks to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A server someone else runs (`--postgres-url`). Broker restarts are refused.
    Url(String),
    /// A server this process started: a broker restart restarts it.
    Owned(Arc<PgServer>),
    /// A server lent by a pool to one run alone (shared by the clones of this target); it
    /// goes back to the pool when the last clone is dropped.
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
    pub fn server(&self) -> Option<&PgServer> {
        match self {
            Target::Url(_) => None,
            Target::Owned(server) => Some(server),
            Target::Pooled(server) => Some(server),
        }
    }
}

/// `url` as it may be printed or saved: its password, if any, shown as `***` — the userinfo
/// password, a `password=` parameter, and the `password` of a keyword/value connection string
/// (the shared rule of every server-backed backend, [`leasehold_model::factory::redacted_url`]).
pub use leasehold_model::factory::redacted_url as redacted;

/// Why a broker restart is refused on `url` (one line; the URL [`redacted`]).
pub fn restart_refusal(url: &str) -> String {
    format!(
        "a broker restart restarts the PostgreSQL server, and the server at {} was not started \
         by leasehold (use --postgres-spawn, or turn broker restarts off)",
        redacted(url)
    )
}

/// Connects to `url`; the error is one line naming the server (password hidden).
pub fn connect(url: &str) -> Result<Client, String> {
    let fail = |e: postgres::Error| {
        let why = e.to_string();
        let why = why.lines().next().unwrap_or_default().to_string();
        format!("no PostgreSQL server answers at {}: {why}", redacted(url))
    };
    let mut config: postgres::Config = url.parse().map_err(fail)?;
    config.connect_timeout(CONNECT_WAIT_MAX);
    config.application_name("leasehold");
    let mut client = config.connect(NoTls).map_err(fail)?;
    client.simple_query("SELECT 1").map_err(fail)?;
    Ok(client)
}

/// Whether a server answers at `url`; the error is one line.
pub fn ping(url: &str) -> Result<(), String> {
    connect(url).map(drop)
}
