//! [`BackendKind`]: the broker a run drives, as a value. The reference broker runs as itself
//! (monomorphised, no indirection); every other backend is a registered
//! [`BackendFactory`] value that carries its own configuration and builds one broker per run.

use super::faults::{Fault, FaultPlan};
use super::run::{run, RunOptions, RunOutcome};
use super::setup::Setup;
use crate::script::{self, Op, Replay, Script};
use leasehold_model::{Backend, BackendFactory, Broker, BrokerConfig};
use std::fmt;
use std::sync::Arc;

/// Which broker a run drives: the reference broker, or a registered backend. Cloning shares
/// the backend (and whatever it holds: a server pool, a connection target).
#[derive(Clone, Default)]
pub enum BackendKind {
    /// The reference broker (`leasehold_model::Broker`), registered as `pure`.
    #[default]
    Pure,
    /// Another implementation: a value that names itself and builds one broker per run.
    Other(Arc<dyn BackendFactory>),
}

impl BackendKind {
    /// The name of the reference broker.
    pub const PURE: &'static str = "pure";

    /// A registered backend from its factory value.
    pub fn new(factory: impl BackendFactory + 'static) -> BackendKind {
        BackendKind::Other(Arc::new(factory))
    }

    /// The name used by `--backend`.
    pub fn name(&self) -> &str {
        match self {
            BackendKind::Pure => BackendKind::PURE,
            BackendKind::Other(factory) => factory.name(),
        }
    }

    /// A fresh broker of this kind for `config`, boxed (an error: it cannot run `config`).
    pub fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        match self {
            BackendKind::Pure => Ok(Box::new(Broker::new(*config))),
            BackendKind::Other(factory) => factory
                .make(config)
                .map_err(|e| format!("backend {}: {e}", factory.name())),
        }
    }

    /// The same backend on the server at `url` ([`BackendFactory::at_url`]); the reference
    /// broker, like any backend that takes no server, refuses (one line).
    pub fn at_url(&self, url: &str) -> Result<BackendKind, String> {
        match self {
            BackendKind::Pure => PureByName.at_url(url),
            BackendKind::Other(factory) => factory.at_url(url),
        }
        .map(BackendKind::Other)
    }

    /// The same backend on private servers it starts ([`BackendFactory::spawned`]); the
    /// reference broker refuses (one line).
    pub fn spawned(&self) -> Result<BackendKind, String> {
        match self {
            BackendKind::Pure => PureByName.spawned(),
            BackendKind::Other(factory) => factory.spawned(),
        }
        .map(BackendKind::Other)
    }

    /// Whether the backend can be used at all ([`BackendFactory::prepare`]).
    pub fn prepare(&self) -> Result<(), String> {
        match self {
            BackendKind::Pure => Ok(()),
            BackendKind::Other(factory) => factory.prepare(),
        }
    }

    /// Whether this backend restarts its broker when a run asks
    /// ([`BackendFactory::restarts_refused`] says why not: a server someone else runs).
    pub fn restarts(&self) -> bool {
        match self {
            BackendKind::Pure => true,
            BackendKind::Other(factory) => factory.restarts_refused().is_none(),
        }
    }

    /// Refuses broker restarts (`what` describes the ones a run would make) on a backend that
    /// cannot restart its broker ([`BackendFactory::restarts_refused`]); one line.
    pub fn refuse_restarts(&self, what: Option<String>) -> Result<(), String> {
        let BackendKind::Other(factory) = self else {
            return Ok(());
        };
        match (what, factory.restarts_refused()) {
            (Some(what), Some(why)) => Err(format!("--backend {}: {what}, and {why}", self)),
            _ => Ok(()),
        }
    }

    /// Whether this backend can run `setup`: its fault plan's restarts, and its configuration
    /// (e.g. a backend that implements one variant only).
    pub fn check(&self, setup: &Setup) -> Result<(), String> {
        if matches!(self, BackendKind::Pure) {
            return Ok(());
        }
        self.refuse_restarts(plan_restarts(&setup.faults))?;
        self.make(&setup.broker_config()).map(drop)
    }

    /// The flags that select this backend again in a reproducing command: none for the
    /// reference broker (the default), else [`BackendFactory::flags`].
    pub fn flags(&self) -> String {
        match self {
            BackendKind::Pure => String::new(),
            BackendKind::Other(factory) => factory.flags(),
        }
    }

    /// [`BackendKind::flags`], `--backend pure` included: for commands that always name
    /// their backend.
    pub fn flags_named(&self) -> String {
        match self {
            BackendKind::Pure => format!(" --backend {}", BackendKind::PURE),
            BackendKind::Other(factory) => factory.flags(),
        }
    }

    /// One line about the resources the runs used ([`BackendFactory::describe`]).
    pub fn describe(&self) -> Option<String> {
        match self {
            BackendKind::Pure => None,
            BackendKind::Other(factory) => factory.describe(),
        }
    }

    /// Releases what the backend holds ([`BackendFactory::shutdown`]).
    pub fn shutdown(&self) {
        if let BackendKind::Other(factory) = self {
            factory.shutdown();
        }
    }

    /// Runs `setup` on a fresh broker of this kind with `options`.
    ///
    /// # Panics
    /// When this kind cannot run `setup`: callers check [`BackendKind::check`] first.
    pub fn run(&self, setup: &Setup, options: &RunOptions) -> RunOutcome {
        match self {
            BackendKind::Pure => run(setup, Broker::new(setup.broker_config()), options),
            BackendKind::Other(_) => {
                let backend = self
                    .make(&setup.broker_config())
                    .unwrap_or_else(|e| panic!("{e} (it was checked first)"));
                run(setup, backend, options)
            }
        }
    }

    /// Runs a scripted scenario on a fresh broker of this kind; an error (one line, without the
    /// file's name) when this kind cannot run it.
    pub fn run_script(&self, script: &Script) -> Result<Replay, String> {
        let config = script.setup.broker_config();
        match self {
            BackendKind::Pure => Ok(script::run(script, Broker::new(config))),
            BackendKind::Other(_) => {
                let restarts = script.steps.iter().any(|s| s.op == Op::BrokerRestart);
                self.refuse_restarts(
                    restarts.then(|| "the scenario restarts the broker".to_string()),
                )?;
                Ok(script::run(script, self.make(&config)?))
            }
        }
    }
}

/// The reference broker as a factory, for the refusals [`BackendFactory`]'s defaults word.
struct PureByName;

impl BackendFactory for PureByName {
    fn name(&self) -> &str {
        BackendKind::PURE
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(Broker::new(*config)))
    }
}

/// Describes the broker restarts a fault plan can make, if any.
pub fn plan_restarts(plan: &FaultPlan) -> Option<String> {
    let ratio = plan.ratio(Fault::BrokerRestart);
    (!ratio.is_zero())
        .then(|| format!("the fault plan has broker restarts (broker_restart {ratio})"))
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BackendKind({})", self.name())
    }
}
