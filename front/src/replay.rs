//! `leasehold::replay`: a scenario file — scripted, or seeded (a simulator finding) — run on a
//! backend, its timeline, and assertions that print how to run it again.

use crate::failure::{Failure, PROGRAM};
use crate::Error;
use leasehold_sim::parse;
use leasehold_sim::recorder::TimelineSink;
use leasehold_sim::script::{Replay, Script};
use leasehold_sim::seeded::seeded_file::{check_expect, load_seeded, parse_toml, run_setup_with};
use leasehold_sim::seeded::{BackendKind, RunOptions};
pub use leasehold_sim::timeline::Style;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Reads and parses a scripted scenario file; any failure is one line naming the file (and
/// the line and field).
pub fn load(path: &Path) -> Result<Script, Error> {
    let name = path.display().to_string();
    let src =
        std::fs::read_to_string(path).map_err(|e| Error(format!("{name}: cannot read: {e}")))?;
    let script = parse::parse(&src, &name).map_err(|e| Error(e.to_string()))?;
    if script.steps.is_empty() {
        return Err(Error(format!(
            "{name}: a seeded scenario (no [[step]]): replay it with leasehold::replay"
        )));
    }
    Ok(script)
}

/// Runs `script` on `backend`; an error (a backend that cannot run it) is one line naming the
/// file.
pub fn run_script(script: &Script, backend: &BackendKind) -> Result<Replay, Error> {
    backend
        .run_script(script)
        .map_err(|e| Error(format!("{}: {e}", script.file)))
}

/// The lines `leasehold timeline FILE` prints of a scripted replay: its timeline rendered in
/// `style` (only the lines `lines` asks for, `tA..tB`, when given), then one line per violation.
/// Asking only for lines past the end is a one-line error naming the file, not an empty
/// timeline.
pub fn timeline_lines(
    replay: &Replay,
    style: Style,
    lines: Option<std::ops::Range<usize>>,
) -> Result<Vec<String>, Error> {
    let rendered = leasehold_sim::timeline::render_with(&replay.trace, style);
    let total = rendered.lines.len();
    lines_shown(&replay.file, lines.as_ref(), total)?;
    let lines = lines.unwrap_or(0..total);
    let shown = rendered.lines.iter().take(lines.end).skip(lines.start);
    let mut out: Vec<String> = shown.cloned().collect();
    for found in &replay.trace.violations {
        out.push(leasehold_sim::timeline::violation_text(found, &rendered));
    }
    Ok(out)
}

/// Refuses `lines` (`--lines A..B`) when they start past the `total` lines a run of `file`
/// shows: one line, as a drawing of them says it, rather than printing nothing.
pub fn lines_shown(
    file: &str,
    lines: Option<&std::ops::Range<usize>>,
    total: usize,
) -> Result<(), Error> {
    match lines {
        Some(lines) if lines.start >= total => Err(Error(format!(
            "{file}: --lines {}..{}: the run shows {total} lines (t0..t{total})",
            lines.start, lines.end
        ))),
        _ => Ok(()),
    }
}

/// A replayed scenario: what happened, and whether it matched the file.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The file, as given.
    pub file: String,
    /// The backend it ran on.
    pub backend: String,
    /// The flags that select the backend again (` --backend NAME`; empty for `pure`).
    pub backend_flags: String,
    /// How the replay command starts (default `leasehold`; [`Replayed::reproduce_with`]).
    pub program: String,
    /// The timeline, one `tN` line per line, ending with a newline.
    pub timeline: String,
    /// Every violation the oracle found, one line each.
    pub violations: Vec<String>,
    /// Every expectation of the file that the run did not meet, one line each.
    pub mismatches: Vec<String>,
    /// The trace hash (hexadecimal).
    pub trace_hash: String,
}

/// Replays the scenario at `path` on `backend` (built from the scenario's configuration): a
/// scripted file step by step, a seeded file through the simulator. An unreadable or malformed
/// file, or a backend that cannot run its configuration, is an [`Error`].
pub fn replay(path: impl AsRef<Path>, backend: &BackendKind) -> Result<Replayed, Error> {
    replay_styled(path, backend, Style::default())
}

