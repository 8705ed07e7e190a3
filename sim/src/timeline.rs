//! The text timeline: one line per step of the story, `tN` indices, the wording of Rheo's
//! t0–t5 story (docs/timelines.md).
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
//! Rendering rules, so that a story reads as Rheo's t0–t5 story tells it:
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
//! * a handler run reads `worker A handles E1 (L1, delivery 2): handler raises … ; NACK L1 → …`;
//! * leases keep the names the run gave them (`L1`, or a scenario's `bind`), except where the
//!   broker issued a lease the id of a recent lease of the same record: that lease's fetch
//!   says so, `→ lease L2 (L1's id 1 again)`, since the renaming would hide the collision;
//! * an expiry that a timer armed for another lease caused (a timer that outlived its lease)
//!   names the timer: `L1's timer fires → lease L2 expires`.
//!
//! With [`Style::times`] each line also shows its virtual time after its `tN`, and each lease
//! its deadline where it is issued or named by a request (the deadline the holder knows):
//!
//! ```text
//! t0  [0 ms] worker A fetches event E1 → lease L1 (deadline 30000 ms)
//! t4  [32000 ms] worker A (restarted, delayed) tries ACK L1 (deadline 30000 ms) → rejected (stale_lease)
//! ```
//!
//! Timelines are stable text, made for snapshot tests.

use crate::trace::{
    FetchResult, Found, LeaseEnd, LineKind, Part, Request, RequestId, StaleTimer, Trace, Window,
    WorkerIx,
};
use serde::Serialize;
use std::fmt::Write as _;

use leasehold_model::{ErrorAction, GroupIx, Issuance, Seq, SettleError, SettleOp, Status};

/// How a timeline is rendered. The default is the plain story; each option adds to its lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Show each line's virtual time after its `tN` (`t4  [31000 ms] …`), and each lease's
    /// deadline where a fetch issues it or a request names it (`ACK L1 (deadline 30000 ms)`).
    pub times: bool,
}

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

    /// A violation's detail, each cause it names by the `tN` of the line that tells it.
    pub fn told(&self, found: &Found) -> String {
        found
            .told
            .text(|line| self.index.get(line).copied().flatten())
    }
}

/// The timeline as text, a line per step, each ending in a newline.
pub fn text(trace: &Trace) -> String {
    text_with(trace, Style::default())
}

/// [`text`] in `style`.
pub fn text_with(trace: &Trace, style: Style) -> String {
    let mut out = String::new();
    render_each(trace, style, |line| {
        out.push_str(line);
        out.push('\n');
    });
    out
}

/// Renders every line of `trace`.
pub fn render(trace: &Trace) -> Timeline {
    render_with(trace, Style::default())
}

/// [`render`] in `style`.
pub fn render_with(trace: &Trace, style: Style) -> Timeline {
    let mut lines = Vec::new();
    let mut timeline = render_each(trace, style, |line| lines.push(line.to_string()));
    timeline.lines = lines;
    timeline
}

/// Renders every line of `trace`, handing each visible line (without its newline) to `emit`;
/// the returned timeline has the index but no lines.
fn render_each(trace: &Trace, style: Style, mut emit: impl FnMut(&str)) -> Timeline {
    let follow_ups = follow_ups(trace);
    let mut renderer = Renderer::styled(trace.workers.len(), style);
    for i in 0..trace.lines.len() {
        let has_later = trace.lines[i]
            .worker
            .is_some_and(|worker| has_later_line(trace, i, worker));
        renderer.line(trace, &follow_ups, i, has_later, &mut emit);
    }
    debug_assert!(
        renderer.folds.is_empty(),
        "a folded restart has a later line of its worker"
    );
    Timeline {
        lines: Vec::new(),
        index: renderer.index.iter().copied().collect(),
    }
}

