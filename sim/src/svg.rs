//! The SVG timeline: a lane per worker on a time axis in virtual milliseconds, a bar per lease
//! from fetch to expiry or settle, crash / restart / pause markers, each request as an arrow
//! from its send to its landing, settles marked accepted, rejected or ambiguous, and a legend.
//! Plain SVG 1.1 with no scripts or external resources, so any browser draws it; deterministic
//! (same trace, same bytes).

use crate::trace::{Fault, LeaseEnd, LineKind, Trace};
use leasehold_model::Ms;
use std::fmt::Write;

const WIDTH: f64 = 1160.0;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 72.0;
const LANE: f64 = 78.0;
const ROW: f64 = 20.0;

const GREEN: &str = "#2e7d32";
const RED: &str = "#c62828";
const ORANGE: &str = "#ef6c00";
const BLUE: &str = "#1565c0";
const GREY: &str = "#757575";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" tick step for a span of `span_ms`: 1, 2 or 5 × 10^k, about 8 ticks.
// Reachable for the crate's tests in tests/it.
#[doc(hidden)]
pub fn tick_step(span_ms: Ms) -> Ms {
    let raw = (span_ms / 8).max(1);
    let mut base = 1;
    while base * 10 <= raw {
        base *= 10;
    }
    [1, 2, 5, 10]
        .into_iter()
        .map(|m| m * base)
        .find(|&step| step >= raw)
        .unwrap_or(base * 10)
}

/// A stretch of virtual time to draw, both ends included: what happened in it, and what
/// crossed it (a lease held since before, a request on the wire), cut at its edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// Its first millisecond.
    pub from_ms: Ms,
    /// Its last millisecond.
    pub to_ms: Ms,
}

impl View {
    fn holds(&self, at_ms: Ms) -> bool {
        (self.from_ms..=self.to_ms).contains(&at_ms)
    }

    /// Whether something from `start_ms` to `end_ms` crosses the stretch.
    fn meets(&self, start_ms: Ms, end_ms: Ms) -> bool {
        start_ms <= self.to_ms && end_ms >= self.from_ms
    }
}

struct Scale {
    start_ms: Ms,
    end_ms: Ms,
    /// What is drawn; everything else is cut.
    view: View,
}

impl Scale {
    fn x(&self, at_ms: Ms) -> f64 {
        let width = WIDTH - LEFT - RIGHT;
        let at_ms = at_ms.clamp(self.view.from_ms, self.view.to_ms) - self.start_ms;
        let span = self.end_ms.saturating_sub(self.start_ms).max(1);
        LEFT + width * (at_ms as f64) / (span as f64)
    }
}

/// Draws `trace` as an SVG document headed `title` and `subtitle`; `provenance` (e.g. the
/// command that produced it) is kept in the document's `<desc>`.
pub fn render(trace: &Trace, title: &str, subtitle: &str, provenance: &str) -> String {
    render_view(trace, None, title, subtitle, provenance)
}

/// [`render`] of the stretch `view` only (`None`: the whole run), on a time axis of its own.
/// A lease still open at the stretch's end is drawn as held; a trace kept for a stretch
/// ([`crate::recorder::Recorder::keeping`]) may lack what came before it, which is not drawn.
pub fn render_view(
    trace: &Trace,
    view: Option<View>,
    title: &str,
    subtitle: &str,
    provenance: &str,
) -> String {
    let scale = match view {
        Some(view) => {
            // A margin of a fiftieth on each side, so that what stands at an edge shows.
            let margin = ((view.to_ms - view.from_ms) / 50).max(1);
            Scale {
                start_ms: view.from_ms.saturating_sub(margin),
                end_ms: view.to_ms.saturating_add(margin),
                view,
            }
        }
        None => whole(trace),
    };
    let step = tick_step((scale.end_ms - scale.start_ms).max(1));
    let lanes = trace.workers.len().max(1);
    let axis_y = TOP + LANE * lanes as f64 + 10.0;
    let height = axis_y + 110.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">"#
    );
    if !provenance.is_empty() {
        let _ = writeln!(svg, "<desc>{}</desc>", escape(provenance));
    }
    let _ = writeln!(
        svg,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="42" fill="#616161">{}</text>"##,
        escape(subtitle)
    );
    lanes_and_axis(&mut svg, trace, &scale, step, axis_y);
    let taken = lease_bars(&mut svg, trace, &scale);
    arrows(&mut svg, trace, &scale);
    markers(&mut svg, trace, &scale, &taken);
    violations(&mut svg, trace, &scale);
    legend(&mut svg, axis_y + 52.0);
    svg.push_str("</svg>\n");
    svg
}

