//! The backends a command can run on, passed down from [`crate::cli::main_with`] as a value:
//! the stock ones (`pure`, `embedded`, `redis`, `postgres`, `jetstream`, `rabbitmq`) and those
//! a suite registers with its own build of the command line. `--backend NAME` of every command
//! selects one of them.

use crate::status::UserError;
use leasehold_front::{Backends, CheckedBackend, Server};
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

/// The server flags of `replay`, `timeline`, `sim`, `shrink` and `report`: where the selected
/// backend's runs go, for a backend that talks to a server (`redis`, `postgres`, or one a suite
/// registered whose factory implements [`BackendFactory::at_url`] and
/// [`BackendFactory::spawned`]). Without them, the backend as registered (Redis and PostgreSQL
/// at their default local servers).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServerArgs {
    /// The selected backend's server, run by someone else (e.g. redis://127.0.0.1:6379,
    /// postgres://postgres@127.0.0.1:5432/postgres): each run keeps to its own keys or schema
    /// and removes them at the end; a backend without a server refuses it.
    #[arg(
        long,
        value_name = "URL",
        visible_aliases = ["redis-url", "postgres-url"],
        conflicts_with = "spawn"
    )]
    pub url: Option<String>,
    /// Start private servers for the selected backend (one per simulator thread), stopped when
    /// the command ends; a broker restart then restarts the server.
    #[arg(long, visible_aliases = ["redis-spawn", "postgres-spawn"])]
    pub spawn: bool,
}

impl ServerArgs {
    /// The server these flags name.
    pub fn server(&self) -> Server {
        match (&self.url, self.spawn) {
            (_, true) => Server::Spawn,
            (Some(url), false) => Server::Url(url.clone()),
            (None, false) => Server::Registered,
        }
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
    /// The stock backends (`pure`, `embedded`, `redis`, `postgres`, `jetstream` and `rabbitmq` at their
    /// default servers), then
    /// `kinds` and `checked` (which may replace a stock one by name).
    pub fn new(kinds: &[BackendKind], checked: &[CheckedBackend]) -> Context {
        let stock = [
            BackendKind::new(Embedded),
            #[cfg(feature = "redis")]
            BackendKind::new(leasehold_redis::Redis::url(leasehold_redis::DEFAULT_URL)),
            #[cfg(feature = "postgres")]
            BackendKind::new(leasehold_postgres::Postgres::url(
                leasehold_postgres::DEFAULT_URL,
            )),
            #[cfg(feature = "jetstream")]
            BackendKind::new(leasehold_jetstream::JetStream::url(
                leasehold_jetstream::DEFAULT_URL,
            )),
            // At `LEASEHOLD_RABBITMQ_URL` when it is set, else at the default URL.
            #[cfg(feature = "rabbitmq")]
            BackendKind::new(leasehold_rabbitmq::RabbitMq::url(
                std::env::var("LEASEHOLD_RABBITMQ_URL")
                    .unwrap_or_else(|_| leasehold_rabbitmq::DEFAULT_URL.to_string()),
            )),
        ];
        let mut backends = Backends::new();
        for kind in stock.iter().chain(kinds) {
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

    /// The backend `--backend name` selects, on the server the server flags name, and ready
    /// to run ([`BackendKind::prepare`]: a server answers). Errors are one line (exit 2).
    pub fn select(&self, name: &str, server: &ServerArgs) -> Result<BackendKind, UserError> {
        let kind = self.backends.find_on(name, &server.server())?;
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

    /// Whether a panic's `message` is a selected backend's report of its lost server.
    fn lost_server(&self, message: &str) -> bool {
        let selected = self.selected.lock().unwrap_or_else(|e| e.into_inner());
        let named = |kind: &BackendKind| message.starts_with(&format!("backend {}", kind.name()));
        selected.iter().any(named)
    }

    /// Releases what the selected backends hold (stops private servers).
    pub fn shutdown(&self) {
        let selected = self.selected.lock().unwrap_or_else(|e| e.into_inner());
        for kind in selected.iter() {
            kind.shutdown();
        }
    }
}

/// A server that stops answering in the middle of a run (it died, was stopped, or its
/// connection broke) ends the command with one line and exit status 2, as any input the run
/// cannot proceed with: a backend reports it by panicking with a message that starts with
/// `backend NAME` (NAME: the selected backend's, a registered one's too), from whichever thread
/// met it. Other panics keep the default report.
///
/// A campaign's threads may all meet the lost server at once: the first to report it says its
/// line, releases what the selected backends hold and ends the process; the others wait for
/// that end, so the error stays one line.
pub fn lost_server_is_an_error(context: Context) {
    let reporting = std::sync::atomic::AtomicBool::new(false);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match crate::status::panic_message(info) {
            Some(message) if context.lost_server(message) => {
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
