//! A seeded run's timeline streamed to standard output as the run tells it, in memory that
//! follows the run's live set: the story of a single seed (`leasehold sim --seed N --trace`,
//! `timeline FILE`) and the replay of a seeded scenario file, in text or as one JSON object
//! (`leasehold replay FILE [--json]`).
//!
//! The run itself is the caller's ([`RunSeed`]): the command line draws a progress bar beside
//! it; [`run_plain`] runs it as is.

use crate::seeded::{seeded_setup, streamed_violations};
use crate::Error;
use leasehold_sim::recorder::{RecordSink, TimelineSink};
use leasehold_sim::seeded::run::RunOptions;
use leasehold_sim::seeded::seeded_file::{check_expect, run_setup_with};
use leasehold_sim::seeded::{BackendKind, RunOutcome, Setup};
use leasehold_sim::timeline::{Record, Style};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How a caller runs a seeded setup on a backend with the given options; the text names the
/// run among several (`run 1/3 (verdict) `) for a progress line.
pub type RunSeed<'a> = &'a dyn Fn(&Setup, &BackendKind, RunOptions, &str) -> RunOutcome;

/// Runs a seeded setup with `options`, nothing beside it.
pub fn run_plain(
    setup: &Setup,
    backend: &BackendKind,
    options: RunOptions,
    _run: &str,
) -> RunOutcome {
    run_setup_with(setup, backend, &options)
}

/// A timeline streamed to standard output as the run tells it: each line is printed once final,
/// a write per [`StdoutTimeline::CHUNK`] bytes. [`StdoutTimeline::flush`] prints the rest.
#[derive(Clone, Default)]
pub struct StdoutTimeline(Arc<Mutex<String>>);

impl StdoutTimeline {
    /// Bytes gathered before a write.
    pub const CHUNK: usize = 1 << 16;

    /// A new, empty stream.
    pub fn new() -> StdoutTimeline {
        StdoutTimeline::default()
    }

    /// The sink a run streams into.
    pub fn sink(&self) -> TimelineSink {
        let out = self.clone();
        TimelineSink(Arc::new(move |line: &str| out.write_all(&[line, "\n"])))
    }

    /// The sink of a run whose shown lines `tA..tB` (`lines`) only are printed.
    pub fn sink_within(&self, lines: std::ops::Range<usize>) -> TimelineSink {
        let (out, next) = (
            self.clone(),
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        );
        TimelineSink(Arc::new(move |line: &str| {
            if lines.contains(&next.fetch_add(1, Ordering::Relaxed)) {
                out.write_all(&[line, "\n"]);
            }
        }))
    }

    /// A sink that writes each line as a JSON string, comma-separated (the inside of an
    /// array).
    pub fn json_lines(&self) -> TimelineSink {
        let (out, first) = (self.clone(), Arc::new(AtomicBool::new(true)));
        TimelineSink(Arc::new(move |line: &str| {
            if !first.swap(false, Ordering::Relaxed) {
                out.write(",");
            }
            out.write(&serde_json::to_string(line).unwrap_or_default());
        }))
    }

    /// A sink that writes each record as a JSON object, comma-separated (the inside of an
    /// array; keys in the order `replay --json` gives them).
    pub fn json_records(&self) -> RecordSink {
        let (out, first) = (self.clone(), Arc::new(AtomicBool::new(true)));
        RecordSink(Arc::new(move |record: &Record| {
            if !first.swap(false, Ordering::Relaxed) {
                out.write(",");
            }
            // (Its fields are in the order of a JSON object's sorted keys: see `Record`.)
            out.write(&serde_json::to_string(record).unwrap_or_default());
        }))
    }

    /// Appends `text` to what goes out, writing it a chunk at a time.
    pub fn write(&self, text: &str) {
        self.write_all(&[text]);
    }

    /// Appends `parts` to what goes out (one lock), writing it a chunk at a time.
    fn write_all(&self, parts: &[&str]) {
        let mut buffer = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for part in parts {
            buffer.push_str(part);
        }
        if buffer.len() >= StdoutTimeline::CHUNK {
            print!("{buffer}");
            buffer.clear();
        }
    }

    /// Prints what is gathered.
    pub fn flush(&self) {
        let mut buffer = self.0.lock().unwrap_or_else(|e| e.into_inner());
        print!("{buffer}");
        buffer.clear();
    }
}

/// How a single seed's run tells its story.
#[derive(Clone, Default)]
pub enum Story {
    /// Not at all: the trace hash only.
    #[default]
    None,
    /// Streamed to standard output as it happens, in memory that follows the live set.
    Streamed(StdoutTimeline),
    /// Streamed so, its shown lines `tA..tB` only.
    StreamedLines(StdoutTimeline, std::ops::Range<usize>),
}

