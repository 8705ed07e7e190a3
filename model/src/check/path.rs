//! A counterexample replayed step by step: the states along it with a **full** oracle (which
//! keeps each violation's detail) and without canonical renumbering (so issuances keep their
//! fetch order: `L1` is the first lease issued), and what each step did — the facts the
//! simulator's scenario writer needs (`leasehold_sim::counterexample`). There is one
//! renderer of counterexamples: the scenario's replay through the simulator's timeline.
//!
//! The replay is exact: the search's canonical states differ from these only by the
//! canonical form (tested: canonicalising a replayed state gives the search's state).

use crate::broker::Timer;
use crate::check::checked::{is_settled, CheckedBroker};
use crate::check::model::{LeaseModel, MODEL_NOW_MS};
use crate::check::shortest::Counterexample;
use crate::check::state::{Action, Msg, State, Worker};
use crate::invariant::Invariant;
use crate::oracle::Issuance;
use crate::types::{GroupIx, Seq, SettleError, SettleOp};
use std::collections::BTreeMap;

/// What the sender of a request learnt about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// The broker's answer reached it.
    Reply,
    /// The reply was lost: it sees `ambiguous`.
    Lost,
    /// Nobody waits on the reply any more (the sender crashed or moved on).
    Nobody,
}

/// One step of a counterexample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `worker` fetched (group, seq) and got `lease` — or, under lazy expiry, only expired a
    /// lapsed lease (`lease` is `None`).
    Fetch {
        /// The worker (0 = A).
        worker: usize,
        /// The group.
        group: GroupIx,
        /// The event leased.
        seq: Option<Seq>,
        /// The oracle's name for the lease.
        lease: Option<Issuance>,
    },
    /// `worker`'s handler ran under `lease` and the runtime sent `sends` (or nothing).
    Handle {
        /// The worker.
        worker: usize,
        /// The lease.
        lease: Issuance,
        /// Whether the handler succeeded.
        success: bool,
        /// The settle the runtime sent.
        sends: Option<SettleOp>,
    },
    /// `worker` sent a renew of `lease`.
    Renew {
        /// The worker.
        worker: usize,
        /// The lease.
        lease: Issuance,
    },
    /// The broker applied a request of `worker` (its sender).
    Deliver {
        /// The sender.
        worker: usize,
        /// The lease the request carries.
        lease: Issuance,
        /// The lease's group.
        group: GroupIx,
        /// The lease's event.
        seq: Seq,
        /// The operation.
        op: SettleOp,
        /// The broker's true answer.
        result: Result<(), SettleError>,
        /// What the sender learnt.
        heard: Heard,
        /// Whether the sender crashed since it fetched the lease.
        sender_crashed: bool,
        /// The nack the sender sent in reaction (the runtime's classification said so).
        then_nack: bool,
    },
    /// The lease on (group, seq) ran out.
    Expire {
        /// The group.
        group: GroupIx,
        /// The event.
        seq: Seq,
        /// The lease that expired (the record's latest one).
        lease: Option<Issuance>,
        /// Whether the expiry dead-lettered the event.
        dead_lettered: bool,
    },
    /// The timed model's clock advanced by a tick; the leases whose contract deadline it
    /// reached ended.
    Tick {
        /// The leases that ended.
        expired: Vec<Issuance>,
    },
    /// `worker` crashed (and restarted, idle).
    Crash {
        /// The worker.
        worker: usize,
        /// What it was doing: holding a lease (`true`) or waiting on a reply (`false`).
        doing: Option<(Issuance, bool)>,
    },
    /// The network dropped a request of `worker`.
    Drop {
        /// The sender.
        worker: usize,
        /// The lease.
        lease: Issuance,
        /// The operation.
        op: SettleOp,
        /// Whether the sender was still waiting on it (it then sees `ambiguous`).
        heard: bool,
        /// The nack the sender sent in reaction.
        then_nack: bool,
    },
    /// The network duplicated a request of `worker`.
    Duplicate {
        /// The sender.
        worker: usize,
        /// The lease.
        lease: Issuance,
        /// The operation.
        op: SettleOp,
    },
    /// The broker restarted.
    BrokerRestart,
}

/// The states along `actions` from the initial state, with a full oracle and without
/// canonical renumbering: `states[0]` is the initial state, `states[i + 1]` the state after
/// `actions[i]`.
pub fn replay<B: CheckedBroker>(model: &LeaseModel<B>, actions: &[Action]) -> Vec<State<B>> {
    let model = model
        .clone()
        .with_symmetry(false)
        .with_partial_order(false)
        .with_late_duplicates(false);
    let mut states = vec![model.init_state(false)];
    for &action in actions {
        let mut next = states.last().expect("non-empty").clone();
        model.step(&mut next, action, false);
        states.push(next);
    }
    states
}

