//! Drawing a stretch of a run: which timeline lines to draw, and a trace that holds them.
//!
//! A drawing of a long run's every line is a smear (and, for a million-event seed, a file of
//! gigabytes): [`crate::svg`] draws a stretch of it instead. The stretch is a range of shown
//! lines, `tA..tB` as the text timeline numbers them (B excluded), either asked for or, when
//! the run has more than [`DRAWN_LINES`] lines, the [`DRAWN_LINES`] lines that end at its
//! first violation (or at its end). A seeded run is run twice, streamed: once to learn when
//! those lines happened, once to keep what a drawing of that time needs
//! ([`crate::recorder::Recorder::keeping`]), so memory follows the live set and the stretch,
//! not the run.

use crate::recorder::{TimeSink, TimelineSink};
use crate::seeded::run::Progress;
use crate::seeded::seeded_file::{run_setup_with, BackendKind};
use crate::seeded::{RunOptions, RunOutcome, Setup};
use crate::svg::View;
use crate::timeline::Timeline;
use crate::trace::Trace;
use leasehold_model::Ms;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Lines drawn when no stretch is asked for and the run has more.
pub const DRAWN_LINES: usize = 40;

/// Why a drawing shows the lines it shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    /// The lines asked for.
    Asked,
    /// The last [`DRAWN_LINES`] lines up to the first violation.
    UpToViolation,
    /// The last [`DRAWN_LINES`] lines of a run without a violation.
    End,
}

/// The stretch a drawing shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stretch {
    /// Shown lines `tA..tB` (B excluded).
    pub lines: Range<usize>,
    /// Lines the run shows in all, when the run was told to its end (a stretch up to the
    /// first violation stops there).
    pub total: Option<usize>,
    /// The virtual times of its first and last lines.
    pub view: View,
    /// Why these lines.
    pub chosen: Chosen,
}

impl Stretch {
    /// `t460..t500 of 20118 lines (the 40 up to the first violation)`: what a drawing shows.
    pub fn describe(&self) -> String {
        let Range { start, end } = self.lines;
        let of = self
            .total
            .map_or(String::new(), |total| format!(" of {total} lines"));
        let why = match self.chosen {
            Chosen::Asked => " (asked for)".to_string(),
            Chosen::UpToViolation => format!(" (the {} up to the first violation)", end - start),
            Chosen::End => format!(" (the last {})", end - start),
        };
        format!("t{start}..t{end}{of}{why}")
    }
}

/// Parses a stretch of lines: `A..B`, each bound a number or `tN` (B excluded, A < B).
pub fn parse_lines(text: &str) -> Result<Range<usize>, String> {
    let bound = |s: &str| {
        let s = s.trim();
        s.strip_prefix('t').unwrap_or(s).parse::<usize>().ok()
    };
    let parsed = text
        .split_once("..")
        .and_then(|(a, b)| Some((bound(a)?, bound(b)?)));
    match parsed {
        Some((a, b)) if a < b => Ok(a..b),
        Some((a, b)) => Err(format!(
            "lines {text}: {b} is not after {a} (A..B, B excluded)"
        )),
        None => Err(format!(
            "lines {text}: expected A..B (shown lines tA to tB, B excluded), e.g. 40..100"
        )),
    }
}

/// The lines to draw of a run that shows `total` lines, its first violation shown as line
/// `violation`; `complete`: the run was told to its end (else it stopped at that violation).
/// `None`: every line.
fn choose(
    asked: Option<Range<usize>>,
    total: usize,
    violation: Option<usize>,
    complete: bool,
) -> Result<Option<(Range<usize>, Chosen)>, String> {
    let chosen = match asked {
        Some(lines) if lines.start >= total => {
            return Err(format!(
                "lines {}..{}: the run shows {total} lines (t0..t{total})",
                lines.start, lines.end
            ))
        }
        Some(lines) => (lines.start..lines.end.min(total), Chosen::Asked),
        None if complete && total <= DRAWN_LINES => return Ok(None),
        None => match violation {
            Some(t) => (
                (t + 1).saturating_sub(DRAWN_LINES)..t + 1,
                Chosen::UpToViolation,
            ),
            None => (total.saturating_sub(DRAWN_LINES)..total, Chosen::End),
        },
    };
    Ok(Some(chosen))
}

