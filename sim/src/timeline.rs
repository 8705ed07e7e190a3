//! The text timeline: one line per step of the story, `tN` indices, the seed's wording.
//!
//! ```text
//! t0  worker A fetches event E1 → lease L1
//! t1  worker A crashes before ACK
//! t2  lease L1 expires
//! t3  worker B fetches event E1 → lease L2
//! t4  worker A (restarted, delayed) tries ACK L1 → rejected (stale_lease)
//! t5  worker B ACK L2 → durable progress (frontier 0 → 1)
//! ```
//!
//! Rendering rules, so that a story reads as the seed tells it:
//! * a worker's restart is not a line of its own: it folds into that worker's next line as
//!   `(restarted)` (a restart with no later line of that worker reads `worker A restarts`);
//! * a settle that a worker sent before it crashed and that lands afterwards is `delayed`; a
//!   settle the broker refused reads `tries ACK L1 → rejected (stale_lease)`;
//! * an accepted ack that moves the frontier is `durable progress (frontier a → b)`; one that
//!   does not is `acked (frontier stays a)`;
//! * faults: `→ applied, reply lost (ambiguous)`, `→ request lost (ambiguous)`,
//!   `→ backend unavailable, not applied`, `→ failed, not applied`;
//! * the runtime's reaction to a failed settle follows it: `; left to expire`,
//!   `; lease dropped, no nack`, `; runtime nacks: NACK L1 → E1 available again`;
//! * a handler run reads `worker A handles E1 (L1, delivery 2): handler raises … ; NACK L1 → …`.
//!
//! Timelines are stable text, made for snapshot tests; [`text`] is what the trace hash covers.

use crate::trace::{fnv1a64, FetchResult, LineKind, Part, Request, RequestId, Trace, WorkerIx};
use leasehold_model::{ErrorAction, GroupIx, Seq, SettleError, SettleOp, Status};

/// A rendered timeline: the text lines and, for each trace line, its `tN` index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// `tN  text`, one per visible line.
    pub lines: Vec<String>,
    /// For each line of [`Trace::lines`], the `tN` index it is shown as (a folded restart maps
    /// to the line it folds into).
    pub index: Vec<Option<usize>>,
}

impl Timeline {
    /// The `tN` index at which a violation recorded after trace line `line` shows.
    pub fn t_of(&self, line: Option<usize>) -> Option<usize> {
        let line = line?;
        (0..=line)
            .rev()
            .find_map(|i| self.index.get(i).copied().flatten())
    }
}

