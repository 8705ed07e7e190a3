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
//! Timelines are stable text, made for snapshot tests.

use crate::trace::{FetchResult, LineKind, Part, Request, RequestId, Trace, WorkerIx};
use std::fmt::Write as _;

use leasehold_model::{ErrorAction, GroupIx, Issuance, Seq, SettleError, SettleOp, Status};

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
    render_each(trace, |line| {
        out.push_str(line);
        out.push('\n');
    });
    out
}

/// Renders every line of `trace`.
pub fn render(trace: &Trace) -> Timeline {
    let mut lines = Vec::new();
    let mut timeline = render_each(trace, |line| lines.push(line.to_string()));
    timeline.lines = lines;
    timeline
}

/// Renders every line of `trace`, handing each visible line (without its newline) to `emit`;
/// the returned timeline has the index but no lines.
fn render_each(trace: &Trace, mut emit: impl FnMut(&str)) -> Timeline {
    let mut timeline = Timeline {
        lines: Vec::new(),
        index: vec![None; trace.lines.len()],
    };
    let follow_ups = follow_ups(trace);
    let mut shown = 0;
    let mut out = String::new();
    let mut text = String::new();
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
        text.clear();
        body(&mut text, trace, &follow_ups, i, &mut notes);
        let t = shown;
        shown += 1;
        timeline.index[i] = Some(t);
        out.clear();
        // Writing into a String cannot fail.
        let _ = write!(out, "t{t}  ");
        match line.worker {
            Some(worker) if notes.is_empty() => {
                let _ = write!(out, "worker {} ", trace.workers[worker]);
            }
            Some(worker) => {
                let _ = write!(
                    out,
                    "worker {} ({}) ",
                    trace.workers[worker],
                    notes.join(", ")
                );
            }
            None => {}
        }
        out.push_str(&text);
        emit(&out);
    }
    for i in folded_restarts {
        let worker = trace.lines[i].worker;
        timeline.index[i] = ((i + 1)..trace.lines.len())
            .find(|&j| trace.lines[j].worker == worker)
            .and_then(|j| timeline.index[j]);
    }
    timeline
}

/// For each request, whether it is the runtime's nack after another request failed (it is
/// told as part of that request).
fn follow_ups(trace: &Trace) -> Vec<bool> {
    let mut follow_ups = vec![false; trace.requests.len()];
    for id in trace.requests.iter().filter_map(|r| r.follow_up_request) {
        if let Some(flag) = follow_ups.get_mut(id.0 as usize) {
            *flag = true;
        }
    }
    follow_ups
}

fn is_follow_up(follow_ups: &[bool], id: RequestId) -> bool {
    follow_ups.get(id.0 as usize).copied().unwrap_or(false)
}

fn has_later_line(trace: &Trace, i: usize, worker: WorkerIx) -> bool {
    trace.lines[i + 1..]
        .iter()
        .any(|line| line.worker == Some(worker) && line.kind != LineKind::Restarted)
}

// Writing into a String cannot fail: the functions below ignore `write!`'s result.

fn event(out: &mut String, seq: Seq) {
    let _ = write!(out, "E{seq}");
}

fn frontier(out: &mut String, trace: &Trace, group: GroupIx, before: Seq, after: Seq) {
    if trace.groups.len() > 1 {
        let _ = write!(
            out,
            "frontier of {} {before} → {after}",
            trace.groups[group]
        );
    } else {
        let _ = write!(out, "frontier {before} → {after}");
    }
}

/// Writes `": "` before the first part of a list and `"; "` before the others.
fn separate(out: &mut String, first: &mut bool) {
    out.push_str(if std::mem::take(first) { ": " } else { "; " });
}