/// Renders the lines of a trace one at a time, in order, keeping what a line's text takes
/// from the lines before it (its `tN`, a restart folded into it, the violations since the
/// last shown line). A whole trace is rendered by [`render`]; a streamed one line by line as
/// each becomes final ([`crate::recorder::Recorder::streaming`]).
#[derive(Clone, Debug)]
pub struct Renderer {
    /// Lines shown so far: the next shown line's `tN`.
    shown: usize,
    /// Per worker: a restart folded into its next line.
    restarted: Vec<bool>,
    /// Folded restarts whose worker has no rendered line after them yet: (line, worker).
    folds: Vec<(usize, WorkerIx)>,
    /// The first line whose violations are not marked yet.
    marked: usize,
    /// For each rendered line, the `tN` it shows as (a folded restart: that of its worker's
    /// next line, once rendered).
    index: Window<Option<usize>>,
    /// The `tN` of the latest line dropped from `index` that had one.
    dropped_t: Option<usize>,
    text: String,
    out: String,
    style: Style,
}

impl Renderer {
    /// A renderer for a run of `workers` workers, before its first line.
    pub fn new(workers: usize) -> Renderer {
        Renderer::styled(workers, Style::default())
    }

    /// [`Renderer::new`], rendering in `style`.
    pub fn styled(workers: usize, style: Style) -> Renderer {
        Renderer {
            shown: 0,
            restarted: vec![false; workers],
            folds: Vec::new(),
            marked: 0,
            index: Window::default(),
            dropped_t: None,
            text: String::new(),
            out: String::new(),
            style,
        }
    }

    /// The next line to render.
    pub fn next(&self) -> usize {
        self.index.len()
    }

    /// Lines shown so far.
    pub fn shown(&self) -> usize {
        self.shown
    }

    /// The first line whose violations the next shown line marks (those recorded after a
    /// line from here on: see [`violations_marked`]).
    pub fn marked(&self) -> usize {
        self.marked
    }

    /// The first line a folded restart still waits on (its `tN` is not known yet).
    pub fn first_fold(&self) -> Option<usize> {
        self.folds.first().map(|&(line, _)| line)
    }

    /// Renders line `i` of `trace` (the next one: `i == self.next()`), handing its text to
    /// `emit` unless it is a restart that folds into its worker's next line (`has_later`: the
    /// worker has a later line that is not a restart). `follow_ups`: each request's parent, as
    /// the runtime's follow-up nack names it.
    pub fn line(
        &mut self,
        trace: &Trace,
        follow_ups: &Window<Option<RequestId>>,
        i: usize,
        has_later: bool,
        emit: &mut impl FnMut(&str),
    ) {
        debug_assert_eq!(i, self.next(), "lines render in order");
        let line = &trace.lines[i];
        if let Some(worker) = line.worker {
            // The first rendered line of a worker after a folded restart gives it its `tN`
            // (none, when that line is itself a folded restart).
            let folded_here = line.kind == LineKind::Restarted && has_later;
            let t = (!folded_here).then_some(self.shown);
            let index = &mut self.index;
            self.folds.retain(|&(fold, w)| {
                if w != worker {
                    return true;
                }
                if let Some(slot) = index.get_mut(fold) {
                    *slot = t;
                }
                false
            });
            if folded_here {
                self.restarted[worker] = true;
                self.folds.push((i, worker));
                self.index.push(None);
                return;
            }
        }
        let mut notes = Vec::new();
        if let Some(worker) = line.worker {
            if std::mem::take(&mut self.restarted[worker]) && line.kind != LineKind::Restarted {
                notes.push("restarted");
            }
        }
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let at = At {
            trace,
            follow_ups,
            index: &self.index,
            i,
            style: self.style,
        };
        body(&mut text, &at, &mut notes);
        let t = self.shown;
        self.shown += 1;
        self.index.push(Some(t));
        marks(&mut text, trace, self.marked..=i);
        self.marked = i + 1;
        let out = &mut self.out;
        out.clear();
        // Writing into a String cannot fail.
        let _ = write!(out, "t{t}  ");
        if self.style.times {
            let _ = write!(out, "[{} ms] ", line.at_ms);
        }
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
        self.text = text;
        emit(&self.out);
    }

    /// The `tN` of line `line` itself, when it is rendered, shown and still indexed (the
    /// line a violation names as a cause).
    pub fn t_at(&self, line: usize) -> Option<usize> {
        self.index.get(line).copied().flatten()
    }

