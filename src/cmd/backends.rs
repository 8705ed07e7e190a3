//! The backends a command can run on, passed down from `cli::main_with` as a value:
//! the stock ones (`pure`, `embedded`, `redis`) and those a suite registers with its own build
//! of the command line. `--backend NAME` of every command selects one of them.

use crate::cmd::redis::RedisArgs;
use crate::status::UserError;
use leasehold_front::{Backends, CheckedBackend};
use leasehold_model::{Backend, BackendFactory, BrokerConfig};
use leasehold_sim::seeded::BackendKind;
use std::sync::{Arc, Mutex};

/// The in-process thread-safe broker, registered as `embedded` (`fenced` only).
struct Embedded;

impl BackendFactory for Embedded {
    fn name(&self) -> &str {
        "embedded"
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(leasehold_embedded::EmbeddedBackend::new(config)?))
    }
}

/// What every command is given: the registered backends, and those a command selected (whose
/// resources — private Redis servers — are released when the command ends, also on a panic).
#[derive(Clone)]
pub struct Context {
    backends: Backends,
    selected: Arc<Mutex<Vec<BackendKind>>>,
}

impl Context {
    /// The stock backends (`pure`, `embedded`, `redis` at its default server), then
    /// `kinds` and `checked` (which may replace a stock one by name).
    pub fn new(kinds: &[BackendKind], checked: &[CheckedBackend]) -> Context {
        let mut backends = Backends::new().with(BackendKind::new(Embedded));
        #[cfg(feature = "redis")]
        {
            backends = backends.with(BackendKind::new(leasehold_redis::Redis::url(
                leasehold_redis::DEFAULT_URL,
            )));
        }
        for kind in kinds {
            backends = backends.with(kind.clone());
        }
        for broker in checked {
            backends = backends.with_checked(broker.clone());
        }
        Context {
            backends,
            selected: Arc::default(),
        }
    }

    /// The backend `--backend name` selects, configured by the Redis flags and ready to run
    /// ([`BackendKind::prepare`]: a Redis server answers). The Redis flags beside another
    /// backend would go unused: given, they are refused by name. Errors are one line (exit 2).
    pub fn select(&self, name: &str, redis: &RedisArgs) -> Result<BackendKind, UserError> {
        let kind = match crate::cmd::redis::configured(name, redis)? {
            Some(redis) => redis,
            None => self.backends.find(name)?,
        };
        kind.prepare().map_err(UserError)?;
        self.selected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(kind.clone());
        Ok(kind)
    }

    /// The broker registered for `check --backend name`.
    pub fn checked(&self, name: &str) -> Result<CheckedBackend, UserError> {
        self.backends.find_checked(name)
    }

    /// Releases what the selected backends hold (stops private Redis servers).
    pub fn shutdown(&self) {
        let selected = self.selected.lock().unwrap_or_else(|e| e.into_inner());
        for kind in selected.iter() {
            kind.shutdown();
        }
    }
}
