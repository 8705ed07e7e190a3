//! Progress on a terminal (stderr, and only when it is a terminal): seeds done for a campaign;
//! records settled of the total, simulated time and steps/s for a single seed. The bars read
//! what the run publishes and never feed anything back into it. A single seed's timeline, when
//! asked for, streams to standard output as the run goes ([`StdoutTimeline`]).

use leasehold_front::campaign::run_within;
use leasehold_sim::recorder::{RecordSink, TimelineSink};
use leasehold_sim::seeded::campaign::{Campaign, Ran};
use leasehold_sim::seeded::run::{Progress, RunOptions};
use leasehold_sim::seeded::seeded_file::run_setup_with;
use leasehold_sim::seeded::{BackendKind, RunOutcome, Setup};
use leasehold_sim::timeline::{Record, Style};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// How often a single seed's bar is redrawn.
const REDRAW: Duration = Duration::from_millis(200);

/// Whether to draw progress on standard error: when it is a terminal, but not while standard
/// output streams to that terminal too (a bar would tear its lines). `--json` draws one as well:
/// the object goes to standard output, and a bar is cleared before anything is printed there.
pub(crate) fn bars_wanted(streams_to_stdout: bool) -> bool {
    std::io::stderr().is_terminal() && !(streams_to_stdout && std::io::stdout().is_terminal())
}

/// A timeline streamed to standard output as the run tells it: each line is printed once final,
/// a write per [`StdoutTimeline::CHUNK`] bytes. [`StdoutTimeline::flush`] prints the rest.
#[derive(Clone, Default)]
pub struct StdoutTimeline(Arc<Mutex<String>>);

impl StdoutTimeline {
    /// Bytes gathered before a write.
    const CHUNK: usize = 1 << 16;

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

/// Runs one seed, telling its story as `story` says, with a progress bar on a terminal (not
/// when the story streams to one).
pub fn run_one_seed(setup: &Setup, backend: &BackendKind, story: &Story) -> RunOutcome {
    run_one_seed_styled(setup, backend, story, Style::default())
}

/// [`run_one_seed`], its timeline rendered in `style`.
pub fn run_one_seed_styled(
    setup: &Setup,
    backend: &BackendKind,
    story: &Story,
    style: Style,
) -> RunOutcome {
    let mut options = RunOptions {
        style,
        ..RunOptions::default()
    };
    let out = match story {
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
    let bars = bars_wanted(out.is_some());
    let outcome = run_with_bar(setup, backend, options, bars, "");
    if let Some(out) = out {
        out.flush();
    }
    outcome
}

/// Runs one seed with `options`, with a bar of records settled when `bars` (its line starts
/// with `prefix`).
pub fn run_with_bar(
    setup: &Setup,
    backend: &BackendKind,
    mut options: RunOptions,
    bars: bool,
    prefix: &str,
) -> RunOutcome {
    if !bars {
        return run_setup_with(setup, backend, &options);
    }
    let progress = Arc::new(Progress::default());
    options.progress = Some(Arc::clone(&progress));
    let bar = indicatif::ProgressBar::new(setup.records().max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix}{bar:30} {pos}/{len} records settled · {msg}",
        )
        .expect("a valid template"),
    );
    bar.set_prefix(prefix.to_string());
    let outcome = std::thread::scope(|scope| {
        let drawer = scope.spawn(|| {
            let started = Instant::now();
            // Drawn at once, then every REDRAW until the run is done.
            loop {
                let steps = progress.steps.load(Ordering::Relaxed);
                let sim_s = progress.sim_ms.load(Ordering::Relaxed) / 1000;
                let rate = steps as f64 / started.elapsed().as_secs_f64().max(1e-3);
                // The records published so far: the workload may publish during the run.
                let records = progress.records.load(Ordering::Relaxed);
                bar.set_length(records.max(1));
                bar.set_position(progress.settled.load(Ordering::Relaxed));
                bar.set_message(format!(
                    "simulated {sim_s} s · {steps} steps · {rate:.0} steps/s"
                ));
                if progress.done.load(Ordering::Relaxed) != 0 {
                    break;
                }
                // Woken at the run's end: a short run does not wait out a redraw.
                std::thread::park_timeout(REDRAW);
            }
        });
        let outcome = run_setup_with(setup, backend, &options);
        progress.done.store(1, Ordering::Relaxed);
        drawer.thread().unpark();
        let _ = drawer.join();
        outcome
    });
    bar.finish_and_clear();
    outcome
}

