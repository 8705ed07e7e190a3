//! The recorder: an optional sink of the engine's event stream that keeps the whole story.
//!
//! A campaign seed runs without one (its trace is a hash); a scenario replay, a `--trace` run
//! and a failing seed re-run for its file attach one. The recorder keeps two views of the run:
//!
//! * the **event log** ([`Recorder::events`]): every [`Event`] with its virtual time and the
//!   driver's step, in the order it happened — a request's send and its landing are separate
//!   entries at their own times;
//! * the **trace** ([`Trace`]): the same events folded into lines, one per action, with each
//!   request's later consequences (its answer, the reply, the runtime's follow-up) attached to
//!   the line that sent it — what [`crate::timeline`] and [`crate::svg`] render.
//!
//! Memory grows with the run: a recorder is for runs a person will read. A **streamed**
//! recorder ([`Recorder::streaming`]) keeps neither: it hands each timeline line to a sink as
//! soon as nothing can change it any more, and drops the lines, requests and leases nothing
//! will read again, so its memory follows what is still open (requests in flight, handler
//! runs, restarts not yet folded), not the length of the run.

use crate::event::{Event, FetchOutcome, Origin, Readback};
use crate::timeline::Renderer;
use crate::trace::{
    Cause, Effect, FetchResult, Found, LeaseEnd, LeaseInfo, LeaseLines, Line, LineKind, Part,
    Request, RequestId, StaleTimer, Told, Trace, Window, WorkerIx,
};
use leasehold_model::detail::{Happened, Moment, Piece};
use leasehold_model::{
    BrokerView, GroupIx, Issuance, Lease, LeaseId, Ms, Outcome, Seq, SettleError,
};
use serde::Serialize;
use smallvec::SmallVec;
use std::collections::{BTreeMap, BTreeSet};

/// One entry of the event log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stamped {
    /// Virtual time when it happened.
    pub at_ms: Ms,
    /// The driver's step index (a scenario step) at that moment.
    pub step: Option<usize>,
    /// What happened.
    pub event: Event,
}

/// Called with the trace so far and the broker at the end of every step: a test compares the
/// story told so far with the broker's own state.
#[derive(Clone)]
pub struct StepObserver(pub std::sync::Arc<ObserveFn>);

/// What a [`StepObserver`] calls.
pub type ObserveFn = dyn Fn(&Trace, &dyn BrokerView) + Send + Sync;

impl std::fmt::Debug for StepObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepObserver")
    }
}

/// Where a streamed timeline goes: called with each line's text (without its newline), in
/// order, as soon as the line is final.
#[derive(Clone)]
pub struct TimelineSink(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for TimelineSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimelineSink")
    }
}

/// Where the times of a streamed timeline's lines go: called with each shown line's `tN`
/// index and virtual time, in order, as soon as the line is final (what a record would tell of
/// it, without building the record).
#[derive(Clone)]
pub struct TimeSink(pub std::sync::Arc<dyn Fn(usize, Ms) + Send + Sync>);

impl std::fmt::Debug for TimeSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimeSink")
    }
}

/// Where a streamed timeline's records go ([`crate::timeline::Record`], what `--json` gives
/// for each shown line): called in order, as soon as each line is final.
#[derive(Clone)]
pub struct RecordSink(pub std::sync::Arc<dyn Fn(&crate::timeline::Record) + Send + Sync>);

impl std::fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordSink")
    }
}

/// What a streamed timeline told, besides its lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Streamed {
    /// Lines shown (the last one is `t{lines - 1}`).
    pub lines: usize,
    /// For each violation of the trace, the `tN` it shows at (as [`crate::timeline::Timeline::t_of`]).
    pub violation_t: Vec<Option<usize>>,
    /// For each violation of the trace, its detail with the `tN` of each cause it names
    /// ([`Told::text`]).
    pub violation_told: Vec<String>,
    /// The most trace lines kept at once (the memory a streamed recorder needs).
    pub kept_lines_max: usize,
}

/// Lines a streamed recorder lets accumulate before it renders and drops what it can (more
/// when many lines wait on one that is still open: the work stays linear).
const STREAM_FLUSH_LINES: usize = 256;

/// A streamed recorder's state: what is still open, and the renderer.
#[derive(Clone, Debug)]
struct Stream {
    sink: TimelineSink,
    /// Where each shown line's record goes, when asked for.
    records: Option<RecordSink>,
    /// Where each shown line's `tN` and time go, when asked for.
    times: Option<TimeSink>,
    renderer: Renderer,
    /// By request id, the request a follow-up nack answers.
    follow_ups: Window<Option<RequestId>>,
    /// Requests whose messages are not all done: their lines may still change.
    open_requests: BTreeSet<RequestId>,
    /// Handler runs not ended, by run id: the line each started on.
    open_runs: BTreeMap<u32, usize>,
    /// Per worker, its earliest restart with no later line of that worker yet (it may fold).
    pending_restart: Vec<Option<usize>>,
    /// Per worker, its latest line that is not a restart.
    last_not_restart: Vec<Option<usize>>,
    /// The latest line that is not an expiry (the expiries after it may still change: see
    /// [`Recorder::tell_batch_move_once`]).
    last_not_expiry: Option<usize>,
    /// Lines not rendered yet that go on with a handler run: the line the run started on.
    resumed: BTreeMap<usize, usize>,
    /// The `tN` of each violation, once known.
    violation_t: Vec<Option<usize>>,
    /// Each violation's detail with its causes' `tN`, once known.
    violation_told: Vec<String>,
    /// Render and drop when the trace has this many lines.
    flush_at: usize,
    kept_lines_max: usize,
    /// What a drawing of a stretch of the run needs kept ([`Recorder::keeping`]).
    keep: Option<Keep>,
}