    /// The `tN` at which a violation recorded after line `line` shows ([`Timeline::t_of`]),
    /// once known: every line up to `line` is rendered and no folded restart up to it waits.
    pub fn t_of(&self, line: usize) -> Option<Option<usize>> {
        if line >= self.next() || self.first_fold().is_some_and(|fold| fold <= line) {
            return None;
        }
        let first = self.index.start();
        let found = (first..=line).rev().find_map(|j| self.index[j]);
        Some(found.or(self.dropped_t))
    }

    /// Forgets the `tN` of the lines below `end` (a streamed trace dropped them); a folded
    /// restart still waiting is kept.
    pub fn drop_below(&mut self, end: usize) {
        let end = end
            .min(self.next())
            .min(self.first_fold().unwrap_or(usize::MAX));
        if let Some(t) = self.index.range(0..end).rev().find_map(|t| *t) {
            self.dropped_t = Some(t);
        }
        self.index.drop_below(end);
    }
}

/// Where a line is rendered: the trace, which requests are follow-ups, the `tN` index of the
/// lines shown so far, and the line.
struct At<'a> {
    trace: &'a Trace,
    follow_ups: &'a Window<Option<RequestId>>,
    index: &'a Window<Option<usize>>,
    i: usize,
    style: Style,
}

/// Marks the violations found after trace lines `lines` (the last one shown): `⚠ I1 violated`.
fn marks(out: &mut String, trace: &Trace, lines: std::ops::RangeInclusive<usize>) {
    for id in violations_marked(trace, lines) {
        let _ = write!(out, "   ⚠ {id} violated");
    }
}

/// The invariants of the violations found after trace lines `lines`: those a shown line
/// marks, when `lines` runs from the line after the previous shown one to it.
pub fn violations_marked(
    trace: &Trace,
    lines: std::ops::RangeInclusive<usize>,
) -> Vec<&'static str> {
    trace
        .violations
        .iter()
        .filter(|found| found.line.is_some_and(|line| lines.contains(&line)))
        .map(|found| found.invariant().id())
        .collect()
}

/// For each request, the request it follows up, if it is the runtime's nack after another
/// request failed (it is told as part of that request).
fn follow_ups(trace: &Trace) -> Window<Option<RequestId>> {
    let mut parents: Window<Option<RequestId>> = (0..trace.requests.len()).map(|_| None).collect();
    for (parent, r) in trace.requests.iter().enumerate() {
        if let Some(id) = r.follow_up_request {
            if let Some(slot) = parents.get_mut(id.0 as usize) {
                // A follow-up answers one reply: it has one parent.
                *slot = Some(RequestId(parent as u32));
            }
        }
    }
    parents
}

fn is_follow_up(follow_ups: &Window<Option<RequestId>>, id: RequestId) -> bool {
    follow_ups.get(id.0 as usize).is_some_and(Option::is_some)
}

