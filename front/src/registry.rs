//! [`Backends`]: the backends registered by name, as values — what `--backend NAME` of every
//! command selects, and what a suite's own build of the command line adds its queue to. The
//! reference broker (`pure`) is registered first; a later registration of a name replaces the
//! earlier one. Names keep their registration order (no hash order anywhere).

use crate::check::CheckedBackend;
use crate::Error;
use leasehold_sim::seeded::BackendKind;

/// Where a server-backed backend's runs go (`--url URL`, `--spawn` of the command line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Server {
    /// As the backend was registered (for Redis and PostgreSQL: their default server).
    #[default]
    Registered,
    /// The server at this URL, which someone else runs.
    Url(String),
    /// Private servers the backend starts and stops itself.
    Spawn,
}

/// The registered backends, in registration order, and those the model checker can explore
/// too ([`CheckedBackend`]).
#[derive(Clone, Debug)]
pub struct Backends {
    kinds: Vec<BackendKind>,
    checked: Vec<CheckedBackend>,
}

impl Default for Backends {
    fn default() -> Backends {
        Backends::new()
    }
}

impl Backends {
    /// The reference broker alone, as `pure`.
    pub fn new() -> Backends {
        Backends {
            kinds: vec![BackendKind::Pure],
            checked: Vec::new(),
        }
    }

    /// Registers `kind` under its name (replacing one registered before by that name).
    pub fn with(mut self, kind: BackendKind) -> Backends {
        match self.kinds.iter_mut().find(|k| k.name() == kind.name()) {
            Some(slot) => *slot = kind,
            None => self.kinds.push(kind),
        }
        self
    }

    /// Registers `broker` for every engine: the model checker (`check --backend NAME`) and,
    /// under the same name, the simulator ([`Backends::with`]).
    pub fn with_checked(mut self, broker: CheckedBackend) -> Backends {
        self.checked.retain(|b| b.name() != broker.name());
        self.checked.push(broker.clone());
        self.with(broker.kind())
    }

    /// The names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.kinds.iter().map(BackendKind::name).collect()
    }

    /// The backend registered as `name`; an unknown name is a one-line error listing the
    /// known ones.
    pub fn find(&self, name: &str) -> Result<BackendKind, Error> {
        self.kinds
            .iter()
            .find(|kind| kind.name() == name)
            .cloned()
            .ok_or_else(|| {
                Error(format!(
                    "--backend: unknown '{name}' (expected one of {})",
                    self.names().join(", ")
                ))
            })
    }

    /// The backend registered as `name`, on the server `server` names: its registered
    /// configuration, the server at a URL ([`BackendKind::at_url`]) or private servers it
    /// starts ([`BackendKind::spawned`]). A backend that takes no server refuses; every error
    /// is one line.
    pub fn find_on(&self, name: &str, server: &Server) -> Result<BackendKind, Error> {
        let kind = self.find(name)?;
        match server {
            Server::Registered => Ok(kind),
            Server::Url(url) => kind.at_url(url).map_err(Error),
            Server::Spawn => kind.spawned().map_err(Error),
        }
    }

    /// The broker registered for the model checker as `name`; an unknown name is a one-line
    /// error listing the known ones.
    pub fn find_checked(&self, name: &str) -> Result<CheckedBackend, Error> {
        if let Some(broker) = self.checked.iter().find(|b| b.name() == name) {
            return Ok(broker.clone());
        }
        let names: Vec<&str> = self.checked.iter().map(CheckedBackend::name).collect();
        Err(Error(if names.is_empty() {
            format!(
                "--backend {name}: this build of the command line checks no broker but the \
                 reference one (a suite registers its own with leasehold::cli::main_with_checked)"
            )
        } else {
            format!(
                "--backend {name}: unknown broker (expected one of: {})",
                names.join(", ")
            )
        }))
    }

    /// Releases what every registered backend holds ([`BackendKind::shutdown`]).
    pub fn shutdown(&self) {
        for kind in &self.kinds {
            kind.shutdown();
        }
    }
}