/// What the path told so far: who holds which lease, which lease is each record's latest.
#[derive(Default)]
struct Seen {
    owner: BTreeMap<Issuance, usize>,
    current: BTreeMap<(GroupIx, Seq), Issuance>,
    /// Each broker lease id's latest issuance (the replay's states are not renumbered).
    by_id: BTreeMap<u64, Issuance>,
    crashed_since: BTreeMap<usize, bool>,
}

/// What each step of `actions` did, over `states` = [`replay`]`(model, actions)`.
pub fn steps<B: CheckedBroker>(
    model: &LeaseModel<B>,
    actions: &[Action],
    states: &[State<B>],
) -> Vec<Step> {
    let mut seen = Seen::default();
    let mut out = Vec::new();
    for (index, &action) in actions.iter().enumerate() {
        let (before, after) = (&states[index], &states[index + 1]);
        if let Action::DuplicateDelivered {
            message,
            reply_lost,
        } = action
        {
            // Told as the duplicate, then the delivery of one copy.
            let mut copied = before.clone();
            copied.send(before.in_flight[message as usize]);
            let duplicate = Action::Duplicate { message };
            out.push(describe(model, before, &copied, duplicate, &seen));
            out.push(describe_delivery(
                model, &copied, after, message, reply_lost, &seen,
            ));
            continue;
        }
        let step = describe(model, before, after, action, &seen);
        match &step {
            Step::Fetch {
                worker,
                group,
                seq: Some(seq),
                lease: Some(lease),
            } => {
                seen.owner.insert(*lease, *worker);
                seen.crashed_since.insert(*worker, false);
                seen.current.insert((*group, *seq), *lease);
                // The replay's states are not renumbered: the worker holds the broker's id.
                if let Worker::Holding(held) = after.workers[*worker] {
                    seen.by_id.insert(u64::from(held.lease_id), *lease);
                }
            }
            Step::Deliver {
                lease,
                group,
                seq,
                op: SettleOp::Renew { .. },
                result: Ok(()),
                ..
            } => {
                seen.current.insert((*group, *seq), *lease);
            }
            Step::Crash { worker, .. } => {
                seen.crashed_since.insert(*worker, true);
            }
            _ => {}
        }
        out.push(step);
    }
    out
}

fn sender(msg: &Msg, owner: &BTreeMap<Issuance, usize>) -> usize {
    *owner
        .get(&msg.lease.issuance)
        .expect("a request's lease was fetched on the path")
}

fn lease_of(worker: &Worker) -> Option<Issuance> {
    match worker {
        Worker::Idle => None,
        Worker::Holding(lease) | Worker::Waiting(lease, _) => Some(lease.issuance),
    }
}

fn describe<B: CheckedBroker>(
    model: &LeaseModel<B>,
    before: &State<B>,
    after: &State<B>,
    action: Action,
    seen: &Seen,
) -> Step {
    let owner = &seen.owner;
    match action {
        Action::Fetch { worker, group } => {
            let lease = match &after.workers[worker as usize] {
                Worker::Holding(lease) => Some(*lease),
                _ => None,
            };
            Step::Fetch {
                worker: worker as usize,
                group: group as usize,
                seq: lease.map(|l| Seq::from(l.seq)),
                lease: lease.map(|l| l.issuance),
            }
        }
        Action::Handle { worker, outcome } => Step::Handle {
            worker: worker as usize,
            lease: lease_of(&before.workers[worker as usize]).expect("a holding worker"),
            success: model.outcome(outcome).is_success(),
            sends: model.outcome_op(outcome).map(|op| *model.op(op)),
        },
        Action::Renew { worker } => Step::Renew {
            worker: worker as usize,
            lease: lease_of(&before.workers[worker as usize]).expect("a holding worker"),
        },
        Action::Deliver {
            message,
            reply_lost,
        } => describe_delivery(model, before, after, message, reply_lost, seen),
        Action::Expire { group, seq } => {
            let (group, seq) = (group as usize, Seq::from(seq));
            // The lease whose timer time reaches: the record's latest, or an earlier one whose
            // timer outlived it (`stale-timer`).
            let mut timer: Option<Timer> = None;
            before.broker.for_each_timer(|t| {
                if timer.is_none()
                    && t.group as usize == group
                    && t.seq == seq
                    && t.deadline_ms > MODEL_NOW_MS
                {
                    timer = Some(*t);
                }
            });
            // Whether the timer's lease held the record: the broker says so when time
            // reaches it (asked of a copy).
            let held = before.broker.clone().lapse(group, seq, MODEL_NOW_MS) == Some(true);
            let lease = if held {
                seen.current.get(&(group, seq)).copied()
            } else {
                timer.and_then(|t| seen.by_id.get(&t.lease_id.0).copied())
            };
            let settled = |state: &State<B>| is_settled(state.broker.status_kind(group, seq));
            Step::Expire {
                group,
                seq,
                lease,
                dead_lettered: !settled(before) && settled(after),
            }
        }
        Action::Crash { worker } => Step::Crash {
            worker: worker as usize,
            doing: match &before.workers[worker as usize] {
                Worker::Holding(lease) => Some((lease.issuance, true)),
                Worker::Waiting(lease, _) => Some((lease.issuance, false)),
                Worker::Idle => None,
            },
        },
        Action::Drop { message } => {
            let msg = &before.in_flight[message as usize];
            let worker = sender(msg, owner);
            let heard = before.waiting_on(msg).is_some();
            Step::Drop {
                worker,
                lease: msg.lease.issuance,
                op: *model.op(msg.op),
                heard,
                then_nack: heard && sent_nack(model, after, msg, worker),
            }
        }
        Action::Duplicate { message } => {
            let msg = &before.in_flight[message as usize];
            Step::Duplicate {
                worker: sender(msg, owner),
                lease: msg.lease.issuance,
                op: *model.op(msg.op),
            }
        }
        Action::DuplicateDelivered {
            message,
            reply_lost,
        } => describe_delivery(model, before, after, message, reply_lost, seen),
        Action::BrokerRestart => Step::BrokerRestart,
        Action::Tick => {
            let live = |state: &State<B>| {
                state
                    .oracle
                    .live_deadlines()
                    .map(|(issuance, _)| issuance)
                    .collect::<Vec<_>>()
            };
            let after = live(after);
            Step::Tick {
                expired: live(before)
                    .into_iter()
                    .filter(|issuance| !after.contains(issuance))
                    .collect(),
            }
        }
    }
}