/// The stretch to draw of a whole trace (a scripted run, or a recorded one) and its
/// timeline. `None` when every line is drawn.
pub fn stretch_of_trace(
    trace: &Trace,
    timeline: &Timeline,
    asked: Option<Range<usize>>,
) -> Result<Option<Stretch>, String> {
    let total = timeline.lines.len();
    let violation = trace.violations.first().and_then(|f| timeline.t_of(f.line));
    let Some((lines, chosen)) = choose(asked, total, violation, true)? else {
        return Ok(None);
    };
    let at = |t: usize| {
        let shown =
            (0..trace.lines.len()).filter(move |&i| timeline.index.get(i) == Some(&Some(t)));
        shown.map(|i| trace.lines[i].at_ms)
    };
    let from_ms = at(lines.start).min().unwrap_or(0);
    let to_ms = at(lines.end - 1).max().unwrap_or(trace.end_ms);
    Ok(Some(Stretch {
        lines,
        total: Some(total),
        view: View { from_ms, to_ms },
        chosen,
    }))
}

/// What the first, streamed, run of a seeded drawing learned.
#[derive(Default)]
struct Learned {
    /// The `(t, at_ms)` of the last lines shown ([`LEARNED_LINES`]: the lines up to the
    /// first violation, and those its step showed after it).
    last: VecDeque<(usize, Ms)>,
    /// The times of the asked lines' first and last.
    asked: [Option<Ms>; 2],
}

/// Lines the first run remembers the times of.
const LEARNED_LINES: usize = 4 * DRAWN_LINES;

/// A seeded run drawn: its outcome (with the kept trace, when a stretch was kept; the whole
/// trace otherwise) and the stretch.
pub struct Drawn {
    /// The run, whose `recorded` trace is what the drawing needs.
    pub outcome: RunOutcome,
    /// The stretch (`None`: every line).
    pub stretch: Option<Stretch>,
}

/// Runs a seeded setup for a drawing of lines `asked` (or of the default stretch): see the
/// module's documentation. The outcome's verdict is the whole run's.
pub fn draw_seeded(
    setup: &Setup,
    kind: &BackendKind,
    asked: Option<Range<usize>>,
) -> Result<Drawn, String> {
    draw_seeded_with(setup, kind, asked, None)
}

/// [`draw_seeded`], its two runs publishing their progress to `progress` in turn (each from its
/// start: the second run's steps count from zero again).
pub fn draw_seeded_with(
    setup: &Setup,
    kind: &BackendKind,
    asked: Option<Range<usize>>,
    progress: Option<Arc<Progress>>,
) -> Result<Drawn, String> {
    let learned = Arc::new(Mutex::new(Learned::default()));
    let times = {
        let learned = Arc::clone(&learned);
        let asked = asked.clone();
        TimeSink(Arc::new(move |t, at_ms| {
            let mut learned = learned.lock().expect("not poisoned");
            if learned.last.len() == LEARNED_LINES {
                learned.last.pop_front();
            }
            learned.last.push_back((t, at_ms));
            if asked.as_ref().is_some_and(|asked| asked.contains(&t)) {
                learned.asked[0] = learned.asked[0].or(Some(at_ms));
                learned.asked[1] = Some(at_ms);
            }
        }))
    };
    let first = run_setup_with(
        setup,
        kind,
        &RunOptions {
            timeline: Some(TimelineSink(Arc::new(|_| {}))),
            times: Some(times),
            stop_at_first_violation: asked.is_none(),
            progress: progress.clone(),
            ..RunOptions::default()
        },
    );
    let streamed = first.streamed.as_ref().expect("a streamed run");
    // A run stopped at its first violation shows its lines up to it (and those of its step).
    let stopped = first.end == crate::seeded::run::STOPPED_AT_FIRST_VIOLATION;
    let violation = streamed.violation_t.first().copied().flatten();
    let total = streamed.lines;
    let learned = std::mem::take(&mut *learned.lock().expect("not poisoned"));
    let at = |t: usize| learned.last.iter().find(|e| e.0 == t).map(|e| e.1);
    let stretch = match choose(asked, total, violation, !stopped)? {
        None => None,
        Some((lines, chosen)) => {
            let view = match chosen {
                Chosen::Asked => learned.asked[0].zip(learned.asked[1]),
                Chosen::UpToViolation | Chosen::End => at(lines.start).zip(at(lines.end - 1)),
            };
            let Some((from_ms, to_ms)) = view else {
                return Err(format!(
                    "lines {}..{}: the run showed them but their times were not kept (a bug, please report it)",
                    lines.start, lines.end
                ));
            };
            Some(Stretch {
                lines,
                total: (!stopped).then_some(total),
                view: View { from_ms, to_ms },
                chosen,
            })
        }
    };
    let options = match &stretch {
        Some(stretch) => RunOptions {
            timeline: Some(TimelineSink(Arc::new(|_| {}))),
            keep: Some(stretch.view),
            progress,
            ..RunOptions::default()
        },
        None => RunOptions {
            record: true,
            progress,
            ..RunOptions::default()
        },
    };
    let outcome = run_setup_with(setup, kind, &options);
    Ok(Drawn { outcome, stretch })
}