/// A stretch of virtual time whose whole story a streamed recorder keeps
/// ([`Recorder::keeping`]).
#[derive(Clone, Copy, Debug)]
struct Keep {
    from_ms: Ms,
    to_ms: Ms,
    /// The run reached `from_ms`: nothing is dropped any more.
    pinned: bool,
    /// The run passed `to_ms`: nothing is recorded any more.
    frozen: bool,
}

impl Stream {
    /// The first line that may still change (the lines before it are final): the last line
    /// (it may take more parts, and marks of violations found after it), a line of an open
    /// request or handler run, a restart that may fold into its worker's next line, an expiry
    /// of the batch at the end (its frontier move may go to a later one).
    fn render_limit(&self, trace: &Trace, run_line: &Window<usize>) -> usize {
        let mut limit = trace.lines.len().saturating_sub(1);
        for &id in &self.open_requests {
            limit = limit.min(trace.request(id).line);
        }
        for &run in self.open_runs.keys() {
            limit = limit.min(run_line[run as usize]);
        }
        for &restart in self.pending_restart.iter().flatten() {
            limit = limit.min(restart);
        }
        limit.min(self.last_not_expiry.map_or(0, |line| line + 1))
    }
}

/// Keeps a run's events and builds its trace.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    observer: Option<StepObserver>,
    trace: Trace,
    events: Vec<Stamped>,
    /// The line of each handler run, by run id.
    run_line: Window<usize>,
    /// Streamed: the timeline goes to a sink as it becomes final ([`Recorder::streaming`]).
    stream: Option<Box<Stream>>,
    /// Leases issued by the fetch in progress.
    issued: Vec<Issuance>,
    /// Renewed leases carried by replies not yet received.
    renewed: BTreeMap<RequestId, Lease>,
    step: Option<usize>,
    /// The first lease the driver may still name: a violation's causes are told by the lines
    /// of leases from it on (a streamed recorder keeps them all; a whole one keeps more, and
    /// tells the same).
    named_from: Issuance,
    /// The driver may name any lease ([`Recorder::names_any_lease`]).
    names_any_lease: bool,
    /// Per open record (group, seq), its latest leases with the broker's ids, newest last: who
    /// a stale timer was armed for, and which id the broker issued twice.
    recent: BTreeMap<(u32, Seq), RecentLeases>,
    /// The latest broker restart's line.
    restart_line: Option<usize>,
}

/// How many of a record's latest leases [`Recorder`] remembers with their broker ids.
const RECENT_LEASES: usize = 4;

/// A record's latest leases with the broker's ids, newest last.
type RecentLeases = SmallVec<[(Issuance, LeaseId); RECENT_LEASES]>;

impl Recorder {
    /// A recorder for a run of these workers and groups.
    pub fn new(workers: &[String], groups: &[String]) -> Recorder {
        Recorder {
            trace: Trace {
                workers: workers.to_vec(),
                groups: groups.to_vec(),
                ..Trace::default()
            },
            ..Recorder::default()
        }
    }

    /// A streamed recorder for a run of these workers and groups: each timeline line goes to
    /// `sink` as soon as it is final, and what nothing will read again is dropped. It keeps no
    /// event log; its trace keeps what is still open, and every violation. The engine tells it
    /// when a request is done ([`Recorder::request_done`]) and which leases it still tracks
    /// ([`Recorder::end_step`]). Meant for seeded runs: their driver names only leases its
    /// workers hold, so a lease the recorder dropped is never asked of it again (a scripted
    /// scenario may name any lease it bound, at any time: it is recorded whole).
    pub fn streaming(workers: &[String], groups: &[String], sink: TimelineSink) -> Recorder {
        let mut recorder = Recorder::new(workers, groups);
        recorder.stream = Some(Box::new(Stream {
            sink,
            records: None,
            times: None,
            renderer: Renderer::new(workers.len()),
            follow_ups: Window::default(),
            open_requests: BTreeSet::new(),
            open_runs: BTreeMap::new(),
            pending_restart: vec![None; workers.len()],
            last_not_restart: vec![None; workers.len()],
            last_not_expiry: None,
            resumed: BTreeMap::new(),
            violation_t: Vec::new(),
            violation_told: Vec::new(),
            flush_at: STREAM_FLUSH_LINES,
            kept_lines_max: 0,
            keep: None,
        }));
        recorder
    }

