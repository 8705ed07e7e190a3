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
}