/// The scale of a drawing of the whole run: from 0 to a tick past its last moment.
fn whole(trace: &Trace) -> Scale {
    let last_ms = trace
        .lines
        .iter()
        .map(|l| l.at_ms)
        .chain(trace.requests.iter().filter_map(|r| r.delivered_ms))
        .chain(
            trace
                .leases
                .iter()
                .filter_map(|l| l.ended.as_ref().map(|e| e.0)),
        )
        .chain([trace.end_ms])
        .max()
        .unwrap_or(0);
    let step = tick_step(last_ms.max(1));
    let end_ms = (last_ms / step + 1) * step;
    Scale {
        start_ms: 0,
        end_ms,
        view: View {
            from_ms: 0,
            to_ms: end_ms,
        },
    }
}

/// Each request that spent time on the wire: an arrow along its sender's lane, from the
/// moment it was sent to the moment it landed at the broker (dashed for a request that was
/// lost or refused without being applied).
fn arrows(svg: &mut String, trace: &Trace, scale: &Scale) {
    let _ = writeln!(
        svg,
        r#"<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{GREY}"/></marker></defs>"#
    );
    for request in &trace.requests {
        let Some(landed) = request.landed_line.and_then(|line| trace.lines.get(line)) else {
            continue;
        };
        let landed_ms = landed.at_ms;
        // (One that lands after the stretch is on the wire at its end: not drawn.)
        if landed_ms <= request.sent_ms
            || landed_ms > scale.view.to_ms
            || !scale.view.meets(request.sent_ms, landed_ms)
        {
            continue;
        }
        let y = lane_y(request.worker) + LANE - 10.0 - 4.0 * (request.id.0 % 3) as f64;
        let (x1, x2) = (scale.x(request.sent_ms), scale.x(landed_ms));
        let dash = if request.answer.is_none() {
            r#" stroke-dasharray="4 3""#
        } else {
            ""
        };
        let name = lease_name(trace, request.issuance);
        let _ = writeln!(
            svg,
            r#"<line x1="{x1:.1}" y1="{y:.1}" x2="{x2:.1}" y2="{y:.1}" stroke="{GREY}" stroke-width="1.5"{dash} marker-end="url(#head)"><title>{} {} sent at {} ms, landed at {landed_ms} ms</title></line>"#,
            request.op.name().to_uppercase(),
            escape(&name),
            request.sent_ms
        );
    }
}

/// A lease's name in the drawing (its number, when a trace kept for a stretch lacks it).
fn lease_name(trace: &Trace, issuance: leasehold_model::Issuance) -> std::borrow::Cow<'_, str> {
    match trace.leases.get(issuance.0 as usize) {
        Some(info) => std::borrow::Cow::Borrowed(info.name.as_str()),
        None => std::borrow::Cow::Owned(issuance.to_string()),
    }
}

fn lane_y(worker: usize) -> f64 {
    TOP + LANE * worker as f64
}

fn lanes_and_axis(svg: &mut String, trace: &Trace, scale: &Scale, step: Ms, axis_y: f64) {
    for (worker, name) in trace.workers.iter().enumerate() {
        let y = lane_y(worker);
        let fill = if worker % 2 == 0 {
            "#f5f7fa"
        } else {
            "#ffffff"
        };
        let _ = writeln!(
            svg,
            r##"<rect x="{LEFT}" y="{y}" width="{}" height="{LANE}" fill="{fill}" stroke="#e0e0e0"/>"##,
            WIDTH - LEFT - RIGHT
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end" font-size="13" font-weight="bold">worker {}</text>"#,
            LEFT - 10.0,
            y + LANE / 2.0 + 4.0,
            escape(name)
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{axis_y}" x2="{}" y2="{axis_y}" stroke="#424242"/>"##,
        WIDTH - RIGHT
    );
    let mut at = scale.view.from_ms.div_ceil(step) * step;
    while at <= scale.view.to_ms {
        let x = scale.x(at);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#eeeeee"/><line x1="{x:.1}" y1="{axis_y}" x2="{x:.1}" y2="{}" stroke="#424242"/><text x="{x:.1}" y="{}" text-anchor="middle" fill="#424242">{at}</text>"##,
            axis_y,
            axis_y + 5.0,
            axis_y + 18.0
        );
        at += step;
    }
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" text-anchor="end" fill="#424242">virtual time (ms)</text>"##,
        WIDTH - RIGHT,
        axis_y + 34.0
    );
}