fn body(
    out: &mut String,
    trace: &Trace,
    follow_ups: &[bool],
    i: usize,
    notes: &mut Vec<&'static str>,
) {
    let line = &trace.lines[i];
    match &line.kind {
        LineKind::Published { seq } => {
            out.push_str("event ");
            event(out, *seq);
            out.push_str(" published");
        }
        LineKind::Fetched { group, result } => fetched(out, trace, *group, result),
        LineKind::Settle => settle_line(out, trace, follow_ups, i, notes),
        LineKind::Handle { issuance } => handle_line(out, trace, follow_ups, i, *issuance),
        LineKind::Crashed { held } if held.is_empty() => out.push_str("crashes"),
        LineKind::Crashed { .. } => out.push_str("crashes before ACK"),
        LineKind::Restarted => out.push_str("restarts"),
        LineKind::Paused { until_ms } => {
            let _ = write!(out, "stalls for {} ms", until_ms.saturating_sub(line.at_ms));
        }
        LineKind::BrokerRestarted { frontier: moved } => {
            out.push_str("broker restarts");
            for &(group, before, after) in moved {
                out.push_str(" (");
                frontier(out, trace, group, before, after);
                out.push(')');
            }
        }
        LineKind::Expired {
            issuance,
            dead_lettered,
            frontier: moved,
        } => {
            let lease = trace.lease(*issuance);
            let _ = write!(out, "lease {} expires", lease.name);
            if *dead_lettered {
                out.push_str(" → ");
                event(out, lease.lease.seq);
                out.push_str(" dead-lettered (max attempts)");
            }
            if let Some((before, after)) = moved {
                out.push_str(" (");
                frontier(out, trace, lease.lease.group, *before, *after);
                out.push(')');
            }
        }
        LineKind::DrainStarted => out.push_str("faults heal; the workers drain the queue"),
        kind @ LineKind::DrainEnded { .. } => out.push_str(&drain_ended(trace, kind)),
    }
}

/// A worker's own settles, one after another (the runtime's follow-up nacks are told with the
/// request they follow).
fn settle_line(
    out: &mut String,
    trace: &Trace,
    follow_ups: &[bool],
    i: usize,
    notes: &mut Vec<&'static str>,
) {
    let line = &trace.lines[i];
    let mut first = true;
    for part in &line.parts {
        let Part::Request(id) = part else { continue };
        if is_follow_up(follow_ups, *id) {
            continue;
        }
        if trace.request(*id).delayed && !notes.contains(&"delayed") {
            notes.push("delayed");
        }
        if !std::mem::take(&mut first) {
            out.push_str("; ");
        }
        settle(out, trace, *id);
    }
}

/// A handler run: the event and delivery, the settles it sent, how it ended.
fn handle_line(out: &mut String, trace: &Trace, follow_ups: &[bool], i: usize, issuance: Issuance) {
    let line = &trace.lines[i];
    let lease = trace.lease(issuance);
    out.push_str("handles ");
    event(out, lease.lease.seq);
    let _ = write!(out, " ({}, delivery {})", lease.name, lease.lease.attempt);
    let mut first = true;
    for part in &line.parts {
        match part {
            Part::Request(id) if is_follow_up(follow_ups, *id) => {}
            Part::Request(id) => {
                separate(out, &mut first);
                settle(out, trace, *id);
            }
            Part::HandlerFinished { outcome, .. } => {
                separate(out, &mut first);
                let _ = write!(out, "handler {outcome}");
            }
            Part::HandlerKilled => {
                separate(out, &mut first);
                out.push_str("handler killed by the crash");
            }
        }
    }
    let sent = line.parts.iter().any(|p| matches!(p, Part::Request(_)));
    let finished = line
        .parts
        .iter()
        .any(|p| matches!(p, Part::HandlerFinished { .. }));
    if finished && !sent {
        separate(out, &mut first);
        out.push_str("nothing settled (left to expire)");
    }
}

fn drain_ended(trace: &Trace, kind: &LineKind) -> String {
    match kind {
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
        _ => String::new(),
    }
}

