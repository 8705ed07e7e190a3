//! One connection to the server, and where it goes: [`Target`].
//!
//! The engines' `Backend` methods cannot fail for I/O reasons (`publish`, `expire_due` and
//! `restart` return no `Result`), and a run whose server stopped answering cannot be trusted,
//! so a Redis error in the middle of a run is a panic naming the server and the command. Every
//! error the user can cause (no server, a wrong URL, a server that is not ours) is found when
//! the backend is built and returned as one line.

use crate::server::{PooledServer, RedisServer};
use redis::{Cmd, FromRedisValue, Pipeline, ScriptInvocation};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection attempt may take.
const CONNECT_WAIT_MAX: Duration = Duration::from_secs(5);
/// How long one reply may take (a hung server fails the run instead of hanging it).
const REPLY_WAIT_MAX: Duration = Duration::from_secs(60);

/// The server a backend talks to.
#[derive(Debug)]
pub enum Target {
    /// A server someone else runs (`--redis-url`). Broker restarts are refused.
    Url(String),
    /// A server this process started, shared: a broker restart restarts it for every user.
    Owned(Arc<RedisServer>),
    /// A server lent by a pool to this backend alone.
    Pooled(PooledServer),
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
    pub fn server(&self) -> Option<&RedisServer> {
        match self {
            Target::Url(_) => None,
            Target::Owned(server) => Some(server),
            Target::Pooled(server) => Some(server),
        }
    }
}

/// `url` as it may be printed or saved: its password, if it has one, shown as `***` (the
/// shared rule of every server-backed backend, [`leasehold_model::factory::redacted_url`]).
/// Everything the command line prints (reproduce lines, errors, the server line) and every
/// file it writes names a server this way, so a finding saved into a repository carries no
/// credential.
pub use leasehold_model::factory::redacted_url as redacted;

/// Why a broker restart is refused on `url` (one line; the URL [`redacted`]).
pub fn restart_refusal(url: &str) -> String {
    format!(
        "a broker restart restarts the redis-server process, and the server at {} was not \
         started by leasehold (use --redis-spawn, or turn broker restarts off)",
        redacted(url)
    )
}

/// Whether a Redis server answers `PING` at `url`; the error is one line.
pub fn ping(url: &str) -> Result<(), String> {
    Conn::open(url).map(drop)
}

/// A connection that panics on I/O errors (see the module documentation).
pub(crate) struct Conn {
    con: redis::Connection,
    url: String,
}

impl Conn {
    /// Connects and checks the server answers.
    pub(crate) fn open(url: &str) -> Result<Conn, String> {
        let fail =
            |e: redis::RedisError| format!("no Redis server answers at {}: {e}", redacted(url));
        let client = redis::Client::open(url).map_err(fail)?;
        let mut con = client
            .get_connection_with_timeout(CONNECT_WAIT_MAX)
            .map_err(fail)?;
        con.set_read_timeout(Some(REPLY_WAIT_MAX)).map_err(fail)?;
        con.set_write_timeout(Some(REPLY_WAIT_MAX)).map_err(fail)?;
        redis::cmd("PING").query::<String>(&mut con).map_err(fail)?;
        Ok(Conn {
            con,
            url: url.to_string(),
        })
    }

    /// The server's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Runs a command; `Err` is the server's (or the connection's) error.
    pub(crate) fn try_cmd<T: FromRedisValue>(&mut self, cmd: &Cmd) -> redis::RedisResult<T> {
        cmd.query(&mut self.con)
    }

    /// Runs a pipeline; `Err` is the server's (or the connection's) error.
    pub(crate) fn try_cmd_pipe<T: FromRedisValue>(
        &mut self,
        pipe: &Pipeline,
    ) -> redis::RedisResult<T> {
        pipe.query(&mut self.con)
    }

    /// Runs a command mid-run.
    pub(crate) fn cmd<T: FromRedisValue>(&mut self, what: &str, cmd: &Cmd) -> T {
        let result = cmd.query(&mut self.con);
        self.expect(what, result)
    }

    /// Runs a pipeline mid-run.
    pub(crate) fn pipe<T: FromRedisValue>(&mut self, what: &str, pipe: &Pipeline) -> T {
        let result = pipe.query(&mut self.con);
        self.expect(what, result)
    }

    /// Runs a script mid-run.
    pub(crate) fn script<T: FromRedisValue>(
        &mut self,
        what: &str,
        invocation: &ScriptInvocation<'_>,
    ) -> T {
        let result = invocation.invoke(&mut self.con);
        self.expect(what, result)
    }

    fn expect<T>(&self, what: &str, result: redis::RedisResult<T>) -> T {
        result.unwrap_or_else(|e| panic!("backend redis ({}): {what}: {e}", redacted(&self.url)))
    }
}