/// A rectangle of the drawing something already stands on.
#[derive(Clone, Copy)]
struct Taken {
    x1: f64,
    x2: f64,
    y1: f64,
    y2: f64,
    /// Text stands there (else a lease's bar).
    text: bool,
}

impl Taken {
    fn meets(&self, x1: f64, x2: f64, y1: f64, y2: f64) -> bool {
        self.x1 < x2 && x1 < self.x2 && self.y1 < y2 && y1 < self.y2
    }
}

/// Draws the leases' bars and labels; returns where they stand.
fn lease_bars(svg: &mut String, trace: &Trace, scale: &Scale) -> Vec<Taken> {
    let mut taken = Vec::new();
    // Stack overlapping leases of one lane in rows.
    let mut rows: Vec<Vec<Ms>> = vec![Vec::new(); trace.workers.len()];
    // (info, how it ended within the stretch, y, x1, x2) of every bar drawn.
    let mut bars = Vec::new();
    for info in &trace.leases {
        // What ends after the stretch is drawn as held at its end.
        let ended = info.ended.as_ref().filter(|e| e.0 <= scale.view.to_ms);
        let end = ended.map_or(scale.view.to_ms, |e| e.0);
        if !scale.view.meets(info.fetched_ms, end) {
            continue;
        }
        let lane_rows = &mut rows[info.holder];
        let row = match lane_rows.iter().position(|&free| free <= info.fetched_ms) {
            Some(row) => row,
            None => {
                lane_rows.push(0);
                lane_rows.len() - 1
            }
        };
        lane_rows[row] = end;
        let y = lane_y(info.holder) + 8.0 + ROW * (row % 3) as f64;
        let (x1, x2) = (
            scale.x(info.fetched_ms),
            scale.x(end).max(scale.x(info.fetched_ms) + 3.0),
        );
        bars.push((info, ended, y, x1, x2));
    }
    // (y, start, end) of the labels written beside their bars.
    let mut beside: Vec<(f64, f64, f64)> = Vec::new();
    for (i, &(info, ended, y, x1, x2)) in bars.iter().enumerate() {
        let (fill, stroke, how) = match ended {
            Some((_, LeaseEnd::Settled { op: "ack" })) => ("#c8e6c9", GREEN, "acked"),
            Some((_, LeaseEnd::Settled { op })) => ("#ffe0b2", ORANGE, *op),
            Some((_, LeaseEnd::Expired { .. })) => ("#e0e0e0", GREY, "expired"),
            None => ("#bbdefb", BLUE, "held"),
        };
        let dash = if ended.is_none() {
            r#" stroke-dasharray="4 3""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<rect x="{x1:.1}" y="{y:.1}" width="{:.1}" height="{}" rx="3" fill="{fill}" stroke="{stroke}"{dash}><title>lease {} on E{}: {} → {how}</title></rect>"#,
            x2 - x1,
            ROW - 4.0,
            escape(&info.name),
            info.lease.seq,
            info.fetched_ms
        );
        let text = format!("lease {} · E{} ({how})", escape(&info.name), info.lease.seq);
        let text_width = 7.0 * text.chars().count() as f64;
        // Beside its bar, a label must not cross another bar or label of its row: when it
        // would on both sides, the bar's tooltip tells it.
        let free = |start: f64, end: f64| {
            let bar = |j: usize, &(_, _, by, bx1, bx2): &(_, _, f64, f64, f64)| {
                j != i && by == y && bx1 < end && start < bx2
            };
            !bars.iter().enumerate().any(|(j, b)| bar(j, b))
                && !beside
                    .iter()
                    .any(|&(ly, s, e)| ly == y && s < end && start < e)
        };
        let (right, left) = (
            (x2 + 4.0, x2 + 4.0 + text_width),
            (x1 - 4.0 - text_width, x1 - 4.0),
        );
        let (text_x, anchor) = if x2 - x1 >= text_width + 8.0 {
            (x1 + 4.0, "start")
        } else if right.1 < WIDTH - 4.0 && free(right.0, right.1) {
            beside.push((y, right.0, right.1));
            (right.0, "start")
        } else if left.0 >= LEFT && free(left.0, left.1) {
            beside.push((y, left.0, left.1));
            (left.1, "end")
        } else {
            (f64::NAN, "")
        };
        taken.push(Taken {
            x1,
            x2,
            y1: y,
            y2: y + ROW - 4.0,
            text: false,
        });
        if !text_x.is_nan() {
            let (start, end) = match anchor {
                "end" => (text_x - text_width, text_x),
                _ => (text_x, text_x + text_width),
            };
            // The text's ascent and descent about its baseline (y + 12).
            taken.push(Taken {
                x1: start,
                x2: end,
                y1: y + 3.0,
                y2: y + 15.0,
                text: true,
            });
            let _ = writeln!(
                svg,
                r##"<text x="{text_x:.1}" y="{:.1}" text-anchor="{anchor}" fill="#212121">{text}</text>"##,
                y + 12.0,
            );
        }
        if let Some((at, LeaseEnd::Expired { .. })) = ended {
            let x = scale.x(*at);
            let _ = writeln!(
                svg,
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{GREY}" stroke-width="2" stroke-dasharray="2 2"/>"#,
                y - 3.0,
                y + ROW - 1.0
            );
        }
    }
    taken
}

