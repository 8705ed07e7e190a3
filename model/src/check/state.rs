//! The model's state and actions: the broker and the oracle (the real ones), the workers, the
//! settle requests in flight, and the budgets used so far.

use crate::broker::Broker;
use crate::check::config::Budgets;
use crate::oracle::{Issuance, Oracle};
use crate::types::{Lease, Seq};

/// One worker, as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Worker {
    /// Ready to fetch.
    Idle,
    /// Holds a lease; its handler has not run yet.
    Holding {
        /// The oracle's name for the lease.
        issuance: Issuance,
        /// The worker's copy of the lease.
        lease: Lease,
    },
    /// Sent a settle (or renew) for its lease and waits for the reply.
    Waiting {
        /// The oracle's name for the lease.
        issuance: Issuance,
        /// The worker's copy of the lease.
        lease: Lease,
        /// The request it waits on (index into the model's table of operations).
        op: u8,
    },
    /// Crashed; it lost everything but its in-flight requests, which live on in the network.
    Crashed,
}

/// A settle or renew request in flight. It names no worker: the reply goes to whichever worker
/// waits on this (issuance, op), and each issuance was handed to exactly one worker. So the
/// state stays a function of the workers' multiset (see [`State`]'s symmetry).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Msg {
    /// The oracle's name for the lease the request carries.
    pub issuance: Issuance,
    /// The lease as the worker sent it.
    pub lease: Lease,
    /// Index into the model's table of operations.
    pub op: u8,
}

/// Bits of [`State::seen`]: things that happened on the way to a state (for the `sometimes`
/// properties).
pub mod seen {
    /// A stale settle reached the broker and was rejected.
    pub const STALE_REJECTED: u8 = 1;
    /// A worker saw an ambiguous settle result (lost reply or dropped request).
    pub const AMBIGUOUS: u8 = 2;
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The broker (the model crate's state machine, not a copy).
    pub broker: Broker,
    /// The oracle's ghost bookkeeping and the violations found.
    pub oracle: Oracle,
    /// Worker `i`'s state (sorted in the symmetry representative).
    pub workers: Vec<Worker>,
    /// Requests in flight: a multiset kept as a sorted vector.
    pub in_flight: Vec<Msg>,
    /// Budgets used so far.
    pub used: Budgets,
    /// [`seen`] bits.
    pub seen: u8,
}

impl State {
    /// Adds a request to the in-flight multiset, keeping it sorted.
    pub fn send(&mut self, msg: Msg) {
        let position = self.in_flight.partition_point(|m| *m <= msg);
        self.in_flight.insert(position, msg);
    }

    /// The index of the worker waiting on (issuance, op), if any.
    pub fn waiting_on(&self, issuance: Issuance, op: u8) -> Option<usize> {
        self.workers.iter().position(|w| {
            matches!(w, Worker::Waiting { issuance: i, op: o, .. } if *i == issuance && *o == op)
        })
    }

    /// Puts the state in the canonical form of its symmetry class. Workers are
    /// interchangeable and nothing else in the state names one (requests name their issuance;
    /// the broker and the oracle name leases), so two states are equal up to a renaming of
    /// workers exactly when their sorted worker vectors (and everything else) are equal.
    pub fn canonicalize(&mut self) {
        self.workers.sort_unstable();
    }
}

impl stateright::Representative for State {
    /// See [`State::canonicalize`].
    fn representative(&self) -> Self {
        let mut state = self.clone();
        state.canonicalize();
        state
    }
}

/// One transition of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// An idle worker fetches from a group (one lease, lowest available seq).
    Fetch {
        /// The worker.
        worker: u8,
        /// The group.
        group: u8,
    },
    /// A holding worker runs its handler with an outcome (index into the model's outcomes);
    /// the runtime sends the settle `runtime::decide` gives, if any.
    Handle {
        /// The worker.
        worker: u8,
        /// The outcome's index.
        outcome: u8,
    },
    /// A holding worker sends a renew for its lease.
    Renew {
        /// The worker.
        worker: u8,
    },
    /// The broker applies an in-flight request; the reply reaches its sender or is lost.
    Deliver {
        /// Index into the in-flight multiset.
        message: u8,
        /// The reply is lost (the broker applied the request; the sender sees `ambiguous`).
        reply_lost: bool,
    },
    /// The broker expires the lease on (group, seq).
    Expire {
        /// The group.
        group: u8,
        /// The event.
        seq: Seq,
    },
    /// A worker crashes.
    Crash {
        /// The worker.
        worker: u8,
    },
    /// A crashed worker restarts, idle.
    Restart {
        /// The worker.
        worker: u8,
    },
    /// The network drops a request; the sender sees `ambiguous`.
    Drop {
        /// Index into the in-flight multiset.
        message: u8,
    },
    /// The network duplicates a request.
    Duplicate {
        /// Index into the in-flight multiset.
        message: u8,
    },
    /// The broker restarts: durable state survives.
    BrokerRestart,
}