/// Whether `worker`, after the reply to `msg`, waits on the runtime's follow-up nack.
fn sent_nack<B: CheckedBroker>(
    model: &LeaseModel<B>,
    after: &State<B>,
    msg: &Msg,
    worker: usize,
) -> bool {
    matches!(&after.workers[worker], Worker::Waiting(lease, op)
        if lease.issuance == msg.lease.issuance && *op != msg.op && model.is_follow_up_nack(*op))
}

fn describe_delivery<B: CheckedBroker>(
    model: &LeaseModel<B>,
    before: &State<B>,
    after: &State<B>,
    message: u8,
    reply_lost: bool,
    seen: &Seen,
) -> Step {
    let msg = &before.in_flight[message as usize];
    let worker = sender(msg, &seen.owner);
    let mut broker = before.broker.clone();
    let request = model.request(before, msg);
    let lease = request.lease;
    let result = broker.settle(&request, MODEL_NOW_MS).map(drop);
    let waiting = before.waiting_on(msg).is_some();
    Step::Deliver {
        worker,
        lease: msg.lease.issuance,
        group: lease.group,
        seq: lease.seq,
        op: *model.op(msg.op),
        result,
        heard: match (waiting, reply_lost) {
            (false, _) => Heard::Nobody,
            (true, true) => Heard::Lost,
            (true, false) => Heard::Reply,
        },
        sender_crashed: seen.crashed_since.get(&worker).copied().unwrap_or(false),
        then_nack: waiting && sent_nack(model, after, msg, worker),
    }
}

/// One line saying what the counterexample's last state (or loop) breaks, from the full
/// oracle's detail or the broker's records.
pub fn detail<B: CheckedBroker>(cx: &Counterexample, states: &[State<B>]) -> String {
    let last = states.last().expect("non-empty");
    if let Some(v) = last
        .oracle
        .violations()
        .iter()
        .find(|v| v.invariant == cx.invariant)
    {
        return v.detail.to_string();
    }
    let unsettled = unsettled(last);
    match (cx.invariant, cx.loop_start) {
        (Invariant::I6, Some(start)) => format!(
            "steps {start}..{} form a cycle that can repeat forever while {unsettled}",
            cx.len()
        ),
        (Invariant::I6, None) => format!("no action is enabled and {unsettled}"),
        (invariant, _) => format!("{invariant} broken"),
    }
}

/// The first unsettled record of `state`, or the first group whose frontier lags.
fn unsettled<B: CheckedBroker>(state: &State<B>) -> String {
    let broker = &state.broker;
    for group in 0..broker.group_count() {
        for seq in 1..=broker.event_count() {
            let status = broker.status_kind(group, seq);
            if !is_settled(status) {
                return format!("event {seq} of group {group} is still {status:?}");
            }
        }
        let frontier = broker.frontier(group);
        if frontier != broker.event_count() {
            return format!("the frontier of group {group} is {frontier}");
        }
    }
    "every event is settled".to_string()
}