/// [`replay()`], its timeline rendered in `style`: `Style { times: true }` shows each line's
/// virtual time and each lease's deadline (what `leasehold replay FILE --times` prints).
pub fn replay_styled(
    path: impl AsRef<Path>,
    backend: &BackendKind,
    style: Style,
) -> Result<Replayed, Error> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| Error(format!("{name}: cannot read: {e}")))?;
    let seeded = parse_toml(&text).is_ok_and(|s| s.seed.is_some() && s.steps.is_empty());
    if seeded {
        let scenario = parse_toml(&text).map_err(|e| Error(format!("{name}: {e}")))?;
        let setup = load_seeded(&text, &name).map_err(Error)?;
        backend
            .check(&setup)
            .map_err(|e| Error(format!("{name}: {e}")))?;
        // Streamed into the text: the run keeps only what is open, so the memory is the
        // timeline's own text, not a recorded trace of the whole run.
        let text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&text);
        let options = RunOptions {
            timeline: Some(TimelineSink(Arc::new(move |line: &str| {
                let mut text = sink.lock().unwrap_or_else(|e| e.into_inner());
                text.push_str(line);
                text.push('\n');
            }))),
            style,
            ..RunOptions::default()
        };
        let outcome = run_setup_with(&setup, backend, &options);
        let timeline = std::mem::take(&mut *text.lock().unwrap_or_else(|e| e.into_inner()));
        return Ok(Replayed {
            file: name,
            backend: backend.name().to_string(),
            backend_flags: backend.flags(),
            program: PROGRAM.to_string(),
            timeline,
            violations: outcome
                .violations
                .iter()
                .map(|v| v.named(&setup.group_names, |_| None))
                .collect(),
            mismatches: check_expect(&scenario, &outcome),
            trace_hash: format!("{:016x}", outcome.trace_hash),
        });
    }
    let script = load(path)?;
    let replay = backend
        .run_script(&script)
        .map_err(|e| Error(format!("{name}: {e}")))?;
    let lines = leasehold_sim::timeline::render_with(&replay.trace, style).lines;
    Ok(Replayed {
        file: name,
        backend: backend.name().to_string(),
        backend_flags: backend.flags(),
        program: PROGRAM.to_string(),
        timeline: lines.iter().map(|l| format!("{l}\n")).collect(),
        violations: replay.violations.iter().map(|v| v.to_string()).collect(),
        mismatches: replay.mismatches.clone(),
        trace_hash: replay.trace_hash.clone(),
    })
}

impl Replayed {
    /// The command that replays the file again on the same backend.
    pub fn command(&self) -> String {
        format!(
            "{} replay {}{}",
            self.program, self.file, self.backend_flags
        )
    }

    /// How the printed command starts (default `leasehold`): a suite's own build of the
    /// command line, which knows its backend (`cargo run -q -p my-queue --`).
    pub fn reproduce_with(mut self, program: impl Into<String>) -> Replayed {
        self.program = program.into();
        self
    }

    /// The timeline, for `insta::assert_snapshot!`.
    pub fn timeline(&self) -> &str {
        &self.timeline
    }

    fn failure(&self, what: &str, lines: &[String]) -> Failure {
        Failure {
            verdict: format!("replay of {} on {}: {what}", self.file, self.backend),
            violations: lines.to_vec(),
            timeline: self.timeline.clone(),
            file: None,
            command: self.command(),
        }
    }

    /// Panics, with the timeline and the command, if the oracle found any violation —
    /// whatever the file expects: what a backend's own suite asks of its backend.
    pub fn assert_clean(&self) -> &Replayed {
        if !self.violations.is_empty() {
            self.failure("VIOLATED", &self.violations).panic();
        }
        self
    }

    /// Panics, with the timeline and the command, if the run did not meet every expectation of
    /// the file (its steps' `expect` and its `[expect]` block).
    pub fn assert_matches(&self) -> &Replayed {
        if !self.mismatches.is_empty() {
            self.failure("did not match the file", &self.mismatches)
                .panic();
        }
        self
    }
}

/// Renders `replay`'s timeline again in `style` (it was rendered plain).
pub fn restyle(replay: &mut Replay, style: Style) {
    if style != Style::default() {
        replay.timeline = leasehold_sim::timeline::render_with(&replay.trace, style).lines;
    }
}

/// A scripted replay as the `leasehold replay --json` object, its timeline and records
/// rendered in `style`.
pub fn json(replay: &Replay, style: Style) -> serde_json::Value {
    let rendered = leasehold_sim::timeline::render_with(&replay.trace, style);
    serde_json::json!({
        "header": replay.header,
        "timeline": rendered.lines,
        "records": leasehold_sim::timeline::records(&replay.trace, &rendered),
        "violations": replay.violations,
        "steps": replay.steps,
        "mismatches": replay.mismatches,
        "notes": replay.notes,
        "trace_hash": replay.trace_hash,
        "matched": replay.matched,
    })
}