impl Story {
    /// The run options that tell the story (in `style`), and the stream it goes to, if any.
    pub fn options(&self, style: Style) -> (RunOptions, Option<&StdoutTimeline>) {
        let mut options = RunOptions {
            style,
            ..RunOptions::default()
        };
        let out = match self {
            Story::None => None,
            Story::Streamed(out) => {
                options.timeline = Some(out.sink());
                Some(out)
            }
            Story::StreamedLines(out, lines) => {
                options.timeline = Some(out.sink_within(lines.clone()));
                Some(out)
            }
        };
        (options, out)
    }
}

/// The replay of the seeded scenario at `path` on `backend` (`Ok(None)`: a scripted one) as
/// one JSON object on standard output, streamed, and whether the run matched the file's
/// `[expect]`: a seeded run is deterministic, so it
/// runs three times — for its verdict, then its records, then its lines — each streamed,
/// keeping only what is still open (a large seed's object is written, never held).
pub fn replay_seeded_json(
    path: &Path,
    backend: &BackendKind,
    style: Style,
    run: RunSeed<'_>,
) -> Result<Option<bool>, Error> {
    let name = path.display().to_string();
    let Some((scenario, setup, kind)) = seeded_setup(path, backend)? else {
        return Ok(None);
    };
    let streamed = |pass: &str, timeline: TimelineSink, records: Option<RecordSink>| {
        let options = RunOptions {
            timeline: Some(timeline),
            records,
            style,
            ..RunOptions::default()
        };
        run(&setup, &kind, options, pass)
    };
    let outcome = streamed(
        "run 1/3 (verdict) ",
        TimelineSink(Arc::new(|_: &str| {})),
        None,
    );
    let mismatches = check_expect(&scenario, &outcome);
    let head = serde_json::json!({
        "header": format!("leasehold replay {name}{}", backend.flags()),
        "inconclusive": outcome.inconclusive.map(|b| b.name()),
        "matched": mismatches.is_empty(),
        "mismatches": mismatches,
    });
    let tail = serde_json::json!({
        "seed": scenario.seed,
        "steps": outcome.steps,
    });
    let end = serde_json::json!({
        "trace_hash": format!("{:016x}", outcome.trace_hash),
        "violations": streamed_violations(&outcome),
    });
    // The keys in the order `serde_json` writes an object's: the same bytes as one object.
    let inner = |value: &serde_json::Value| {
        let text = value.to_string();
        text[1..text.len() - 1].to_string()
    };
    let out = StdoutTimeline::new();
    out.write(&format!("{{{},\"records\":[", inner(&head)));
    streamed(
        "run 2/3 (records) ",
        TimelineSink(Arc::new(|_: &str| {})),
        Some(out.json_records()),
    );
    out.write(&format!("],{},\"timeline\":[", inner(&tail)));
    streamed("run 3/3 (lines) ", out.json_lines(), None);
    out.write(&format!("],{}}}\n", inner(&end)));
    out.flush();
    Ok(Some(mismatches.is_empty()))
}

/// The replay of the seeded scenario at `path` on `backend` (`Ok(None)`: a scripted one) in
/// text on standard output, and whether the run matched the file's `[expect]`: the header, then the timeline as the run tells it (streamed:
/// a large seed's replay keeps only what is still open), then the violations, the bound, the
/// mismatches and the trace hash.
pub fn replay_seeded_text(
    path: &Path,
    backend: &BackendKind,
    style: Style,
    run: RunSeed<'_>,
) -> Result<Option<bool>, Error> {
    let name = path.display().to_string();
    let Some((scenario, setup, kind)) = seeded_setup(path, backend)? else {
        return Ok(None);
    };
    println!(
        "leasehold replay {name}{}   (seed {}, variant {})",
        backend.flags(),
        scenario.seed.unwrap_or_default(),
        scenario.variant
    );
    if let Some(faults) = &scenario.faults {
        println!("faults: {}", faults.summary());
    }
    let out = StdoutTimeline::new();
    let (options, _) = Story::Streamed(out.clone()).options(style);
    let outcome = run(&setup, &kind, options, "");
    out.flush();
    let mismatches = check_expect(&scenario, &outcome);
    for violation in streamed_violations(&outcome) {
        println!("{violation}");
    }
    if let Some(bound) = outcome.inconclusive {
        println!("inconclusive: {bound} reached");
    }
    for mismatch in &mismatches {
        println!("mismatch: {mismatch}");
    }
    println!("trace hash {:016x}", outcome.trace_hash);
    Ok(Some(mismatches.is_empty()))
}