    /// A streamed recorder that keeps the whole story of virtual times `from_ms..=to_ms`: what
    /// happened in that stretch and what was open when it began (leases held, requests on the
    /// wire), as a drawing of it needs ([`crate::svg::render_view`]). Before `from_ms` it drops
    /// what is done, as any streamed recorder; from `from_ms` on it drops nothing; past `to_ms`
    /// it records nothing more, so its memory follows the live set and the stretch, not the
    /// run. Its timeline goes to the sink only up to `from_ms`, and its trace is meant for that
    /// drawing alone: past `to_ms`, what is still open stays open in it, except a lease a lazy
    /// broker expires later at a deadline within the stretch (told then, it still ends there).
    pub fn keeping(mut self, from_ms: Ms, to_ms: Ms) -> Recorder {
        if let Some(stream) = &mut self.stream {
            stream.keep = Some(Keep {
                from_ms,
                to_ms,
                pinned: false,
                frozen: false,
            });
        }
        self
    }

    /// The stretch this recorder keeps, when it is pinned or frozen: nothing is rendered or
    /// dropped any more.
    fn keeps_all(&self) -> bool {
        let keep = self.stream.as_ref().and_then(|s| s.keep);
        keep.is_some_and(|k| k.pinned || k.frozen)
    }

    /// A streamed recorder whose timeline is rendered in `style` (its lines and records).
    pub fn styled(mut self, style: crate::timeline::Style) -> Recorder {
        let workers = self.trace.workers.len();
        if let Some(stream) = &mut self.stream {
            stream.renderer = Renderer::styled(workers, style);
        }
        self
    }

    /// A streamed recorder that also hands each shown line's `tN` and time to `times`.
    pub fn with_times(mut self, times: TimeSink) -> Recorder {
        if let Some(stream) = &mut self.stream {
            stream.times = Some(times);
        }
        self
    }

    /// A streamed recorder that also hands each shown line's record to `records`.
    pub fn with_records(mut self, records: RecordSink) -> Recorder {
        if let Some(stream) = &mut self.stream {
            stream.records = Some(records);
        }
        self
    }

    /// Whether the recorder streams its timeline.
    pub fn is_streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// Calls `observer` at the end of every step from now on.
    pub fn observe_with(&mut self, observer: StepObserver) {
        self.observer = Some(observer);
    }

    /// The driver may name any lease it was handed, at any time (a scripted scenario): the
    /// causes a violation names are told by every lease's lines. Never streamed.
    pub fn names_any_lease(&mut self) {
        self.names_any_lease = true;
    }

    /// A step ended: the observer, if any, sees the trace and the broker. Streamed, the lines
    /// that became final go to the sink; `leases_from` is the first lease the engine still
    /// tracks (None: none), below which no later event names a lease.
    pub fn end_step(&mut self, broker: &dyn BrokerView, leases_from: Option<Issuance>) {
        if let Some(observer) = &self.observer {
            (observer.0)(&self.trace, broker);
        }
        if !self.names_any_lease {
            let next = Issuance(self.trace.leases.len() as u32);
            self.named_from = self.named_from.max(leases_from.unwrap_or(next));
        }
        if self.keeps_all() {
            return;
        }
        if self
            .stream
            .as_ref()
            .is_some_and(|s| self.trace.lines.len() >= s.flush_at)
        {
            self.flush(false, leases_from);
        }
    }

    /// A request's messages are all done (landed or lost, replied, duplicates delivered):
    /// nothing will change it any more.
    pub fn request_done(&mut self, id: RequestId) {
        if let Some(stream) = &mut self.stream {
            stream.open_requests.remove(&id);
        }
    }

    /// Streamed: renders the lines that are final (every line, at the `end` of the run), then
    /// drops what nothing will read again.
    fn flush(&mut self, end: bool, leases_from: Option<Issuance>) {
        let Some(mut stream) = self.stream.take() else {
            return;
        };
        let trace = &self.trace;
        let len = trace.lines.len();
        let limit = if end {
            len
        } else {
            stream.render_limit(trace, &self.run_line)
        };
        let sink = stream.sink.clone();
        let records = stream.records.clone();
        let times = stream.times.clone();
        let mut shown_text = String::new();
        for i in stream.renderer.next()..limit.max(stream.renderer.next()) {
            let has_later = trace.lines[i]
                .worker
                .is_some_and(|w| stream.last_not_restart[w].is_some_and(|l| l > i));
            let (marked, t) = (stream.renderer.marked(), stream.renderer.shown());
            let mut emit = |text: &str| {
                (sink.0)(text);
                if records.is_some() {
                    shown_text.clear();
                    shown_text.push_str(text);
                }
            };
            stream
                .renderer
                .line(trace, &stream.follow_ups, i, has_later, &mut emit);
            if let Some(records) = records.as_ref().filter(|_| stream.renderer.shown() > t) {
                let violations = crate::timeline::violations_marked(trace, marked..=i);
                let text = std::mem::take(&mut shown_text);
                (records.0)(&crate::timeline::record_of(trace, i, t, text, violations));
            }
            if let Some(times) = times.as_ref().filter(|_| stream.renderer.shown() > t) {
                (times.0)(t, trace.lines[i].at_ms);
            }
            stream.resumed.remove(&i);
        }
        while let Some(found) = trace.violations.get(stream.violation_t.len()) {
            let t = match found.line {
                None => None,
                Some(line) => match stream.renderer.t_of(line) {
                    Some(t) => t,
                    None if end => None,
                    None => break,
                },
            };
            stream.violation_t.push(t);
            let renderer = &stream.renderer;
            let told = found.told.text(|line| renderer.t_at(line));
            stream.violation_told.push(told);
        }
        stream.kept_lines_max = stream.kept_lines_max.max(trace.lines.kept());
        if !end {
            self.drop_done(&mut stream, leases_from);
            let waiting = len - stream.renderer.next();
            stream.flush_at = len + STREAM_FLUSH_LINES.max(waiting);
        }
        self.stream = Some(stream);
    }

