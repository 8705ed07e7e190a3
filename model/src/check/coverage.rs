//! Coverage of the contract: which cells of the protocol's surface a check reached.
//!
//! A "holds" is only as strong as the behaviours the configuration lets the search reach. A
//! proof with one group, handlers that only succeed or fail and no renews never runs a
//! broker's reject path, its renew path or its second group, and nothing in the `sometimes`
//! properties says so. Each [`Cell`] is one part of the surface — a request kind with a reply
//! class (an ack accepted, a nack that dead-letters, a renew refused as stale), a handler
//! outcome, an expiry, a fault meeting a lease, several groups, time — and every transition
//! that exercises one sets its bit beside the `sometimes` witnesses (a bit-or per transition,
//! outside the state). The report lists every cell; a cell the variant supports but the search
//! never reached is **not covered**, and the verdict names it: "holds (not covered: …)".
//!
//! Time is part of the protocol: the untimed model never computes a deadline and never skews
//! a worker's clock against the broker's (every timing is one `Expire` action), so its two time
//! cells are covered only by the timed model (`--time ticks`: a tick that reaches a deadline
//! the broker computed; a request carrying a skewed worker's clock).

use crate::check::config::CheckConfig;
use crate::check::state::Witness;
use crate::types::SettleOp;
use crate::variant::{Fence, Variant};
use serde::Serialize;

/// The first witness bit of the coverage cells (the low bits are the `sometimes` witnesses).
const FIRST_BIT: u32 = 8;

macro_rules! cells {
    ($( $cell:ident => $area:literal, $name:literal, $hint:literal; )*) => {
        /// One cell of the protocol's surface (see the module documentation).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Cell { $( #[doc = $name] $cell, )* }

        impl Cell {
            /// Every cell, in report order.
            pub const ALL: &'static [Cell] = &[ $( Cell::$cell, )* ];

            /// What part of the surface it belongs to: `settle`, `handler`, `expiry`, `fault`,
            /// `groups` or `time`.
            pub fn area(self) -> &'static str { match self { $( Cell::$cell => $area, )* } }

            /// Its name, as the report prints it.
            pub fn name(self) -> &'static str { match self { $( Cell::$cell => $name, )* } }

            /// What a configuration needs to reach it.
            pub fn hint(self) -> &'static str { match self { $( Cell::$cell => $hint, )* } }
        }
    };
}

cells! {
    AckAccepted => "settle", "ack accepted", "a fetch and a handler that succeeds";
    AckStale => "settle", "ack refused as stale", "an expiry before an ack lands";
    NackRedelivers => "settle", "nack accepted (attempts left)", "--max-attempts 2 and a handler that fails";
    NackDeadLetters => "settle", "nack accepted and dead-lettered", "a handler that fails on the last attempt";
    NackStale => "settle", "nack refused as stale", "an expiry before the nack lands";
    RejectDeadLetters => "settle", "reject accepted and dead-lettered", "--outcomes all";
    RejectStale => "settle", "reject refused as stale", "--outcomes all and an expiry before the reject lands";
    RenewAccepted => "settle", "renew accepted", "--renews 1";
    RenewStale => "settle", "renew refused as stale", "--renews 1 and an expiry before the renew lands";
    HandlerOk => "handler", "handler returns", "a fetch";
    HandlerError => "handler", "handler raises an error", "a fetch";
    HandlerAck => "handler", "handler raises AckMessage", "--outcomes all";
    HandlerNack => "handler", "handler raises NackMessage", "--outcomes all";
    HandlerReject => "handler", "handler raises RejectMessage", "--outcomes all";
    ExpiryRedelivers => "expiry", "lease expires (attempts left)", "--max-attempts 2";
    ExpiryDeadLetters => "expiry", "lease expires and dead-letters", "an expiry on the last attempt";
    ExpiryWithSettleInFlight => "expiry", "lease expires while its settle is in flight", "a fetch and a handler";
    ReplyLost => "fault", "settle applied, reply lost", "--lost-replies 1";
    RequestDropped => "fault", "settle request dropped", "--drops 1";
    RequestDuplicated => "fault", "settle request duplicated", "--dups 1";
    CrashHolding => "fault", "worker crashes holding a lease", "--crashes 1";
    CrashWithRequestInFlight => "fault", "worker crashes with its settle in flight", "--crashes 1";
    BrokerRestartWithLeases => "fault", "broker restarts with leased records", "--broker-restarts 1";
    SeveralGroups => "groups", "one event leased in two groups at once", "--groups 2";
    DeadlineArithmetic => "time", "a deadline computed from a clock and a lease length", "--time ticks";
    SkewedWorkerClock => "time", "a worker's clock skewed against the broker's", "--time ticks and --skew-ticks 1";
}