/// The marker shapes, centred on (x, y).
fn accepted(svg: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r#"<circle cx="{x:.1}" cy="{y:.1}" r="7" fill="{GREEN}"/><path d="M{:.1},{:.1} l3,3 l5,-6" stroke="white" stroke-width="2" fill="none"/>"#,
        x - 4.0,
        y
    );
}

fn rejected(svg: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r#"<circle cx="{x:.1}" cy="{y:.1}" r="7" fill="white" stroke="{RED}" stroke-width="2"/><path d="M{:.1},{:.1} l7,7 M{:.1},{:.1} l-7,7" stroke="{RED}" stroke-width="2"/>"#,
        x - 3.5,
        y - 3.5,
        x + 3.5,
        y - 3.5
    );
}

fn ambiguous(svg: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r#"<path d="M{x:.1},{:.1} l7,7 l-7,7 l-7,-7 z" fill="{ORANGE}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="white" font-weight="bold" font-size="10">?</text>"#,
        y - 7.0,
        y + 4.0
    );
}

fn crash(svg: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r#"<path d="M{:.1},{:.1} l12,12 M{:.1},{:.1} l-12,12" stroke="{RED}" stroke-width="4"/>"#,
        x - 6.0,
        y - 6.0,
        x + 6.0,
        y - 6.0
    );
}

fn restart(svg: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r#"<path d="M{:.1},{:.1} l12,7 l-12,7 z" fill="{GREEN}"/>"#,
        x - 5.0,
        y - 7.0
    );
}

/// A marker with its label, placed in a lane so that units do not overlap: each takes the
/// first of three rows (beside the lane's bottom, or one or two rows above) where it fits.
struct Unit {
    worker: usize,
    x: f64,
    marker: Option<Marker>,
    text: String,
    colour: &'static str,
    /// For a pause: where the stall ends.
    until_x: Option<f64>,
}

/// The centre of marker row `row` of `worker`'s lane.
fn unit_y(worker: usize, row: usize) -> f64 {
    lane_y(worker) + LANE - 16.0 - 17.0 * row as f64
}