    /// Streamed: drops the lines, requests and leases below the first that something still
    /// reads — a line not rendered yet, a request still open, a handler run, a restart not
    /// folded yet, a violation whose `tN` is not known yet, a lease the engine tracks.
    fn drop_done(&mut self, stream: &mut Stream, leases_from: Option<Issuance>) {
        let trace = &self.trace;
        let mut lines_from = stream.renderer.next();
        let mut requests_from = trace.requests.len();
        let mut leases_from = leases_from.map_or(trace.leases.len(), |l| l.0 as usize);
        let lease = |issuance: Issuance, from: &mut usize| {
            *from = (*from).min(issuance.0 as usize);
        };
        for &id in &stream.open_requests {
            let r = trace.request(id);
            lines_from = lines_from.min(r.line);
            requests_from = requests_from.min(id.0 as usize);
            lease(r.issuance, &mut leases_from);
        }
        for &start in stream.open_runs.values().chain(stream.resumed.values()) {
            lines_from = lines_from.min(start);
        }
        for found in &trace.violations[stream.violation_t.len()..] {
            lines_from = lines_from.min(found.line.unwrap_or(usize::MAX));
        }
        if let Some(fold) = stream.renderer.first_fold() {
            lines_from = lines_from.min(fold);
        }
        for line in trace.lines.range(stream.renderer.next()..trace.lines.len()) {
            match &line.kind {
                LineKind::Handle { issuance }
                | LineKind::HandlerResumed { issuance }
                | LineKind::Expired { issuance, .. }
                | LineKind::Lapsed { issuance } => lease(*issuance, &mut leases_from),
                LineKind::Fetched {
                    result: FetchResult::Leased { leases, .. },
                    ..
                } => {
                    for &issuance in leases {
                        lease(issuance, &mut leases_from);
                    }
                }
                _ => {}
            }
            for part in &line.parts {
                let (Part::Request(id) | Part::Landed { request: id, .. }) = *part else {
                    continue;
                };
                let r = trace.request(id);
                // A landing names the line its request was sent on (`sent at tN`).
                lines_from = lines_from.min(r.line);
                let parent = stream.follow_ups.get(id.0 as usize).copied().flatten();
                requests_from = requests_from.min(parent.unwrap_or(id).0 as usize);
                lease(r.issuance, &mut leases_from);
            }
        }
        // A handler run's later line reads the requests sent on the lines since it started.
        let sent_from = trace
            .lines
            .range(lines_from..trace.lines.len())
            .flat_map(|line| &line.parts)
            .find_map(|part| match *part {
                Part::Request(id) => Some(id.0 as usize),
                _ => None,
            });
        requests_from = requests_from.min(sent_from.unwrap_or(usize::MAX));
        let runs_from = stream
            .open_runs
            .keys()
            .next()
            .map_or(self.run_line.len(), |&run| run as usize);
        // The `tN` of the lines a violation may name as its causes: those of the leases the
        // driver may still name, and those of the violations not told yet.
        let named = (self.named_from.0 as usize).max(trace.leases.start());
        let causes_from = trace
            .leases
            .range(named..trace.leases.len())
            .filter_map(|lease| lease.lines.first())
            .chain(
                trace.violations[stream.violation_t.len()..]
                    .iter()
                    .flat_map(|found| found.told.causes())
                    .filter_map(|cause| cause.line),
            )
            .min()
            .unwrap_or(usize::MAX);
        self.trace.lines.drop_below(lines_from);
        stream.renderer.drop_below(lines_from.min(causes_from));
        self.trace.requests.drop_below(requests_from);
        stream.follow_ups.drop_below(requests_from);
        self.trace.leases.drop_below(leases_from);
        self.run_line.drop_below(runs_from);
    }

    /// The trace so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The event log so far.
    pub fn events(&self) -> &[Stamped] {
        &self.events
    }

    /// The finished trace (its end time set to `end_ms`) and the event log.
    pub fn finish(mut self, end_ms: Ms) -> (Trace, Vec<Stamped>) {
        self.trace.end_ms = end_ms;
        (self.trace, self.events)
    }

    /// Streamed: renders the lines still held back (the run ended: every line is final) and
    /// returns what the timeline told, with what is left of the trace (its violations, its
    /// end time). `None` for a recorder that does not stream.
    pub fn finish_streaming(mut self, end_ms: Ms) -> Option<(Trace, Streamed)> {
        self.trace.end_ms = end_ms;
        if !self.keeps_all() {
            self.flush(true, None);
        }
        let stream = self.stream.take()?;
        let streamed = Streamed {
            lines: stream.renderer.shown(),
            violation_t: stream.violation_t,
            violation_told: stream.violation_told,
            kept_lines_max: stream.kept_lines_max,
        };
        Some((self.trace, streamed))
    }

