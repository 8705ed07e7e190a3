//! The backends a command can run on, passed down from [`crate::cli::main_with`] as a value:
//! the stock ones (`pure`, `embedded`, `redis`, `postgres`) and those a suite registers with its own build
//! of the command line. `--backend NAME` of every command selects one of them.

use crate::cmd::postgres::PostgresArgs;
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
/// resources — private Redis and PostgreSQL servers — are released when the command ends, also on a panic).
#[derive(Clone)]
pub struct Context {
    backends: Backends,
    selected: Arc<Mutex<Vec<BackendKind>>>,
}

impl Context {
    /// The stock backends (`pure`, `embedded`, `redis`, `postgres` and `jetstream` at their
    /// default servers), then
    /// `kinds` and `checked` (which may replace a stock one by name).
    pub fn new(kinds: &[BackendKind], checked: &[CheckedBackend]) -> Context {
        let mut backends = Backends::new().with(BackendKind::new(Embedded));
        #[cfg(feature = "redis")]
        {
            backends = backends.with(BackendKind::new(leasehold_redis::Redis::url(
                leasehold_redis::DEFAULT_URL,
            )));
        }
        #[cfg(feature = "postgres")]
        {
            backends = backends.with(BackendKind::new(leasehold_postgres::Postgres::url(
                leasehold_postgres::DEFAULT_URL,
            )));
        }
        #[cfg(feature = "jetstream")]
        {
            backends = backends.with(BackendKind::new(leasehold_jetstream::JetStream::url(
                leasehold_jetstream::DEFAULT_URL,
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

    /// The backend `--backend name` selects, configured by the server flags (Redis's,
    /// Postgres's) and ready to run ([`BackendKind::prepare`]: a server answers). A backend's
    /// flags beside another backend would go unused: given, they are refused by name. Errors
    /// are one line (exit 2).
    pub fn select(
        &self,
        name: &str,
        redis: &RedisArgs,
        postgres: &PostgresArgs,
    ) -> Result<BackendKind, UserError> {
        let redis = crate::cmd::redis::configured(name, redis)?;
        let postgres = crate::cmd::postgres::configured(name, postgres)?;
        let kind = match redis.or(postgres) {
            Some(kind) => kind,
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

    /// Releases what the selected backends hold (stops private servers).
    pub fn shutdown(&self) {
        let selected = self.selected.lock().unwrap_or_else(|e| e.into_inner());
        for kind in selected.iter() {
            kind.shutdown();
        }
    }
}

/// Refuses the flags of backend `own` (`given`: the first one given, if any) beside another
/// `backend`, where they would go unused; one line (exit 2).
pub fn refuse_flags_beside(own: &str, backend: &str, given: Option<&str>) -> Result<(), UserError> {
    match given {
        Some(flag) if backend != own => Err(UserError(format!(
            "{flag}: only with --backend {own} (this run's backend is '{backend}')"
        ))),
        _ => Ok(()),
    }
}

/// The first words of the panic a server-backed backend raises when its server stops
/// answering in the middle of a run.
const LOST_SERVER: [&str; 2] = ["backend redis", "backend postgres"];

/// A server (Redis, PostgreSQL) that stops answering in the middle of a run (it died, was
/// stopped, or its connection broke) ends the command with one line and exit status 2, as any
/// input the run cannot proceed with: the backend reports it by panicking with a message that
/// starts with `backend redis` or `backend postgres`, from whichever thread met it. Other
/// panics keep the default report.
///
/// A campaign's threads may all meet the lost server at once: the first to report it says its
/// line, releases what the selected backends hold and ends the process; the others wait for
/// that end, so the error stays one line.
pub fn lost_server_is_an_error(context: Context) {
    let reporting = std::sync::atomic::AtomicBool::new(false);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match crate::status::panic_message(info) {
            Some(message) if LOST_SERVER.iter().any(|p| message.starts_with(p)) => {
                if reporting.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    loop {
                        std::thread::park();
                    }
                }
                let line = message.lines().next().unwrap_or(message);
                eprintln!("leasehold: error: {line}");
                context.shutdown();
                std::process::exit(2);
            }
            _ => default(info),
        }
    }));
}
