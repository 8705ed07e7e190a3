//! Progress on a terminal (stderr, and only when it is a terminal): seeds done for a campaign;
//! records settled of the total, simulated time and steps/s for a single seed. The bars read
//! what the run publishes and never feed anything back into it. A single seed's timeline, when
//! asked for, streams to standard output as the run goes ([`leasehold_front::stream`]).

use leasehold_front::campaign::run_within;
use leasehold_front::progress::{self, Bar, REDRAW};
use leasehold_front::stream::Story;
use leasehold_sim::seeded::campaign::{Campaign, Ran};
use leasehold_sim::seeded::run::RunOptions;
use leasehold_sim::seeded::seeded_file::run_setup_with;
use leasehold_sim::seeded::{BackendKind, RunOutcome, Setup};
use leasehold_sim::timeline::Style;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// A terminal bar is a display of the library's progress ([`leasehold_front::progress`]).
struct Terminal(indicatif::ProgressBar);

impl Bar for Terminal {
    fn set_length(&self, length: u64) {
        self.0.set_length(length);
    }

    fn set_position(&self, position: u64) {
        self.0.set_position(position);
    }

    fn set_message(&self, message: String) {
        self.0.set_message(message);
    }

    fn tick(&self) {
        self.0.tick();
    }
}

/// Whether to draw progress on standard error: when it is a terminal, but not while standard
/// output streams to that terminal too (a bar would tear its lines). `--json` draws one as well:
/// the object goes to standard output, and a bar is cleared before anything is printed there.
pub(crate) fn bars_wanted(streams_to_stdout: bool) -> bool {
    std::io::stderr().is_terminal() && !(streams_to_stdout && std::io::stdout().is_terminal())
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
    let (options, out) = story.options(style);
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
    options: RunOptions,
    bars: bool,
    prefix: &str,
) -> RunOutcome {
    if !bars {
        return run_setup_with(setup, backend, &options);
    }
    let bar = indicatif::ProgressBar::new(setup.records().max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix}{bar:30} {pos}/{len} records settled · {msg}",
        )
        .expect("a valid template"),
    );
    bar.set_prefix(prefix.to_string());
    let bar = Terminal(bar);
    let outcome = progress::run_with_bar(setup, backend, options, &bar);
    bar.0.finish_and_clear();
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
    let spinner = Terminal(indicatif::ProgressBar::new_spinner());
    let drawn = progress::draw_seeded_with_bar(setup, backend, asked, &spinner);
    spinner.0.finish_and_clear();
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
    leasehold_front::budget::stop_reason(budget, SIGNALLED.load(Ordering::Relaxed))
}

/// What [`run_campaign`] ran, and why it stopped early when it did.
pub struct Stopping {
    /// The shard's first seeds, and what they found.
    pub ran: Ran,
    /// `interrupted` or `time budget … spent`, when the campaign stopped before its last seed.
    pub reason: Option<String>,
}

/// What a command that stops gracefully says on the first signal, and whether a bar tells it.
static GRACEFUL: std::sync::OnceLock<(&'static str, bool)> = std::sync::OnceLock::new();

/// Makes the first Ctrl-C or SIGTERM raise [`INTERRUPTED`] and, unless a bar tells it, print
/// `leasehold: stopping: {what} (interrupt again to quit now)`.
pub(crate) fn catch_interrupts(what: &'static str, bars: bool) {
    let _ = GRACEFUL.set((what, bars));
}

/// Catches Ctrl-C and SIGTERM for the whole command: a command that stops gracefully
/// ([`catch_interrupts`]) is told by the first; otherwise, and on the second, the private
/// servers the command started are stopped and it quits at once (status 130).
pub(crate) fn quit_cleanly_on_signals(context: crate::cmd::backends::Context) {
    // A process installs it once; a failure leaves the default (quit at once).
    let _ = ctrlc::set_handler(move || match GRACEFUL.get() {
        Some(&(what, bars)) if !SIGNALLED.swap(true, Ordering::Relaxed) => {
            INTERRUPTED.store(true, Ordering::Relaxed);
            if !bars {
                eprintln!("leasehold: stopping: {what} (interrupt again to quit now)");
            }
        }
        _ => {
            context.shutdown();
            std::process::exit(130);
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
    let bar = Terminal(bar);
    let ran = progress::run_campaign_with_bar(campaign, budget, &INTERRUPTED, &bar);
    bar.0.finish_and_clear();
    finish(ran)
}