impl Cell {
    /// Its witness bit.
    #[inline]
    pub const fn bit(self) -> Witness {
        1 << (FIRST_BIT + self as u32)
    }

    /// Whether `variant` can reach it at all, in some configuration: a fence that checks
    /// nothing never refuses a settle as stale; a broker that never dead-letters on expiry
    /// never does; RabbitMQ has no renew, and a restart of its server is outside its models
    /// (every channel would close: docs/rabbitmq.md); leases that end with a channel have no
    /// clock in the model. A cell a variant cannot reach is not listed as "not covered".
    pub fn supported_by(self, variant: Variant) -> bool {
        let fenced = |op: SettleOp| variant.fence(&op) != Fence::None;
        let nack = SettleOp::Nack {
            delay_ms: 0,
            reason: None,
        };
        let reject = SettleOp::Reject {
            reason: crate::types::Reason::EMPTY,
        };
        match self {
            Cell::AckStale => fenced(SettleOp::Ack),
            Cell::NackStale => fenced(nack),
            Cell::RejectStale => fenced(reject),
            Cell::ExpiryDeadLetters => variant.expiry_dead_letters(),
            Cell::RenewAccepted | Cell::RenewStale => variant.renews(),
            Cell::BrokerRestartWithLeases => !variant.is_rabbitmq(),
            Cell::DeadlineArithmetic | Cell::SkewedWorkerClock => !variant.channel_scoped(),
            _ => true,
        }
    }
}

/// Every cell bit.
pub fn all_bits() -> Witness {
    Cell::ALL.iter().fold(0, |bits, cell| bits | cell.bit())
}

/// One row of the coverage table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    /// `settle`, `handler`, `expiry`, `fault`, `groups` or `time`.
    pub area: &'static str,
    /// The cell's name.
    pub cell: &'static str,
    /// Whether some transition of the search reached it.
    pub reached: bool,
    /// Whether the variant can reach it in some configuration.
    pub supported: bool,
    /// What a configuration needs to reach it (for a cell not reached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<&'static str>,
}

/// The coverage of a check: every cell, reached or not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// One row per cell, in [`Cell::ALL`]'s order.
    pub rows: Vec<Row>,
}

impl Coverage {
    /// The table for `config` from the witness bits a search saw.
    pub fn of(config: &CheckConfig, witnessed: Witness) -> Coverage {
        let rows = Cell::ALL
            .iter()
            .map(|&cell| {
                let reached = witnessed & cell.bit() != 0;
                Row {
                    area: cell.area(),
                    cell: cell.name(),
                    reached,
                    supported: cell.supported_by(config.variant),
                    needs: (!reached).then(|| cell.hint()),
                }
            })
            .collect();
        Coverage { rows }
    }

    /// The cells the variant supports that the search never reached.
    pub fn not_covered(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|row| row.supported && !row.reached)
    }

    /// How many supported cells were reached, of how many.
    pub fn reached_of_supported(&self) -> (usize, usize) {
        let supported = self.rows.iter().filter(|row| row.supported);
        let total = supported.clone().count();
        (supported.filter(|row| row.reached).count(), total)
    }

    /// `not covered: a, b, c`, or `None` when every supported cell was reached.
    pub fn not_covered_text(&self) -> Option<String> {
        let names: Vec<&str> = self.not_covered().map(|row| row.cell).collect();
        (!names.is_empty()).then(|| format!("not covered: {}", names.join(", ")))
    }
}