fn has_later_line(trace: &Trace, i: usize, worker: WorkerIx) -> bool {
    trace
        .lines
        .range(i + 1..trace.lines.len())
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

fn body(out: &mut String, at: &At, notes: &mut Vec<&'static str>) {
    let (trace, i) = (at.trace, at.i);
    let line = &trace.lines[i];
    match &line.kind {
        LineKind::Published { seq } => {
            out.push_str("event ");
            event(out, *seq);
            out.push_str(" published");
        }
        LineKind::Fetched { group, result } => fetched(out, trace, *group, result, at.style),
        LineKind::Settle | LineKind::Landing => {
            parts(out, at, notes, &mut true, "");
        }
        LineKind::Handle { issuance } => handle_line(out, at, notes, *issuance, "handles"),
        LineKind::HandlerResumed { issuance } => {
            handle_line(out, at, notes, *issuance, "handling");
        }
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
            timer,
        } => {
            let lease = trace.lease(*issuance);
            match timer {
                Some(StaleTimer {
                    issuance: Some(armed_for),
                    ..
                }) => {
                    let _ = write!(out, "{}'s timer fires → ", lease_name(trace, *armed_for));
                }
                Some(StaleTimer { lease_id, .. }) => {
                    let _ = write!(out, "the timer of lease id {} fires → ", lease_id.0);
                }
                None => {}
            }
            let _ = write!(out, "lease {} expires", lease.name);
            if let Some((end_ms, LeaseEnd::Expired { .. })) = lease.ended {
                if at.style.times && end_ms < line.at_ms {
                    let _ = write!(out, " (deadline {end_ms} ms)");
                }
            }
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
        LineKind::Lapsed { issuance } => {
            let _ = write!(
                out,
                "lease {} lapses (its deadline passed; the broker expires it at its next fetch)",
                trace.lease(*issuance).name
            );
        }
        LineKind::DrainStarted => out.push_str("faults heal; the workers drain the queue"),
        kind @ LineKind::DrainEnded { .. } => out.push_str(&drain_ended(trace, kind)),
    }
}

/// The parts of line `at.i`, in order: requests sent (with their answer when they landed at
/// once), landings of requests sent earlier, duplicates, the handler's end. `first` starts as
/// true when the parts open the line and `lead` is written before the first one.
fn parts(out: &mut String, at: &At, notes: &mut Vec<&'static str>, first: &mut bool, lead: &str) {
    let (trace, i) = (at.trace, at.i);
    let mut separate = |out: &mut String| {
        if std::mem::take(first) {
            out.push_str(lead);
        } else {
            out.push_str("; ");
        }
    };
    for part in &trace.lines[i].parts {
        match *part {
            Part::Request(id) => {
                let request = trace.request(id);
                if told_with_parent(at, id) {
                    continue;
                }
                note_delayed(notes, request);
                separate(out);
                if is_follow_up(at.follow_ups, id) {
                    out.push_str("runtime nacks: ");
                }
                request_here(out, at, id);
            }
            Part::Landed { request, duplicate } => {
                let r = trace.request(request);
                let told = match duplicate {
                    None => r.line == i,
                    Some(_) => r.landed_line == Some(i),
                };
                if told {
                    continue;
                }
                note_delayed(notes, r);
                separate(out);
                landing(out, at, request, duplicate);
            }
            Part::HandlerFinished { ref outcome, .. } => {
                separate(out);
                let _ = write!(out, "handler {outcome}");
            }
            Part::HandlerKilled => {
                separate(out);
                out.push_str("handler killed by the crash");
            }
        }
    }
}

/// Whether `id` is a follow-up told inside its parent's result on line `at.i`.
fn told_with_parent(at: &At, id: RequestId) -> bool {
    let parent = at.follow_ups.get(id.0 as usize).copied().flatten();
    parent.is_some_and(|p| at.trace.request(p).landed_line == Some(at.i))
}

fn note_delayed(notes: &mut Vec<&'static str>, request: &Request) {
    if request.delayed && !notes.contains(&"delayed") {
        notes.push("delayed");
    }
}

/// A handler run (`verb` = `handles` on its first line, `handling` when it goes on after
/// other lines): the event and delivery, the settles it sent, how it ended.
fn handle_line(
    out: &mut String,
    at: &At,
    notes: &mut Vec<&'static str>,
    issuance: Issuance,
    verb: &str,
) {
    let (trace, line) = (at.trace, &at.trace.lines[at.i]);
    let lease = trace.lease(issuance);
    let _ = write!(out, "{verb} ");
    event(out, lease.lease.seq);
    let _ = write!(out, " ({}, delivery {})", lease.name, lease.lease.attempt);
    let mut first = true;
    parts(out, at, notes, &mut first, ": ");
    let finished = line
        .parts
        .iter()
        .any(|p| matches!(p, Part::HandlerFinished { .. }));
    if finished && !sent_by_run(trace, at.i, issuance) {
        out.push_str(if first { ": " } else { "; " });
        out.push_str("nothing settled (left to expire)");
    }
}

/// Whether the handler run told on line `i` sent anything (on this line or an earlier one).
fn sent_by_run(trace: &Trace, i: usize, issuance: Issuance) -> bool {
    let worker = trace.lines[i].worker;
    let first = trace.lines.start();
    let start = trace
        .lines
        .range(first..i + 1)
        .rposition(|l| {
            l.worker == worker
                && matches!(l.kind, LineKind::Handle { issuance: x } if x == issuance)
        })
        .map_or(i, |offset| first + offset);
    trace
        .lines
        .range(start..i + 1)
        .filter(|l| l.worker == worker)
        .flat_map(|l| &l.parts)
        .any(|p| matches!(p, Part::Request(id) if trace.request(*id).issuance == issuance))
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

/// The name of `issuance` in the timeline: its recorded name, or its oracle name when the
/// recording let go of it.
fn lease_name(trace: &Trace, issuance: Issuance) -> String {
    trace
        .leases
        .get(issuance.0 as usize)
        .map_or_else(|| issuance.to_string(), |lease| lease.name.clone())
}

/// What a fetch line says of one lease it issued: its name, the id it shares with an earlier
/// lease of its record, its deadline (with [`Style::times`]).
fn issued_lease(out: &mut String, trace: &Trace, issuance: Issuance, style: Style) {
    let lease = trace.lease(issuance);
    out.push_str(&lease.name);
    let mut notes = Vec::new();
    if let Some(earlier) = lease.id_of {
        let id = lease.lease.lease_id.0;
        notes.push(format!("{}'s id {id} again", lease_name(trace, earlier)));
    }
    if style.times {
        notes.push(format!("deadline {} ms", lease.lease.deadline_ms));
    }
    if !notes.is_empty() {
        let _ = write!(out, " ({})", notes.join(", "));
    }
}

fn fetched(out: &mut String, trace: &Trace, group: GroupIx, result: &FetchResult, style: Style) {
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
                issued_lease(out, trace, l, style);
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

/// ` (deadline 30000 ms)` with [`Style::times`]: the deadline of the lease as `request`
/// names it (the holder's copy).
fn deadline(out: &mut String, at: &At, request: &Request) {
    if at.style.times {
        let _ = write!(out, " (deadline {} ms)", request.lease.deadline_ms);
    }
}

/// A request sent on line `at.i`: with its answer when it also landed there, else `sends`.
fn request_here(out: &mut String, at: &At, id: RequestId) {
    let request = at.trace.request(id);
    let name = &at.trace.lease(request.issuance).name;
    if request.landed_line != Some(at.i) {
        let _ = write!(out, "sends {} {name}", verb(&request.op));
        deadline(out, at, request);
        return;
    }
    if matches!(request.answer, Some(Err(_))) {
        out.push_str("tries ");
    }
    let _ = write!(out, "{} {name}", verb(&request.op));
    deadline(out, at, request);
    out.push_str(" → ");
    result(out, at, id);
}

/// A request sent on an earlier line lands on line `at.i` (or a duplicate of it does).
fn landing(out: &mut String, at: &At, id: RequestId, duplicate: Option<u32>) {
    let trace = at.trace;
    let request = trace.request(id);
    let name = &trace.lease(request.issuance).name;
    let sent_t = at.index.get(request.line).copied().flatten().unwrap_or(0);
    let in_flight_ms = trace.lines[at.i].at_ms.saturating_sub(request.sent_ms);
    let deadline = |out: &mut String| {
        if at.style.times {
            let _ = write!(out, ", deadline {} ms", request.lease.deadline_ms);
        }
    };
    if let Some(k) = duplicate {
        let _ = write!(
            out,
            "duplicate of {} {name} (sent at t{sent_t}",
            verb(&request.op)
        );
        deadline(out);
        out.push_str(") → ");
        duplicate_answer(out, request.duplicate_answers.get(k as usize));
        return;
    }
    if matches!(request.answer, Some(Err(_))) {
        out.push_str("tries ");
    }
    let _ = write!(out, "{} {name} (sent at t{sent_t}", verb(&request.op));
    if in_flight_ms > 0 {
        out.push_str(", delayed ");
        duration(out, in_flight_ms);
    }
    deadline(out);
    out.push_str(") → ");
    result(out, at, id);
}

/// `48 s`, `1.5 s`, `250 ms`.
fn duration(out: &mut String, ms: u64) {
    if ms < 1_000 {
        let _ = write!(out, "{ms} ms");
    } else if ms.is_multiple_of(1_000) {
        let _ = write!(out, "{} s", ms / 1_000);
    } else {
        let _ = write!(out, "{}.{} s", ms / 1_000, ms % 1_000 / 100);
    }
}

fn duplicate_answer(out: &mut String, answer: Option<&Result<(), SettleError>>) {
    match answer {
        Some(Ok(())) => out.push_str("accepted"),
        Some(Err(error)) => refused(out, error),
        None => out.push_str("in flight"),
    }
}

/// What came of a request that landed: the broker's answer and effect, what the worker saw,
/// duplicates landing at the same moment, the runtime's reaction.
fn result(out: &mut String, at: &At, id: RequestId) {
    use crate::trace::Fault;
    let trace = at.trace;
    let request = trace.request(id);
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
    for part in &trace.lines[at.i].parts {
        if let Part::Landed {
            request: r,
            duplicate: Some(k),
        } = *part
        {
            if r == id {
                out.push_str(" (duplicate → ");
                duplicate_answer(out, request.duplicate_answers.get(k as usize));
                out.push(')');
            }
        }
    }
    match request.follow_up {
        Some(ErrorAction::Drop) => out.push_str("; lease dropped, no nack"),
        Some(ErrorAction::LeaveToExpire) => out.push_str("; left to expire"),
        Some(ErrorAction::Nack) => {
            out.push_str("; runtime nacks");
            match request.follow_up_request {
                Some(nack) if trace.request(nack).line == at.i => {
                    out.push_str(": ");
                    request_here(out, at, nack);
                }
                Some(_) => {}
                None => out.push_str(": not sent"),
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

/// `I1 stale-never-counts violated at t31 (step 40): …` — a violation named by the timeline
/// line it was found on, and each cause it names by its line (`…, but L1 expired at t3`).
pub fn violation_text(found: &Found, timeline: &Timeline) -> String {
    violation_text_at(found, timeline.t_of(found.line), &timeline.told(found))
}

/// [`violation_text`] for a violation shown at `t` with its detail `told` (a streamed
/// timeline's [`crate::recorder::Streamed::violation_t`] and
/// [`crate::recorder::Streamed::violation_told`]).
pub fn violation_text_at(found: &Found, t: Option<usize>, told: &str) -> String {
    let mut out = format!("{} violated", found.invariant());
    if let Some(t) = t {
        let _ = write!(out, " at t{t}");
    }
    let _ = write!(out, " (step {}): {told}", found.violation.step);
    out
}

/// One timeline line as a structured record (`replay --json`). Its fields are in alphabetical
/// order, as are [`RequestRecord`]'s: serialized directly, a record is the same bytes as the
/// JSON object `serde_json` builds of it (which sorts its keys), so a streamed `--json` need
/// not build one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Virtual time of the line: when the thing it tells happened. Lines never go back in
    /// time. An expiry's is when the broker expired the lease: with a lazy broker (`expiry =
    /// "on_fetch"`) that is its next fetch, past the lease's deadline (the drawing ends the
    /// lease's bar at the deadline).
    pub at_ms: u64,
    /// The lease the line is about, for a fetch, handle or expiry.
    pub lease: Option<String>,
    /// `publish`, `fetch`, `settle`, `landing`, `handle`, `crash`, `restart`, `pause`,
    /// `expire`, `broker_restart`, `drain_start`, `drain_end`.
    pub operation: &'static str,
    /// The requests sent or landing on this line.
    pub requests: Vec<RequestRecord>,
    /// Its `tN` index.
    pub t: usize,
    /// The rendered text.
    pub text: String,
    /// The invariants found violated after this line.
    pub violations: Vec<&'static str>,
    /// The acting worker (the sender, for a landing).
    pub worker: Option<String>,
}

/// A request as told on one line (fields in alphabetical order: see [`Record`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    /// `sent` (still on the wire), `landed` or `duplicate`.
    pub event: &'static str,
    /// The group's frontier before and after, when an accepted request moved it.
    pub frontier: Option<(u32, u32)>,
    /// The lease it names.
    pub lease: String,
    /// `ack`, `nack`, `reject`, `renew`.
    pub op: &'static str,
    /// The broker's answer: `ok`, an error name, or `not_applied` (lost, refused).
    pub result: Option<String>,
    /// What the worker saw, when the reply came.
    pub seen: Option<String>,
    /// When it was sent.
    pub sent_ms: u64,
    /// The record's status after an accepted request.
    pub status: Option<String>,
}

fn result_name(result: &Result<(), SettleError>) -> String {
    match result {
        Ok(()) => "ok".to_string(),
        Err(error) => error.name().to_string(),
    }
}

fn request_record(trace: &Trace, id: RequestId, event: &'static str) -> RequestRecord {
    let r = trace.request(id);
    let landed = event != "sent";
    RequestRecord {
        op: r.op.name(),
        lease: trace.lease(r.issuance).name.clone(),
        event,
        sent_ms: r.sent_ms,
        result: landed.then(|| {
            r.answer
                .as_ref()
                .map_or("not_applied".to_string(), result_name)
        }),
        seen: r.seen.as_ref().map(result_name),
        frontier: r.effect.frontier.filter(|_| landed),
        status: r.effect.status.filter(|_| landed).map(|s| format!("{s:?}")),
    }
}

fn operation(kind: &LineKind) -> (&'static str, Option<Issuance>) {
    match kind {
        LineKind::Published { .. } => ("publish", None),
        LineKind::Fetched { .. } => ("fetch", None),
        LineKind::Settle => ("settle", None),
        LineKind::Landing => ("landing", None),
        LineKind::Handle { issuance } | LineKind::HandlerResumed { issuance } => {
            ("handle", Some(*issuance))
        }
        LineKind::Crashed { .. } => ("crash", None),
        LineKind::Restarted => ("restart", None),
        LineKind::Paused { .. } => ("pause", None),
        LineKind::BrokerRestarted { .. } => ("broker_restart", None),
        LineKind::Expired { issuance, .. } => ("expire", Some(*issuance)),
        LineKind::Lapsed { issuance } => ("lapse", Some(*issuance)),
        LineKind::DrainStarted => ("drain_start", None),
        LineKind::DrainEnded { .. } => ("drain_end", None),
    }
}

/// The shown lines of `trace` as structured records, in timeline order: one per `tN`, each
/// with the violations its line marks.
pub fn records(trace: &Trace, timeline: &Timeline) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    let mut marked = 0;
    for (i, line) in trace.lines.iter().enumerate() {
        let Some(t) = timeline.index[i] else { continue };
        if line.kind == LineKind::Restarted
            && line.worker.is_some_and(|w| has_later_line(trace, i, w))
        {
            // A folded restart: told on its worker's next line, which is its own record.
            continue;
        }
        let violations = violations_marked(trace, marked..=i);
        marked = i + 1;
        let text = timeline.lines.get(t).cloned().unwrap_or_default();
        out.push(record_of(trace, i, t, text, violations));
    }
    out
}

/// The record of trace line `i`, shown as `tN` = `t` with `text`, marking `violations`.
pub fn record_of(
    trace: &Trace,
    i: usize,
    t: usize,
    text: String,
    violations: Vec<&'static str>,
) -> Record {
    let line = &trace.lines[i];
    let (operation, issuance) = operation(&line.kind);
    let mut requests = Vec::new();
    for part in &line.parts {
        match *part {
            Part::Request(id) if trace.request(id).landed_line != Some(i) => {
                requests.push(request_record(trace, id, "sent"));
            }
            Part::Landed { request, duplicate } => {
                let event = if duplicate.is_some() {
                    "duplicate"
                } else {
                    "landed"
                };
                requests.push(request_record(trace, request, event));
            }
            _ => {}
        }
    }
    Record {
        t,
        at_ms: line.at_ms,
        worker: line.worker.map(|w| trace.workers[w].clone()),
        operation,
        lease: issuance.map(|l| trace.lease(l).name.clone()),
        requests,
        violations,
        text,
    }
}