/// Places each unit in the first row where it stands on nothing drawn (`taken`: the leases'
/// bars and labels, and the units placed before it), else in the first row where it stands on
/// no text and no other unit (over a bar).
fn place_units(svg: &mut String, units: &[Unit], taken: &[Taken]) {
    // Where every placed unit stands.
    let mut placed: Vec<Taken> = Vec::new();
    for unit in units {
        // Bold 12-pixel DejaVu Sans: about 7.7 pixels a character.
        let width = 8.0 * unit.text.chars().count() as f64;
        let anchor_end = unit.x > WIDTH - 300.0;
        let (start, end) = if anchor_end {
            (unit.x - 10.0 - width, unit.x + 8.0)
        } else {
            (unit.x - 8.0, unit.x + 10.0 + width)
        };
        // A pause's stall stands in its row too.
        let end = unit.until_x.map_or(end, |until_x| end.max(until_x));
        let meets = |row: usize, t: &Taken| {
            let y = unit_y(unit.worker, row);
            t.meets(start, end, y - 7.0, y + 7.0)
        };
        let clear = |row: usize, over_bars: bool| {
            !placed.iter().any(|t| meets(row, t))
                && !taken
                    .iter()
                    .any(|t| (t.text || !over_bars) && meets(row, t))
        };
        let free = (0..3)
            .find(|&row| clear(row, false))
            .or_else(|| (0..3).find(|&row| clear(row, true)));
        // With no row free for its label, the marker stands alone in the first row where it
        // covers no text (else the first row), and its label is only its tooltip: written over
        // another, neither could be read.
        let (x1, x2) = (unit.x - 8.0, unit.x + 8.0);
        let alone = |row: usize| {
            let y = unit_y(unit.worker, row);
            let covers = |t: &Taken| t.text && t.meets(x1, x2, y - 7.0, y + 7.0);
            !placed.iter().chain(taken).any(covers)
        };
        let row = free.unwrap_or_else(|| (0..3).find(|&row| alone(row)).unwrap_or(0));
        let y = unit_y(unit.worker, row);
        let (x1, x2) = if free.is_some() {
            (start, end)
        } else {
            (x1, x2)
        };
        // The marker (radius 7) and its label's text about the baseline (y + 4).
        placed.push(Taken {
            x1,
            x2,
            y1: y - 7.0,
            y2: y + 7.0,
            text: true,
        });
        if let Some(until_x) = unit.until_x {
            let _ = writeln!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="8" fill="{ORANGE}" opacity="0.5"/>"#,
                unit.x,
                y - 4.0,
                (until_x - unit.x).max(2.0)
            );
        }
        if free.is_none() {
            let _ = writeln!(svg, "<g><title>{}</title>", escape(&unit.text));
        }
        if let Some(marker) = unit.marker {
            marker(svg, unit.x, y);
        }
        match free {
            Some(_) => label(svg, unit.x, y, &unit.text, unit.colour, anchor_end),
            None => svg.push_str("</g>\n"),
        }
    }
}

