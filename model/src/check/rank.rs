//! The ranking function behind I6 with finite budgets.
//!
//! With every budget finite (renews included), each transition must strictly decrease
//! [`rank`] in lexicographic order. The search checks this on **every transition it takes**
//! and reports the first one that does not ([`crate::check::search`]); it is an assertion
//! that fails on a model with a cycle (`--renews unbounded`, tested). When it holds on every
//! explored transition, the reachable graph is acyclic: every behaviour is finite and ends in
//! a state with no enabled action, so I6 holds iff every such terminal state is settled.
//!
//! The components, most significant first:
//! 1. budgets left (crashes, drops, duplicates, lost replies, broker restarts, renews): every
//!    fault and every renew sent uses one;
//! 2. deliveries left, Σ (max_attempts − deliveries) over every record, by the oracle's own
//!    count (which only grows; past max_attempts the state breaks I5 and is a leaf): every
//!    fetch that leases uses one;
//! 3. work left: per holding worker 8, per worker waiting on a renew 6 and per renew in flight
//!    5 (an accepted renew makes its sender hold again, and may re-arm an expired lease:
//!    11 > 8 + 2), per worker waiting on the runtime's follow-up nack and per such nack 2, per
//!    other waiting worker and other request 3 (a handler run turns 8 into 3 + 3; a failed
//!    settle that the runtime answers with a nack turns 3 + 3 into 2 + 2), plus one per
//!    expiry timer and one per timer that has not lapsed (an expiry or a fetch that fires a
//!    lapsed timer removes one).
//! 4. time left (the timed model only): Σ of how far each timer's and each live lease's
//!    deadline is ahead of now. A tick, enabled only while some deadline is ahead, lowers it;
//!    every step that raises it (a fetch, an accepted renew, a restart's re-armed timers)
//!    lowers a component above.

use crate::check::checked::CheckedBroker;
use crate::check::config::Renews;
use crate::check::model::{LeaseModel, MODEL_NOW_MS};
use crate::check::state::{State, Worker};

/// A rank: compared lexicographically.
pub type Rank = [i64; 4];

/// Work weights of the third component (see the module documentation).
const HOLDING: i64 = 8;
const WAITING_RENEW: i64 = 6;
const MSG_RENEW: i64 = 5;
const WAITING_NACK: i64 = 2;
const MSG_NACK: i64 = 2;
const WAITING_SETTLE: i64 = 3;
const MSG_SETTLE: i64 = 3;

const _: () = assert!(WAITING_RENEW + MSG_RENEW > HOLDING + 2);
const _: () = assert!(WAITING_SETTLE + MSG_SETTLE < HOLDING);
const _: () = assert!(WAITING_NACK + MSG_NACK < WAITING_SETTLE + MSG_SETTLE);

/// The rank of `state` in `model` (see the module documentation).
pub fn rank<B: CheckedBroker>(model: &LeaseModel<B>, state: &State<B>) -> Rank {
    let config = model.config();
    let mut budgets = config.budgets;
    let mut used = state.used;
    if config.renews == Renews::Unbounded {
        budgets.renews = 0;
        used.renews = 0;
    }
    let budget_left = i64::from(budgets.total()) - i64::from(used.total());
    let max = i64::from(config.max_attempts);
    let events = state.broker.event_count();
    let records = config.group_count as i64 * i64::from(events);
    let deliveries_left = max * records - state.oracle.deliveries_total(events) as i64;
    let mut work = 0;
    for worker in &state.workers {
        work += match *worker {
            Worker::Idle => 0,
            Worker::Holding(_) => HOLDING,
            Worker::Waiting(_, op) if model.is_renew(op) => WAITING_RENEW,
            Worker::Waiting(_, op) if model.is_follow_up_nack(op) => WAITING_NACK,
            Worker::Waiting(..) => WAITING_SETTLE,
        };
    }
    for msg in &state.in_flight {
        work += if model.is_renew(msg.op) {
            MSG_RENEW
        } else if model.is_follow_up_nack(msg.op) {
            MSG_NACK
        } else {
            MSG_SETTLE
        };
    }
    state.broker.for_each_timer(|timer| {
        work += 1 + i64::from(timer.deadline_ms > MODEL_NOW_MS);
    });
    // Untimed, the timers' deadlines are all far ahead or lapsed: only `work` counts them.
    let mut time_left = 0;
    if model.clock().is_some() {
        state.broker.for_each_timer(|timer| {
            time_left += timer.deadline_ms.saturating_sub(MODEL_NOW_MS) as i64;
        });
        for (_, deadline_ms) in state.oracle.live_deadlines() {
            time_left += deadline_ms.saturating_sub(MODEL_NOW_MS) as i64;
        }
    }
    [budget_left, deliveries_left, work, time_left]
}