/// The timeline as text, a line per step, each ending in a newline.
pub fn text(trace: &Trace) -> String {
    let mut out = String::new();
    for line in render(trace).lines {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The trace hash: FNV-1a 64 of [`text`].
pub fn trace_hash(trace: &Trace) -> u64 {
    fnv1a64(text(trace).as_bytes())
}

/// Renders every line of `trace`.
pub fn render(trace: &Trace) -> Timeline {
    let mut timeline = Timeline {
        lines: Vec::new(),
        index: vec![None; trace.lines.len()],
    };
    let mut restarted = vec![false; trace.workers.len()];
    let mut folded_restarts = Vec::new();
    for (i, line) in trace.lines.iter().enumerate() {
        if line.kind == LineKind::Restarted {
            let worker = line.worker.expect("a restart names its worker");
            if has_later_line(trace, i, worker) {
                restarted[worker] = true;
                folded_restarts.push(i);
                continue;
            }
        }
        let mut notes = Vec::new();
        if let Some(worker) = line.worker {
            if std::mem::take(&mut restarted[worker]) && line.kind != LineKind::Restarted {
                notes.push("restarted");
            }
        }
        let body = body(trace, i, &mut notes);
        let who = match line.worker {
            Some(worker) if notes.is_empty() => format!("worker {} ", trace.workers[worker]),
            Some(worker) => format!("worker {} ({}) ", trace.workers[worker], notes.join(", ")),
            None => String::new(),
        };
        let t = timeline.lines.len();
        timeline.index[i] = Some(t);
        timeline.lines.push(format!("t{t}  {who}{body}"));
    }
    for i in folded_restarts {
        let worker = trace.lines[i].worker;
        timeline.index[i] = ((i + 1)..trace.lines.len())
            .find(|&j| trace.lines[j].worker == worker)
            .and_then(|j| timeline.index[j]);
    }
    timeline
}

/// Whether request `id` is the runtime's nack after another request failed (it is told as
/// part of that request).
fn is_follow_up(trace: &Trace, id: RequestId) -> bool {
    trace
        .requests
        .iter()
        .any(|r| r.follow_up_request == Some(id))
}

fn has_later_line(trace: &Trace, i: usize, worker: WorkerIx) -> bool {
    trace.lines[i + 1..]
        .iter()
        .any(|line| line.worker == Some(worker) && line.kind != LineKind::Restarted)
}

fn event(seq: Seq) -> String {
    format!("E{seq}")
}

fn frontier(trace: &Trace, group: GroupIx, before: Seq, after: Seq) -> String {
    if trace.groups.len() > 1 {
        format!("frontier of {} {before} → {after}", trace.groups[group])
    } else {
        format!("frontier {before} → {after}")
    }
}

fn body(trace: &Trace, i: usize, notes: &mut Vec<&'static str>) -> String {
    let line = &trace.lines[i];
    match &line.kind {
        LineKind::Published { seq } => format!("event {} published", event(*seq)),
        LineKind::Fetched { group, result } => fetched(trace, *group, result),
        LineKind::Settle => {
            let parts: Vec<String> = line
                .parts
                .iter()
                .filter_map(|part| match part {
                    Part::Request(id) if !is_follow_up(trace, *id) => Some(*id),
                    _ => None,
                })
                .map(|id| {
                    if trace.request(id).delayed && !notes.contains(&"delayed") {
                        notes.push("delayed");
                    }
                    settle(trace, id)
                })
                .collect();
            parts.join("; ")
        }
        LineKind::Handle { issuance } => {
            let lease = trace.lease(*issuance);
            let head = format!(
                "handles {} ({}, delivery {})",
                event(lease.lease.seq),
                lease.name,
                lease.lease.attempt
            );
            let mut parts: Vec<String> = line
                .parts
                .iter()
                .filter_map(|part| match part {
                    Part::Request(id) if is_follow_up(trace, *id) => None,
                    Part::Request(id) => Some(settle(trace, *id)),
                    Part::HandlerFinished { outcome, .. } => Some(format!("handler {outcome}")),
                    Part::HandlerKilled => Some("handler killed by the crash".to_string()),
                })
                .collect();
            let sent = line.parts.iter().any(|p| matches!(p, Part::Request(_)));
            let finished = line
                .parts
                .iter()
                .any(|p| matches!(p, Part::HandlerFinished { .. }));
            if finished && !sent {
                parts.push("nothing settled (left to expire)".to_string());
            }
            if parts.is_empty() {
                head
            } else {
                format!("{head}: {}", parts.join("; "))
            }
        }
        LineKind::Crashed { held } if held.is_empty() => "crashes".to_string(),
        LineKind::Crashed { .. } => "crashes before ACK".to_string(),
        LineKind::Restarted => "restarts".to_string(),
        LineKind::Paused { until_ms } => {
            format!("stalls for {} ms", until_ms.saturating_sub(line.at_ms))
        }
        LineKind::BrokerRestarted { frontier: moved } => {
            let mut text = "broker restarts".to_string();
            for &(group, before, after) in moved {
                text.push_str(&format!(" ({})", frontier(trace, group, before, after)));
            }
            text
        }
        LineKind::Expired {
            issuance,
            dead_lettered,
            frontier: moved,
        } => {
            let lease = trace.lease(*issuance);
            let mut text = format!("lease {} expires", lease.name);
            if *dead_lettered {
                text.push_str(&format!(
                    " → {} dead-lettered (max attempts)",
                    event(lease.lease.seq)
                ));
            }
            if let Some((before, after)) = moved {
                text.push_str(&format!(
                    " ({})",
                    frontier(trace, lease.lease.group, *before, *after)
                ));
            }
            text
        }
        LineKind::DrainStarted => "faults heal; the workers drain the queue".to_string(),
        LineKind::DrainEnded {
            settled,
            why,
            frontier: frontiers,
        } => {
            let shown: Vec<String> = frontiers
                .iter()
                .enumerate()
                .map(|(group, f)| {
                    if trace.groups.len() > 1 {
                        format!("frontier of {} {f}", trace.groups[group])
                    } else {
                        format!("frontier {f}")
                    }
                })
                .collect();
            if *settled {
                format!("drain ends: every event settled ({})", shown.join(", "))
            } else {
                format!(
                    "drain ends ({why}): events left unsettled ({})",
                    shown.join(", ")
                )
            }
        }
    }
}

fn fetched(trace: &Trace, group: GroupIx, result: &FetchResult) -> String {
    let of_group = if trace.groups.len() > 1 {
        format!(" of {}", trace.groups[group])
    } else {
        String::new()
    };
    match result {
        FetchResult::Failed(error) => format!("fetch{of_group} fails ({})", error.name()),
        FetchResult::Leased { leases, .. } if leases.is_empty() => {
            format!("fetches{of_group} → nothing available")
        }
        FetchResult::Leased { leases, reply_lost } => {
            let events: Vec<String> = leases
                .iter()
                .map(|&l| event(trace.lease(l).lease.seq))
                .collect();
            let names: Vec<&str> = leases
                .iter()
                .map(|&l| trace.lease(l).name.as_str())
                .collect();
            let plural = if leases.len() > 1 { "s" } else { "" };
            let mut text = format!(
                "fetches event{plural} {}{of_group} → lease{plural} {}",
                events.join(", "),
                names.join(", ")
            );
            if *reply_lost {
                text.push_str(" issued, reply lost (ambiguous)");
            }
            text
        }
    }
}

fn verb(op: &SettleOp) -> &'static str {
    match op {
        SettleOp::Ack => "ACK",
        SettleOp::Nack { .. } => "NACK",
        SettleOp::Reject { .. } => "REJECT",
        SettleOp::Renew { .. } => "RENEW",
    }
}

fn refused(error: &SettleError) -> String {
    format!("rejected ({})", error.name())
}

/// One settle request and everything that came of it.
fn settle(trace: &Trace, id: RequestId) -> String {
    use crate::trace::Fault;
    let request = trace.request(id);
    let name = &trace.lease(request.issuance).name;
    let tries = if matches!(request.answer, Some(Err(_))) {
        "tries "
    } else {
        ""
    };
    let result = match (request.fault, &request.answer) {
        (Fault::Dropped, _) => "request lost (ambiguous)".to_string(),
        (Fault::Unavailable, _) => "backend unavailable, not applied".to_string(),
        (Fault::Failed, _) => "failed, not applied".to_string(),
        (_, None) => "still in flight".to_string(),
        (Fault::LostReply, Some(Ok(()))) => {
            let effect = effect(trace, request);
            format!("applied, reply lost (ambiguous); broker: {effect}")
        }
        (Fault::LostReply, Some(Err(error))) => {
            format!("{}, reply lost (ambiguous)", refused(error))
        }
        (Fault::None, Some(Ok(()))) => effect(trace, request),
        (Fault::None, Some(Err(error))) => refused(error),
    };
    let mut text = format!("{tries}{} {name} → {result}", verb(&request.op));
    for answer in &request.duplicate_answers {
        let dup = match answer {
            Ok(()) => "accepted".to_string(),
            Err(error) => refused(error),
        };
        text.push_str(&format!(" (duplicate → {dup})"));
    }
    match request.follow_up {
        Some(ErrorAction::Drop) => text.push_str("; lease dropped, no nack"),
        Some(ErrorAction::LeaveToExpire) => text.push_str("; left to expire"),
        Some(ErrorAction::Nack) => {
            text.push_str("; runtime nacks: ");
            match request.follow_up_request {
                Some(nack) => text.push_str(&settle(trace, nack)),
                None => text.push_str("not sent"),
            }
        }
        None => {}
    }
    text
}

/// What an accepted request did, in words.
fn effect(trace: &Trace, request: &Request) -> String {
    let lease = &trace.lease(request.issuance).lease;
    let e = &request.effect;
    let moved = e
        .frontier
        .map(|(before, after)| frontier(trace, lease.group, before, after));
    let with_frontier = |text: String| match &moved {
        Some(moved) => format!("{text} ({moved})"),
        None => text,
    };
    match (&request.op, e.status) {
        (SettleOp::Renew { .. }, _) => match e.renewed_until_ms {
            Some(until) => format!("renewed until {until} ms"),
            None => "renewed".to_string(),
        },
        (SettleOp::Ack, Some(Status::Acked)) => match &moved {
            Some(moved) => format!("durable progress ({moved})"),
            None => format!("acked (frontier stays {})", e.frontier_after),
        },
        (_, Some(Status::DeadLettered)) => with_frontier(format!(
            "{} dead-lettered ({})",
            event(lease.seq),
            e.reason.as_deref().unwrap_or("")
        )),
        (_, Some(Status::Available)) => {
            with_frontier(format!("{} available again", event(lease.seq)))
        }
        (_, Some(Status::Dropped)) => with_frontier(format!("{} record dropped", event(lease.seq))),
        (_, _) => with_frontier("accepted".to_string()),
    }
}