fn markers(svg: &mut String, trace: &Trace, scale: &Scale, taken: &[Taken]) {
    let mut units = Vec::new();
    for line in trace.lines.iter().filter(|l| scale.view.holds(l.at_ms)) {
        let x = scale.x(line.at_ms);
        if let LineKind::BrokerRestarted { .. } = &line.kind {
            broker_restart(svg, x, trace.workers.len());
            continue;
        }
        let Some(worker) = line.worker else { continue };
        let (marker, text, colour, until_x): (Option<Marker>, &str, &'static str, Option<f64>) =
            match &line.kind {
                LineKind::Crashed { .. } => (Some(crash), "crash", RED, None),
                LineKind::Restarted => (Some(restart), "restart", GREEN, None),
                LineKind::Paused { until_ms } => (None, "paused", ORANGE, Some(scale.x(*until_ms))),
                _ => continue,
            };
        units.push(Unit {
            worker,
            x,
            marker,
            text: text.to_string(),
            colour,
            until_x,
        });
    }
    for request in &trace.requests {
        // A request is marked where it landed, or where it was sent when it was dropped; one
        // still on the wire at the end of what was recorded is not marked.
        let at = match (request.delivered_ms, request.fault) {
            (Some(at), _) => at,
            (None, Fault::Dropped) => request.sent_ms,
            (None, _) => continue,
        };
        if !scale.view.holds(at) {
            continue;
        }
        let name = lease_name(trace, request.issuance);
        let verb = request.op.name().to_uppercase();
        let delayed = if request.delayed { " (delayed)" } else { "" };
        let (marker, text): (Marker, String) = match (&request.answer, request.fault) {
            (_, Fault::Dropped) => (ambiguous, format!("{verb} {name}{delayed}: lost")),
            (Some(Ok(())), Fault::LostReply) => (
                ambiguous,
                format!("{verb} {name}{delayed}: applied, reply lost"),
            ),
            (Some(Ok(())), _) => (accepted, format!("{verb} {name}{delayed} accepted")),
            (Some(Err(error)), _) => (
                rejected,
                format!("{verb} {name}{delayed} rejected ({})", error.name()),
            ),
            (None, _) => {
                let seen = request
                    .seen
                    .as_ref()
                    .and_then(|s| s.as_ref().err())
                    .map_or("not applied", |e| e.name());
                (rejected, format!("{verb} {name}{delayed}: {seen}"))
            }
        };
        let colour = match &request.answer {
            Some(Ok(())) if request.fault == Fault::None => GREEN,
            Some(Ok(())) => ORANGE,
            _ => RED,
        };
        units.push(Unit {
            worker: request.worker,
            x: scale.x(at),
            marker: Some(marker),
            text,
            colour,
            until_x: None,
        });
    }
    place_units(svg, &units, taken);
}

/// Each violation found, at the line after which it was found: a red line across every lane,
/// labelled with the invariants above them (one label per moment).
fn violations(svg: &mut String, trace: &Trace, scale: &Scale) {
    let mut at: Vec<(Ms, Vec<&'static str>)> = Vec::new();
    for found in &trace.violations {
        let Some(line) = found.line.and_then(|line| trace.lines.get(line)) else {
            continue;
        };
        if !scale.view.holds(line.at_ms) {
            continue;
        }
        let id = found.invariant().id();
        match at.iter_mut().find(|(ms, _)| *ms == line.at_ms) {
            Some((_, ids)) if !ids.contains(&id) => ids.push(id),
            Some(_) => {}
            None => at.push((line.at_ms, vec![id])),
        }
    }
    let bottom = TOP + LANE * trace.workers.len().max(1) as f64;
    for (ms, ids) in at {
        let x = scale.x(ms);
        let anchor = if x > WIDTH - 300.0 { "end" } else { "start" };
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{RED}" stroke-width="2"/><text x="{x:.1}" y="{:.1}" text-anchor="{anchor}" fill="{RED}" font-weight="bold">⚠ {} violated</text>"#,
            TOP - 18.0,
            TOP - 20.0,
            ids.join(", ")
        );
    }
}

/// A broker restart: a dashed line across every lane, labelled above them.
fn broker_restart(svg: &mut String, x: f64, lanes: usize) {
    let bottom = TOP + LANE * lanes.max(1) as f64;
    let _ = writeln!(
        svg,
        r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{BLUE}" stroke-width="2" stroke-dasharray="6 3"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="{BLUE}" font-weight="bold">broker restart</text>"#,
        TOP - 4.0,
        TOP - 8.0
    );
}

fn label(svg: &mut String, x: f64, y: f64, text: &str, colour: &str, anchor_end: bool) {
    let (anchor, dx) = if anchor_end {
        ("end", -10.0)
    } else {
        ("start", 10.0)
    };
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}" fill="{colour}" font-weight="bold">{}</text>"#,
        x + dx,
        y + 4.0,
        escape(text)
    );
}

/// Draws a marker centred on (x, y).
type Marker = fn(&mut String, f64, f64);

fn legend(svg: &mut String, y: f64) {
    let mut x = LEFT;
    let _ = writeln!(
        svg,
        r##"<text x="{x}" y="{:.1}" font-weight="bold" fill="#424242">legend</text>"##,
        y - 14.0
    );
    let bars = [
        ("#c8e6c9", GREEN, "lease, acked"),
        ("#e0e0e0", GREY, "lease, expired"),
        ("#ffe0b2", ORANGE, "lease, nacked/rejected"),
        ("#bbdefb", BLUE, "lease, still held"),
    ];
    for (fill, stroke, text) in bars {
        let _ = writeln!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="26" height="12" rx="3" fill="{fill}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}">{text}</text>"#,
            y - 6.0,
            x + 32.0,
            y + 4.0
        );
        // Each item as wide as its text (about 7 pixels a character), and a gap.
        x += 32.0 + 7.0 * text.chars().count() as f64 + 28.0;
    }
    let y = y + 26.0;
    let mut x = LEFT + 8.0;
    let items: [(Marker, &str); 5] = [
        (accepted, "settle accepted"),
        (rejected, "settle rejected"),
        (ambiguous, "ambiguous (reply lost)"),
        (crash, "worker crash"),
        (restart, "worker restart"),
    ];
    for (draw, text) in items {
        draw(svg, x, y);
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}">{text}</text>"#,
            x + 14.0,
            y + 4.0
        );
        x += 14.0 + 7.0 * text.chars().count() as f64 + 36.0;
    }
}