/// Draws a seeded run (`leasehold_sim::drawing::draw_seeded`), with a spinner on a terminal:
/// a large seed runs twice for its drawing (once to learn when its lines happened, once to keep
/// what the stretch needs).
pub fn draw_seeded(
    setup: &Setup,
    backend: &BackendKind,
    asked: Option<std::ops::Range<usize>>,
) -> Result<leasehold_sim::drawing::Drawn, String> {
    if !bars_wanted(false) {
        return leasehold_sim::drawing::draw_seeded(setup, backend, asked);
    }
    let progress = Arc::new(Progress::default());
    let finished = AtomicBool::new(false);
    let spinner = indicatif::ProgressBar::new_spinner();
    let drawn = std::thread::scope(|scope| {
        let drawer = scope.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                std::thread::park_timeout(REDRAW);
                let steps = progress.steps.load(Ordering::Relaxed);
                let sim_s = progress.sim_ms.load(Ordering::Relaxed) / 1000;
                spinner.set_message(format!(
                    "drawing: running the seed for its drawing · simulated {sim_s} s · {steps} steps"
                ));
                spinner.tick();
            }
        });
        let drawn = leasehold_sim::drawing::draw_seeded_with(
            setup,
            backend,
            asked,
            Some(Arc::clone(&progress)),
        );
        finished.store(true, Ordering::Relaxed);
        drawer.thread().unpark();
        drawn
    });
    spinner.finish_and_clear();
    drawn
}

/// Set by the first Ctrl-C (or SIGTERM) during a campaign or a check, or by its time budget:
/// no seed starts after it; a check's search stops as at its bound.
pub(crate) static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// Set by a signal (Ctrl-C, SIGTERM): [`INTERRUPTED`] raised without it was raised by a
/// `--for` budget.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// Why [`INTERRUPTED`] was raised, for a report: `interrupted` (a signal) or `time budget 10m
/// spent`.
pub(crate) fn stop_reason(budget: Option<Duration>) -> String {
    match budget {
        Some(budget) if !SIGNALLED.load(Ordering::Relaxed) => {
            format!("time budget {} spent", humantime::format_duration(budget))
        }
        _ => "interrupted".to_string(),
    }
}

/// What [`run_campaign`] ran, and why it stopped early when it did.
pub struct Stopping {
    /// The shard's first seeds, and what they found.
    pub ran: Ran,
    /// `interrupted` or `time budget … spent`, when the campaign stopped before its last seed.
    pub reason: Option<String>,
}

/// Catches Ctrl-C and SIGTERM: the first raises [`INTERRUPTED`] and, unless a bar tells it,
/// prints `leasehold: stopping: {what} (interrupt again to quit now)`; the second quits at once
/// (status 130).
pub(crate) fn catch_interrupts(what: &'static str, bars: bool) {
    // A process installs it once; a failure leaves the default (quit at once).
    let _ = ctrlc::set_handler(move || {
        if SIGNALLED.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        INTERRUPTED.store(true, Ordering::Relaxed);
        if !bars {
            eprintln!("leasehold: stopping: {what} (interrupt again to quit now)");
        }
    });
}

/// Runs a campaign, with a bar of seeds done on a terminal, until its last seed, its time
/// `budget`, or an interrupt.
pub fn run_campaign(campaign: &Campaign, budget: Option<Duration>) -> Stopping {
    let bars = bars_wanted(false);
    catch_interrupts("the seeds under way finish, then the summary", bars);
    let finish = |(ran, _spent): (Ran, bool)| {
        // (A campaign that stops on failure ends early by itself: that is not a stop.)
        let early = INTERRUPTED.load(Ordering::Relaxed) && ran.done < campaign.shard_len();
        let reason = early.then(|| stop_reason(budget));
        Stopping { ran, reason }
    };
    if !bars {
        return finish(run_within(campaign, &|_| {}, budget, &INTERRUPTED));
    }
    let open = campaign.seeds.end == u64::MAX;
    let (bar, template) = if open {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(REDRAW);
        (bar, "{spinner} {pos} seeds · {rate} · {elapsed}{msg}")
    } else {
        let bar = indicatif::ProgressBar::new(campaign.shard_len());
        (
            bar,
            "{wide_bar} {pos}/{len} seeds · {rate} · eta {eta}{msg}",
        )
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("a valid template")
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} seeds/s", state.per_sec());
                },
            ),
    );
    // Seeds not clean when the message was last written: it changes only when they do.
    let told = std::sync::atomic::AtomicU64::new(0);
    let told_stopping = AtomicBool::new(false);
    let ran = run_within(
        campaign,
        &|tally| {
            bar.set_position(tally.done);
            let unclean = tally.failed + tally.inconclusive;
            let stopping = INTERRUPTED.load(Ordering::Relaxed);
            let news = unclean > told.fetch_max(unclean, Ordering::Relaxed)
                || (stopping && !told_stopping.swap(true, Ordering::Relaxed));
            if news {
                let mut message = String::new();
                if tally.failed > 0 {
                    message.push_str(&format!(" · {} failed", tally.failed));
                }
                if tally.inconclusive > 0 {
                    message.push_str(&format!(" · {} inconclusive", tally.inconclusive));
                }
                if stopping {
                    message.push_str(" · stopping: the seeds under way finish");
                }
                bar.set_message(message);
            }
        },
        budget,
        &INTERRUPTED,
    );
    bar.finish_and_clear();
    finish(ran)
}