    /// The latest line of handler run `run` (where it started, or where it went on), once it
    /// started.
    pub fn run_line(&self, run: crate::event::RunId) -> Option<usize> {
        self.run_line.get(run.0 as usize).copied()
    }

    /// Sets the driver's step index recorded with the following lines and events.
    pub fn set_step(&mut self, step: Option<usize>) {
        self.step = step;
    }

    /// Names a lease in the timeline (a scenario's `bind`); leases are `L<n>` by default.
    pub fn name_lease(&mut self, issuance: Issuance, name: String) {
        if let Some(info) = self.trace.leases.get_mut(issuance.0 as usize) {
            info.name = name;
        }
    }

    fn line(&mut self, at_ms: Ms, worker: Option<WorkerIx>, kind: LineKind) -> usize {
        if let Some(stream) = &mut self.stream {
            let i = self.trace.lines.len();
            match (worker, &kind) {
                (Some(w), LineKind::Restarted) => {
                    stream.pending_restart[w].get_or_insert(i);
                }
                (Some(w), _) => {
                    stream.pending_restart[w] = None;
                    stream.last_not_restart[w] = Some(i);
                }
                (None, _) => {}
            }
            if !matches!(kind, LineKind::Expired { .. }) {
                stream.last_not_expiry = Some(i);
            }
        }
        self.trace.lines.push(Line {
            at_ms,
            worker,
            step: self.step,
            kind,
            parts: Vec::new(),
        })
    }

    /// The line to tell something of `line`'s story at `at_ms`: `line` itself when it is the
    /// last line and tells the same moment, else a new line (nothing is told out of order).
    fn continue_on(
        &mut self,
        line: usize,
        at_ms: Ms,
        worker: Option<WorkerIx>,
        kind: impl FnOnce() -> LineKind,
    ) -> usize {
        let last = self.trace.lines.len().checked_sub(1);
        if last == Some(line) && self.trace.lines[line].at_ms == at_ms {
            line
        } else {
            self.line(at_ms, worker, kind())
        }
    }

    /// The line on which a landing of request `id` at `at_ms` is told, with its part.
    fn landing_line(&mut self, at_ms: Ms, id: RequestId, duplicate: Option<u32>) -> usize {
        let r = &self.trace.requests[id.0 as usize];
        let (base, worker) = (r.landed_line.unwrap_or(r.line), r.worker);
        let line = self.continue_on(base, at_ms, Some(worker), || LineKind::Landing);
        let part = Part::Landed {
            request: id,
            duplicate,
        };
        self.trace.lines[line].parts.push(part);
        if duplicate.is_none() {
            self.request(id).landed_line = Some(line);
        }
        line
    }

    /// The newest of `lease`'s record's recent leases before `before` that the broker gave
    /// `lease_id`.
    fn recent_with_id(
        &self,
        lease: &Lease,
        lease_id: LeaseId,
        before: Issuance,
    ) -> Option<Issuance> {
        let recent = self.recent.get(&(lease.group as u32, lease.seq))?;
        recent
            .iter()
            .rev()
            .find(|&&(issuance, id)| id == lease_id && issuance < before)
            .map(|&(issuance, _)| issuance)
    }

    /// The line that tells `moment`, as far as the recorder knows: only for the leases the
    /// driver may still name, so that a streamed recorder, which keeps no others, tells the
    /// same as a whole one.
    fn cause_line(&self, moment: &Moment) -> Option<usize> {
        let (issuance, line): (Issuance, fn(&LeaseLines) -> Option<usize>) = match moment.what {
            Happened::Issued(issuance) => (issuance, |l| l.issued),
            Happened::Renewed(issuance) => (issuance, |l| l.renewed),
            Happened::Expired(issuance) => (issuance, |l| l.expired),
            Happened::Settled(issuance) => (issuance, |l| l.settled),
            Happened::RestartedBefore(issuance) => (issuance, |l| l.restart),
        };
        if issuance < self.named_from {
            return None;
        }
        line(&self.trace.leases.get(issuance.0 as usize)?.lines)
    }

    fn request(&mut self, id: RequestId) -> &mut Request {
        &mut self.trace.requests[id.0 as usize]
    }

    fn lease(&mut self, issuance: Issuance) -> &mut LeaseInfo {
        &mut self.trace.leases[issuance.0 as usize]
    }

    /// Records `event`, which happened at `at_ms` (a copy of it: see [`Recorder::record_owned`]).
    pub fn record(&mut self, at_ms: Ms, event: &Event) {
        self.record_owned(at_ms, event.clone());
    }

    /// Records `event`, which happened at `at_ms`, taking it (no copy of it is made).
    #[inline(never)]
    pub fn record_owned(&mut self, at_ms: Ms, event: Event) {
        if let Some(keep) = self.stream.as_mut().and_then(|s| s.keep.as_mut()) {
            // A violation is stamped at its step's end, which may pass the stretch's end after
            // its last line: it belongs to that line.
            let violation = matches!(event, Event::Violated { .. });
            keep.frozen |= at_ms > keep.to_ms && !violation;
            keep.pinned |= at_ms >= keep.from_ms;
            // A lazy broker expires a lease at its next fetch, past its deadline: an expiry
            // whose lease ended within the stretch belongs to it, however late it is told.
            let expired_within =
                matches!(event, Event::Expired { at_ms: deadline, .. } if deadline <= keep.to_ms);
            if keep.frozen && !expired_within {
                return;
            }
        }
        self.apply(at_ms, &event);
        if self.stream.is_some() {
            return;
        }
        self.events.push(Stamped {
            at_ms,
            step: self.step,
            event,
        });
    }

