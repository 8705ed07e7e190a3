//! A counterexample as a story: what each step did, in the timeline wording of the seed
//! (`t0  worker A fetches event E1 → lease L1`), plus the facts a scenario writer needs.

use crate::check::model::LeaseModel;
use crate::check::shortest::Counterexample;
use crate::check::state::{Action, Msg, State, Worker};
use crate::oracle::Issuance;
use crate::types::{GroupIx, Seq, SettleError, SettleOp};
use std::collections::BTreeMap;

/// What the sender of a request learnt about it.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// `worker` fetched (group, seq) and got `lease`.
    Fetch {
        /// The worker (0 = A).
        worker: usize,
        /// The group.
        group: GroupIx,
        /// The event.
        seq: Seq,
        /// The oracle's name for the lease.
        lease: Issuance,
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
        /// The operation.
        op: SettleOp,
        /// The broker's true answer.
        result: Result<(), SettleError>,
        /// What the sender learnt.
        heard: Heard,
        /// Whether the sender had crashed since it sent the request.
        sender_crashed: bool,
        /// The frontier of the lease's group before and after.
        frontier: (Seq, Seq),
        /// The nack the sender sent in reaction (the runtime's classification said so).
        then_nack: bool,
    },
    /// The broker expired the lease on (group, seq).
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
    /// `worker` crashed.
    Crash {
        /// The worker.
        worker: usize,
        /// What it was doing: holding a lease (`true`) or waiting on a reply (`false`).
        doing: Option<(Issuance, bool)>,
    },
    /// `worker` restarted.
    Restart {
        /// The worker.
        worker: usize,
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

/// A worker's name: A, B, C, …
pub fn worker_name(worker: usize) -> String {
    char::from(b'A' + worker as u8).to_string()
}

/// A group's name: g1, g2, …
pub fn group_name(group: GroupIx) -> String {
    format!("g{}", group + 1)
}

/// The steps of a counterexample.
pub fn steps(model: &LeaseModel, cx: &Counterexample) -> Vec<Step> {
    let mut seen = Seen::default();
    let mut out = Vec::new();
    for (index, action) in cx.actions.iter().enumerate() {
        let (before, after) = (&cx.states[index], &cx.states[index + 1]);
        let step = describe(model, before, after, action, &seen);
        match &step {
            Step::Fetch {
                worker,
                lease,
                group,
                seq,
            } => {
                seen.owner.insert(*lease, *worker);
                seen.crashed_since.insert(*worker, false);
                seen.current.insert((*group, *seq), *lease);
            }
            Step::Deliver {
                lease,
                op: SettleOp::Renew { .. },
                result: Ok(()),
                ..
            } => {
                let (group, seq) = seen.leases[lease];
                seen.current.insert((group, seq), *lease);
            }
            Step::Crash { worker, .. } => {
                seen.crashed_since.insert(*worker, true);
            }
            _ => {}
        }
        if let Step::Fetch {
            lease, group, seq, ..
        } = &step
        {
            seen.leases.insert(*lease, (*group, *seq));
        }
        out.push(step);
    }
    out
}

/// What the path told so far: who holds which lease, which lease is each record's latest.
#[derive(Default)]
struct Seen {
    owner: BTreeMap<Issuance, usize>,
    leases: BTreeMap<Issuance, (GroupIx, Seq)>,
    current: BTreeMap<(GroupIx, Seq), Issuance>,
    crashed_since: BTreeMap<usize, bool>,
}

fn sender(msg: &Msg, owner: &BTreeMap<Issuance, usize>) -> usize {
    *owner
        .get(&msg.issuance)
        .expect("a request's lease was fetched on the path")
}

fn describe(
    model: &LeaseModel,
    before: &State,
    after: &State,
    action: &Action,
    seen: &Seen,
) -> Step {
    let owner = &seen.owner;
    let sent_nack = |msg: &Msg, worker: usize| {
        matches!(&after.workers[worker], Worker::Waiting { issuance, op, .. }
            if *issuance == msg.issuance && *op != msg.op && matches!(model.op(*op), SettleOp::Nack { .. }))
    };
    match *action {
        Action::Fetch { worker, group } => {
            let Worker::Holding { issuance, lease } = &after.workers[worker as usize] else {
                unreachable!("a fetch leaves the worker holding")
            };
            Step::Fetch {
                worker: worker as usize,
                group: group as usize,
                seq: lease.seq,
                lease: *issuance,
            }
        }
        Action::Handle { worker, outcome } => {
            let Worker::Holding { issuance, .. } = &before.workers[worker as usize] else {
                unreachable!("handle needs a holding worker")
            };
            let sends = match &after.workers[worker as usize] {
                Worker::Waiting { op, .. } => Some(*model.op(*op)),
                _ => None,
            };
            Step::Handle {
                worker: worker as usize,
                lease: *issuance,
                success: model.outcome(outcome).is_success(),
                sends,
            }
        }
        Action::Renew { worker } => {
            let Worker::Holding { issuance, .. } = &before.workers[worker as usize] else {
                unreachable!("renew needs a holding worker")
            };
            Step::Renew {
                worker: worker as usize,
                lease: *issuance,
            }
        }
        Action::Deliver {
            message,
            reply_lost,
        } => {
            let msg = &before.in_flight[message as usize];
            let worker = sender(msg, owner);
            let group = msg.lease.group;
            let mut replay = before.broker.clone();
            let request = crate::broker::SettleRequest::new(&msg.lease, *model.op(msg.op), 0);
            let result = replay
                .settle(&request, crate::check::model::MODEL_NOW_MS)
                .map(drop);
            let waiting = before.waiting_on(msg.issuance, msg.op).is_some();
            Step::Deliver {
                worker,
                lease: msg.issuance,
                op: *model.op(msg.op),
                result,
                heard: match (waiting, reply_lost) {
                    (false, _) => Heard::Nobody,
                    (true, true) => Heard::Lost,
                    (true, false) => Heard::Reply,
                },
                sender_crashed: seen.crashed_since.get(&worker).copied().unwrap_or(false),
                frontier: (before.broker.frontier(group), after.broker.frontier(group)),
                then_nack: waiting && sent_nack(msg, worker),
            }
        }
        Action::Expire { group, seq } => {
            let record_lease = seen.current.get(&(group as usize, seq)).copied();
            Step::Expire {
                group: group as usize,
                seq,
                lease: record_lease,
                dead_lettered: after
                    .broker
                    .record(group as usize, seq)
                    .is_some_and(|r| r.is_settled()),
            }
        }
        Action::Crash { worker } => Step::Crash {
            worker: worker as usize,
            doing: match &before.workers[worker as usize] {
                Worker::Holding { issuance, .. } => Some((*issuance, true)),
                Worker::Waiting { issuance, .. } => Some((*issuance, false)),
                _ => None,
            },
        },
        Action::Restart { worker } => Step::Restart {
            worker: worker as usize,
        },
        Action::Drop { message } => {
            let msg = &before.in_flight[message as usize];
            let worker = sender(msg, owner);
            let heard = before.waiting_on(msg.issuance, msg.op).is_some();
            Step::Drop {
                worker,
                lease: msg.issuance,
                op: *model.op(msg.op),
                heard,
                then_nack: heard && sent_nack(msg, worker),
            }
        }
        Action::Duplicate { message } => {
            let msg = &before.in_flight[message as usize];
            Step::Duplicate {
                worker: sender(msg, owner),
                lease: msg.issuance,
                op: *model.op(msg.op),
            }
        }
        Action::BrokerRestart => Step::BrokerRestart,
    }
}

fn op_upper(op: &SettleOp) -> String {
    op.name().to_uppercase()
}

/// The timeline text of a counterexample, one line per step, in the seed's wording, ending
/// with the violation.
pub fn timeline(model: &LeaseModel, cx: &Counterexample) -> String {
    let groups = model.config().group_count;
    let event = |group: GroupIx, seq: Seq| {
        if groups > 1 {
            format!("event E{seq} of group {}", group_name(group))
        } else {
            format!("event E{seq}")
        }
    };
    let mut out = String::new();
    for (index, step) in steps(model, cx).iter().enumerate() {
        let line = match step {
            Step::Fetch {
                worker,
                group,
                seq,
                lease,
            } => format!(
                "worker {} fetches {} → lease {lease}",
                worker_name(*worker),
                event(*group, *seq)
            ),
            Step::Handle {
                worker,
                lease,
                success,
                sends,
            } => {
                let result = if *success { "ok" } else { "error" };
                match sends {
                    Some(op) => format!(
                        "worker {} handles {lease} ({result}) → sends {} {lease}",
                        worker_name(*worker),
                        op_upper(op)
                    ),
                    None => format!(
                        "worker {} handles {lease} ({result}) → leaves {lease} to expire",
                        worker_name(*worker)
                    ),
                }
            }
            Step::Renew { worker, lease } => {
                format!("worker {} sends RENEW {lease}", worker_name(*worker))
            }
            Step::Deliver {
                worker,
                lease,
                op,
                result,
                heard,
                sender_crashed,
                frontier,
                then_nack,
            } => {
                let who = if *sender_crashed {
                    format!("worker {} (restarted, delayed)", worker_name(*worker))
                } else {
                    format!("worker {}", worker_name(*worker))
                };
                let mut line = match result {
                    Ok(()) if frontier.0 != frontier.1 => format!(
                        "{who} {} {lease} → durable progress (frontier {} → {})",
                        op_upper(op),
                        frontier.0,
                        frontier.1
                    ),
                    Ok(()) => format!("{who} {} {lease} → accepted", op_upper(op)),
                    Err(error) => format!(
                        "{who} tries {} {lease} → rejected ({})",
                        op_upper(op),
                        error.name()
                    ),
                };
                if *heard == Heard::Lost {
                    line.push_str("; the reply is lost (ambiguous)");
                }
                if *then_nack {
                    line.push_str(&format!(
                        "; worker {} sends NACK {lease}",
                        worker_name(*worker)
                    ));
                }
                line
            }
            Step::Expire {
                group,
                seq,
                lease,
                dead_lettered,
            } => {
                let name = lease.map_or_else(|| "the lease".to_string(), |l| format!("lease {l}"));
                if *dead_lettered {
                    format!(
                        "{name} expires → {} dead-lettered (max attempts)",
                        event(*group, *seq)
                    )
                } else {
                    format!("{name} expires")
                }
            }
            Step::Crash { worker, doing } => match doing {
                Some((lease, true)) => {
                    format!(
                        "worker {} crashes before ACK (holding {lease})",
                        worker_name(*worker)
                    )
                }
                Some((lease, false)) => format!(
                    "worker {} crashes awaiting the reply for {lease}",
                    worker_name(*worker)
                ),
                None => format!("worker {} crashes", worker_name(*worker)),
            },
            Step::Restart { worker } => format!("worker {} restarts", worker_name(*worker)),
            Step::Drop {
                worker,
                lease,
                op,
                heard,
                then_nack,
            } => {
                let mut line = format!(
                    "{} {lease} from worker {} is dropped",
                    op_upper(op),
                    worker_name(*worker)
                );
                if *heard {
                    line.push_str(" (ambiguous)");
                }
                if *then_nack {
                    line.push_str(&format!(
                        "; worker {} sends NACK {lease}",
                        worker_name(*worker)
                    ));
                }
                line
            }
            Step::Duplicate { worker, lease, op } => format!(
                "{} {lease} from worker {} is duplicated",
                op_upper(op),
                worker_name(*worker)
            ),
            Step::BrokerRestart => "broker restarts".to_string(),
        };
        out.push_str(&format!("t{index:<2} {line}\n"));
    }
    let last = cx.states.last().expect("non-empty");
    let detail = match last
        .oracle
        .violations()
        .iter()
        .find(|v| v.invariant == cx.invariant)
    {
        Some(v) => v.detail.clone(),
        None => model.unsettled_detail(last),
    };
    out.push_str(&format!("violated: {} — {detail}\n", cx.invariant));
    out
}
