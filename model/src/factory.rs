//! [`BackendFactory`]: a backend as a registered value. It names itself, carries its own
//! configuration (a server's address, how to spawn one) and builds a fresh broker for each run.
//! The engines, the library and the command line take backends as these values; nothing about
//! a backend lives in a process global.

use crate::backend::Backend;
use crate::broker::BrokerConfig;

/// A backend registered by value: what `--backend NAME` selects and what the library's calls
/// run on. It builds one fresh broker per run from the run's [`BrokerConfig`].
///
/// Only [`BackendFactory::name`] and [`BackendFactory::make`] are required; the other methods
/// describe resources a server-backed implementation holds (a connection target, spawned
/// server processes) and have defaults that suit an in-memory broker.
///
/// ```
/// use leasehold_model::{Backend, BackendFactory, Broker, BrokerConfig};
///
/// /// The reference broker under another name.
/// struct Again;
///
/// impl BackendFactory for Again {
///     fn name(&self) -> &str {
///         "again"
///     }
///     fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
///         Ok(Box::new(Broker::new(*config)))
///     }
/// }
///
/// assert_eq!(Again.flags(), " --backend again");
/// ```
pub trait BackendFactory: Send + Sync {
    /// The name `--backend NAME` selects it by, and that reports and file names show.
    fn name(&self) -> &str;

    /// A fresh broker for one run of `config`; an error (one line) when this backend cannot run
    /// that configuration (e.g. a variant it does not implement).
    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String>;

    /// Makes sure the backend can be used at all (a server answers, a server binary starts),
    /// once, before a command's first run; an error is one line.
    fn prepare(&self) -> Result<(), String> {
        Ok(())
    }

    /// Why this backend cannot restart its broker (a server someone else runs), if it cannot:
    /// runs whose fault plan or script restarts the broker are then refused.
    fn restarts_refused(&self) -> Option<String> {
        None
    }

    /// The command-line flags that select this backend, configuration included, for the
    /// reproducing commands printed and saved into files (` --backend NAME` by default; a
    /// secret such as a password must be shown redacted).
    fn flags(&self) -> String {
        format!(" --backend {}", self.name())
    }

    /// One line about the resources the runs used (servers, restarts), printed after a
    /// campaign; `None` for nothing to say.
    fn describe(&self) -> Option<String> {
        None
    }

    /// Releases what the backend holds (stops the server processes it spawned); called when a
    /// command ends, also on a panic.
    fn shutdown(&self) {}

    /// The same backend on the server `url` names (`--url URL` of the command line), for a
    /// backend that talks to a server someone else runs. The default refuses (one line): this
    /// backend takes no server.
    fn at_url(&self, url: &str) -> Result<std::sync::Arc<dyn BackendFactory>, String> {
        let _ = url;
        Err(format!("--url: backend '{}' takes no server", self.name()))
    }

    /// The same backend on private servers it starts and stops itself (`--spawn`), so that a
    /// broker restart can restart the server. The default refuses (one line).
    fn spawned(&self) -> Result<std::sync::Arc<dyn BackendFactory>, String> {
        Err(format!(
            "--spawn: backend '{}' starts no server of its own",
            self.name()
        ))
    }
}

/// `url` as it may be printed or saved (in a reproducing command, an error, a file): its
/// password, if it has one, shown as `***`, everything else as given. For
/// [`BackendFactory::flags`] and [`BackendFactory::describe`] of a server-backed backend.
///
/// Hidden: the userinfo password of `scheme://user:secret@host/…` (the userinfo ends at the
/// last `@` before the host, so a password holding an unescaped `@`, `:`, `/`, `?` or `#` is
/// hidden whole, never printed in part); a `pass` or `password` query parameter
/// (`redis+unix:///path?pass=secret`, `postgres://host/db?password=secret`); and, in a
/// keyword/value connection string (`host=… password=secret`, no `://`), the `password` value.
///
/// ```
/// use leasehold_model::factory::redacted_url;
///
/// assert_eq!(redacted_url("redis://app:s3cret@host:6379"), "redis://app:***@host:6379");
/// assert_eq!(redacted_url("host=db password=s3cret"), "host=db password=***");
/// ```
pub fn redacted_url(url: &str) -> String {
    const HIDDEN: &str = "***";
    let hide_pairs = |text: &str, separator: char, keys: &[&str]| -> String {
        let pairs: Vec<String> = text
            .split(separator)
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if keys.contains(&key) => format!("{key}={HIDDEN}"),
                _ => pair.to_string(),
            })
            .collect();
        pairs.join(&separator.to_string())
    };
    let Some((scheme, mut rest)) = url.split_once("://") else {
        return hide_pairs(url, ' ', &["password"]);
    };
    let mut shown = format!("{scheme}://");
    // A URL with a host (not `redis+unix:///path`): the userinfo ends at the last '@'.
    if !rest.starts_with('/') {
        if let Some(at) = rest.rfind('@') {
            match rest[..at].split_once(':') {
                Some((user, _password)) => shown += &format!("{user}:{HIDDEN}@"),
                None => shown += &rest[..=at],
            }
            rest = &rest[at + 1..];
        }
    }
    match rest.split_once('?') {
        Some((before, query)) => {
            shown + before + "?" + &hide_pairs(query, '&', &["pass", "password"])
        }
        None => shown + rest,
    }
}