    fn apply(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::Published { seq } => {
                self.line(at_ms, None, LineKind::Published { seq: *seq });
            }
            Event::Issued { .. } | Event::Fetched { .. } => self.fetch(at_ms, event),
            Event::Sent { .. } => self.sent(at_ms, event),
            Event::Landed {
                request,
                duplicate,
                answer,
                effect,
                renewed,
            } => self.landed(at_ms, *request, *duplicate, answer, effect, *renewed),
            Event::NotApplied {
                request,
                reached,
                seen,
            } => {
                self.landing_line(at_ms, *request, None);
                let r = self.request(*request);
                if *reached {
                    r.delivered_ms = Some(at_ms);
                }
                r.seen = Some(Err(seen.clone()));
            }
            Event::Replied {
                request,
                discarded,
                follow_up,
            } => self.replied(*request, *discarded, *follow_up),
            Event::HandlerStarted { .. }
            | Event::HandlerFinished { .. }
            | Event::HandlerKilled { .. } => self.handler(at_ms, event),
            Event::Expired {
                issuance,
                at_ms: deadline_ms,
                dead_lettered,
                frontier,
                stale_timer,
            } => {
                let end = LeaseEnd::Expired {
                    dead_lettered: *dead_lettered,
                };
                self.lease(*issuance).ended = Some((*deadline_ms, end));
                let lease = self.trace.leases[issuance.0 as usize].lease;
                let frontier = self.tell_batch_move_once(lease.group, *frontier, *dead_lettered);
                let timer = stale_timer.map(|lease_id| StaleTimer {
                    lease_id,
                    issuance: self.recent_with_id(&lease, lease_id, *issuance),
                });
                let kind = LineKind::Expired {
                    issuance: *issuance,
                    dead_lettered: *dead_lettered,
                    frontier,
                    timer,
                };
                let line = self.line(at_ms, None, kind);
                let lines = &mut self.lease(*issuance).lines;
                lines.expired = lines.expired.or(Some(line));
                if *dead_lettered {
                    self.recent.remove(&(lease.group as u32, lease.seq));
                }
            }
            _ => self.worker_or_phase(at_ms, event),
        }
    }

    /// The broker expires due leases in a batch and the engine reads each group's frontier
    /// before and after the batch: every expiry of a group in the batch carries the same move.
    /// It is told once, on the expiry that can move a frontier (a dead letter), the latest one.
    fn tell_batch_move_once(
        &mut self,
        group: GroupIx,
        frontier: Option<(Seq, Seq)>,
        dead_lettered: bool,
    ) -> Option<(Seq, Seq)> {
        let (before, _) = frontier?;
        for i in (self.trace.lines.start()..self.trace.lines.len()).rev() {
            let leases = &self.trace.leases;
            let LineKind::Expired {
                issuance,
                dead_lettered: earlier_dead,
                frontier: told,
                ..
            } = &mut self.trace.lines[i].kind
            else {
                break;
            };
            if leases[issuance.0 as usize].lease.group != group
                || told.is_none_or(|t| t.0 != before)
            {
                continue;
            }
            if *earlier_dead && !dead_lettered {
                return None;
            }
            *told = None;
        }
        frontier
    }

    /// A handler run: its line, then how it ended.
    fn handler(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::HandlerStarted {
                run,
                worker,
                issuance,
            } => {
                debug_assert_eq!(run.0 as usize, self.run_line.len());
                let kind = LineKind::Handle {
                    issuance: *issuance,
                };
                let line = self.line(at_ms, Some(*worker), kind);
                self.run_line.push(line);
                if let Some(stream) = &mut self.stream {
                    stream.open_runs.insert(run.0, line);
                }
            }
            Event::HandlerFinished { run, outcome } => {
                let line = self.resume_run(at_ms, run.0 as usize);
                self.trace.lines[line].parts.push(Part::HandlerFinished {
                    outcome: describe_outcome(outcome),
                    success: outcome.is_success(),
                });
                if let Some(stream) = &mut self.stream {
                    stream.open_runs.remove(&run.0);
                }
            }
            Event::HandlerKilled { run } => {
                let line = self.run_line[run.0 as usize];
                self.trace.lines[line].parts.push(Part::HandlerKilled);
                if let Some(stream) = &mut self.stream {
                    stream.open_runs.remove(&run.0);
                }
            }
            _ => unreachable!("handled by apply"),
        }
    }

    /// The line on which handler run `run` goes on at `at_ms` (see [`Recorder::continue_on`]).
    fn resume_run(&mut self, at_ms: Ms, run: usize) -> usize {
        let started = self.run_line[run];
        let worker = self.trace.lines[started].worker;
        let issuance = match &self.trace.lines[started].kind {
            LineKind::Handle { issuance } | LineKind::HandlerResumed { issuance } => *issuance,
            _ => unreachable!("a run line tells a handler run"),
        };
        let line = self.continue_on(started, at_ms, worker, || LineKind::HandlerResumed {
            issuance,
        });
        self.run_line[run] = line;
        if let Some(stream) = &mut self.stream {
            if line != started {
                let first = stream.open_runs.get(&(run as u32)).copied();
                stream.resumed.insert(line, first.unwrap_or(started));
            }
        }
        line
    }

    /// A lease issued, a fetch ended.
    fn fetch(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::Issued {
                worker,
                incarnation,
                issuance,
                lease,
                delivered,
            } => {
                debug_assert_eq!(issuance.0 as usize, self.trace.leases.len());
                let id_of = self.recent_with_id(lease, lease.lease_id, *issuance);
                let restart = id_of.and(self.restart_line);
                let recent = self
                    .recent
                    .entry((lease.group as u32, lease.seq))
                    .or_default();
                if recent.len() == RECENT_LEASES {
                    recent.remove(0);
                }
                recent.push((*issuance, lease.lease_id));
                self.trace.leases.push(LeaseInfo {
                    name: issuance.to_string(),
                    issuance: *issuance,
                    lease: *lease,
                    holder: *worker,
                    holder_incarnation: *incarnation,
                    delivered: *delivered,
                    fetched_ms: at_ms,
                    ended: None,
                    id_of,
                    lines: LeaseLines {
                        restart,
                        ..LeaseLines::default()
                    },
                });
                self.issued.push(*issuance);
            }
            Event::Fetched {
                worker,
                group,
                outcome,
            } => {
                let issued = std::mem::take(&mut self.issued);
                let result = match outcome {
                    FetchOutcome::Leased { reply_lost, .. } => FetchResult::Leased {
                        leases: issued.clone(),
                        reply_lost: *reply_lost,
                    },
                    FetchOutcome::Failed(error) => FetchResult::Failed(error.clone()),
                };
                let kind = LineKind::Fetched {
                    group: *group,
                    result,
                };
                let line = self.line(at_ms, Some(*worker), kind);
                for issuance in issued {
                    self.lease(issuance).lines.issued = Some(line);
                }
            }
            _ => unreachable!("handled by apply"),
        }
    }

    fn worker_or_phase(&mut self, at_ms: Ms, event: &Event) {
        match event {
            Event::Crashed { worker, held } => {
                let kind = LineKind::Crashed {
                    held: held.to_vec(),
                };
                self.line(at_ms, Some(*worker), kind);
            }
            Event::Restarted { worker } => {
                self.line(at_ms, Some(*worker), LineKind::Restarted);
            }
            Event::Paused { worker, until_ms } => {
                let kind = LineKind::Paused {
                    until_ms: *until_ms,
                };
                self.line(at_ms, Some(*worker), kind);
            }
            Event::BrokerRestarted { frontier } => {
                let kind = LineKind::BrokerRestarted {
                    frontier: frontier.to_vec(),
                };
                self.restart_line = Some(self.line(at_ms, None, kind));
            }
            Event::Lapsed { issuance } => {
                let kind = LineKind::Lapsed {
                    issuance: *issuance,
                };
                let line = self.line(at_ms, None, kind);
                if let Some(info) = self.trace.leases.get_mut(issuance.0 as usize) {
                    info.lines.expired = info.lines.expired.or(Some(line));
                }
            }
            Event::DrainStarted => {
                self.line(at_ms, None, LineKind::DrainStarted);
            }
            Event::DrainEnded {
                end,
                settled,
                frontier,
            } => {
                let kind = LineKind::DrainEnded {
                    settled: *settled,
                    why: end.describe(),
                    frontier: frontier.clone(),
                };
                self.line(at_ms, None, kind);
            }
            Event::Violated { violation } => {
                let line = self.trace.lines.len().checked_sub(1);
                let trace = &self.trace;
                let mut told = Told::default();
                let name = |issuance: Issuance| {
                    let kept = trace.leases.get(issuance.0 as usize);
                    kept.map(|lease| lease.name.as_str())
                };
                violation
                    .detail
                    .tell(&trace.groups, name, |piece| match piece {
                        Piece::Text(text) => told.push_text(text),
                        Piece::At(moment) => told.push_cause(Cause {
                            line: self.cause_line(moment),
                            at_ms: moment.at_ms,
                        }),
                    });
                self.trace.violations.push(Found {
                    violation: violation.clone(),
                    line,
                    step: self.step,
                    told,
                });
            }
            _ => unreachable!("handled by apply"),
        }
    }

    fn sent(&mut self, at_ms: Ms, event: &Event) {
        let &Event::Sent {
            request: id,
            worker,
            incarnation,
            issuance,
            op,
            lease,
            worker_clock_ms,
            sent_ms,
            fault,
            delayed,
            nack_on_failure,
            origin,
            ..
        } = event
        else {
            return;
        };
        debug_assert_eq!(id.0 as usize, self.trace.requests.len());
        self.trace.requests.push(Request {
            id,
            worker,
            incarnation,
            issuance,
            op,
            lease,
            worker_clock_ms,
            sent_ms,
            fault,
            delayed,
            nack_on_failure,
            delivered_ms: None,
            answer: None,
            effect: Effect::default(),
            duplicate_answers: Vec::new(),
            duplicate_effects: Vec::new(),
            seen: None,
            reply_discarded: false,
            follow_up: None,
            follow_up_request: None,
            line: 0,
            landed_line: None,
        });
        if let Some(stream) = &mut self.stream {
            stream.open_requests.insert(id);
            let parent = match origin {
                Origin::FollowUp(failed) => Some(failed),
                _ => None,
            };
            stream.follow_ups.push(parent);
        }
        let line = match origin {
            Origin::Own => self.line(at_ms, Some(worker), LineKind::Settle),
            Origin::Handler(run) => self.resume_run(at_ms, run.0 as usize),
            Origin::FollowUp(failed) => {
                let r = self.request(failed);
                r.follow_up_request = Some(id);
                let base = r.landed_line.unwrap_or(r.line);
                self.continue_on(base, at_ms, Some(worker), || LineKind::Settle)
            }
        };
        self.trace.lines[line].parts.push(Part::Request(id));
        self.request(id).line = line;
    }

    fn landed(
        &mut self,
        at_ms: Ms,
        id: RequestId,
        duplicate: bool,
        answer: &Result<(), SettleError>,
        readback: &Readback,
        renewed: Option<Lease>,
    ) {
        let (issuance, op, fault) = {
            let r = &self.trace.requests[id.0 as usize];
            (r.issuance, r.op, r.fault)
        };
        let mut settled_here = false;
        if answer.is_ok() {
            let info = self.lease(issuance);
            if op.is_settle() && info.ended.is_none() {
                info.ended = Some((at_ms, LeaseEnd::Settled { op: op.name() }));
                settled_here = true;
            }
            if let (Some(renewed), Some((_, LeaseEnd::Expired { .. }))) = (renewed, &info.ended) {
                // A renew that revived an expired lease (renew-revives): it lives again.
                info.ended = None;
                info.lease.deadline_ms = renewed.deadline_ms;
                info.lines.expired = None;
            }
            if matches!(
                readback.status,
                Some(leasehold_model::Status::Acked | leasehold_model::Status::DeadLettered)
            ) {
                let lease = self.trace.leases[issuance.0 as usize].lease;
                self.recent.remove(&(lease.group as u32, lease.seq));
            }
        }
        let note_lines = |lines: &mut LeaseLines, line: usize| {
            if settled_here {
                lines.settled = Some(line);
            }
            if answer.is_ok() && !op.is_settle() {
                lines.renewed = Some(line);
            }
        };
        if duplicate {
            let k = self.trace.requests[id.0 as usize].duplicate_answers.len() as u32;
            let line = self.landing_line(at_ms, id, Some(k));
            note_lines(&mut self.lease(issuance).lines, line);
            let effect = if answer.is_ok() {
                effect_of(readback)
            } else {
                Effect::default()
            };
            let r = self.request(id);
            r.duplicate_answers.push(answer.clone());
            r.duplicate_effects.push(effect);
            return;
        }
        let line = self.landing_line(at_ms, id, None);
        note_lines(&mut self.lease(issuance).lines, line);
        let r = self.request(id);
        r.delivered_ms = Some(at_ms);
        r.answer = Some(answer.clone());
        if answer.is_ok() {
            r.effect = effect_of(readback);
        }
        r.seen = Some(match fault {
            crate::trace::Fault::LostReply => Err(SettleError::Ambiguous("reply lost".into())),
            _ => answer.clone(),
        });
        if let Some(renewed) = renewed {
            self.renewed.insert(id, renewed);
        }
    }

    fn replied(
        &mut self,
        id: RequestId,
        discarded: bool,
        follow_up: Option<leasehold_model::ErrorAction>,
    ) {
        let renewed = self.renewed.remove(&id);
        let r = self.request(id);
        if discarded {
            r.reply_discarded = true;
            return;
        }
        r.follow_up = follow_up;
        let issuance = r.issuance;
        if matches!(r.seen, Some(Ok(()))) {
            if let Some(renewed) = renewed {
                self.lease(issuance).lease = renewed;
            }
        }
    }
}

/// What an accepted request did, as the engine read it back from the broker.
fn effect_of(readback: &Readback) -> Effect {
    let (before, after) = (readback.frontier_before, readback.frontier_after);
    Effect {
        frontier: (after != before).then_some((before, after)),
        frontier_after: after,
        status: readback.status,
        reason: readback.reason.map(|reason| reason.as_str().to_string()),
        renewed_until_ms: readback.renewed_until_ms,
    }
}

/// How a handler's outcome reads in a timeline.
pub fn describe_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok => "returns".to_string(),
        Outcome::Ack => "raises AckMessage".to_string(),
        Outcome::Error { kind, text } if text.is_empty() => format!("raises {kind}"),
        Outcome::Error { kind, text } => format!("raises {kind} ({text})"),
        Outcome::Nack(text) if text.is_empty() => "raises NackMessage".to_string(),
        Outcome::Nack(text) => format!("raises NackMessage ({text})"),
        Outcome::Reject(text) if text.is_empty() => "raises RejectMessage".to_string(),
        Outcome::Reject(text) => format!("raises RejectMessage ({text})"),
    }
}