fn fetched(out: &mut String, trace: &Trace, group: GroupIx, result: &FetchResult) {
    let of_group = |out: &mut String| {
        if trace.groups.len() > 1 {
            let _ = write!(out, " of {}", trace.groups[group]);
        }
    };
    match result {
        FetchResult::Failed(error) => {
            out.push_str("fetch");
            of_group(out);
            let _ = write!(out, " fails ({})", error.name());
        }
        FetchResult::Leased { leases, .. } if leases.is_empty() => {
            out.push_str("fetches");
            of_group(out);
            out.push_str(" → nothing available");
        }
        FetchResult::Leased { leases, reply_lost } => {
            let plural = if leases.len() > 1 { "s" } else { "" };
            let _ = write!(out, "fetches event{plural} ");
            for (k, &l) in leases.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                event(out, trace.lease(l).lease.seq);
            }
            of_group(out);
            let _ = write!(out, " → lease{plural} ");
            for (k, &l) in leases.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                out.push_str(&trace.lease(l).name);
            }
            if *reply_lost {
                out.push_str(" issued, reply lost (ambiguous)");
            }
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

fn refused(out: &mut String, error: &SettleError) {
    let _ = write!(out, "rejected ({})", error.name());
}

/// One settle request and everything that came of it.
fn settle(out: &mut String, trace: &Trace, id: RequestId) {
    use crate::trace::Fault;
    let request = trace.request(id);
    let name = &trace.lease(request.issuance).name;
    if matches!(request.answer, Some(Err(_))) {
        out.push_str("tries ");
    }
    let _ = write!(out, "{} {name} → ", verb(&request.op));
    match (request.fault, &request.answer) {
        (Fault::Dropped, _) => out.push_str("request lost (ambiguous)"),
        (Fault::Unavailable, _) => out.push_str("backend unavailable, not applied"),
        (Fault::Failed, _) => out.push_str("failed, not applied"),
        (_, None) => out.push_str("still in flight"),
        (Fault::LostReply, Some(Ok(()))) => {
            out.push_str("applied, reply lost (ambiguous); broker: ");
            effect(out, trace, request);
        }
        (Fault::LostReply, Some(Err(error))) => {
            refused(out, error);
            out.push_str(", reply lost (ambiguous)");
        }
        (Fault::None, Some(Ok(()))) => effect(out, trace, request),
        (Fault::None, Some(Err(error))) => refused(out, error),
    }
    for answer in &request.duplicate_answers {
        out.push_str(" (duplicate → ");
        match answer {
            Ok(()) => out.push_str("accepted"),
            Err(error) => refused(out, error),
        }
        out.push(')');
    }
    match request.follow_up {
        Some(ErrorAction::Drop) => out.push_str("; lease dropped, no nack"),
        Some(ErrorAction::LeaveToExpire) => out.push_str("; left to expire"),
        Some(ErrorAction::Nack) => {
            out.push_str("; runtime nacks: ");
            match request.follow_up_request {
                Some(nack) => settle(out, trace, nack),
                None => out.push_str("not sent"),
            }
        }
        None => {}
    }
}

/// What an accepted request did, in words.
fn effect(out: &mut String, trace: &Trace, request: &Request) {
    let lease = &trace.lease(request.issuance).lease;
    let e = &request.effect;
    let with_frontier = |out: &mut String| {
        if let Some((before, after)) = e.frontier {
            out.push_str(" (");
            frontier(out, trace, lease.group, before, after);
            out.push(')');
        }
    };
    match (&request.op, e.status) {
        (SettleOp::Renew { .. }, _) => match e.renewed_until_ms {
            Some(until) => {
                let _ = write!(out, "renewed until {until} ms");
            }
            None => out.push_str("renewed"),
        },
        (SettleOp::Ack, Some(Status::Acked)) => match e.frontier {
            Some((before, after)) => {
                out.push_str("durable progress (");
                frontier(out, trace, lease.group, before, after);
                out.push(')');
            }
            None => {
                let _ = write!(out, "acked (frontier stays {})", e.frontier_after);
            }
        },
        (_, Some(Status::DeadLettered)) => {
            event(out, lease.seq);
            let _ = write!(
                out,
                " dead-lettered ({})",
                e.reason.as_deref().unwrap_or("")
            );
            with_frontier(out);
        }
        (_, Some(Status::Available)) => {
            event(out, lease.seq);
            out.push_str(" available again");
            with_frontier(out);
        }
        (_, Some(Status::Dropped)) => {
            event(out, lease.seq);
            out.push_str(" record dropped");
            with_frontier(out);
        }
        (_, _) => {
            out.push_str("accepted");
            with_frontier(out);
        }
    }
}
