//! Progress of long work, told to a display of the caller's ([`Bar`]: the command line's is a
//! terminal bar): records settled, simulated time and steps a second for a single seed; the
//! steps of a seed run for its drawing; seeds done, failed and inconclusive for a campaign. A
//! watcher thread reads what the run publishes ([`Progress`]) and never feeds anything back into
//! it: the display decides nothing about the run.

use crate::campaign::run_within;
use leasehold_sim::drawing::{self, Drawn};
use leasehold_sim::seeded::campaign::{Campaign, Ran};
use leasehold_sim::seeded::run::{Progress, RunOptions};
use leasehold_sim::seeded::seeded_file::run_setup_with;
use leasehold_sim::seeded::{BackendKind, RunOutcome, Setup};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a single seed's display is redrawn.
pub const REDRAW: Duration = Duration::from_millis(200);

/// A display of progress: a length, a position and a message.
pub trait Bar: Sync {
    /// The whole, in the bar's unit.
    fn set_length(&self, length: u64);
    /// How much of it is done.
    fn set_position(&self, position: u64);
    /// What is said beside it.
    fn set_message(&self, message: String);
    /// Moves a spinner on.
    fn tick(&self) {}
}

/// Runs one seed with `options`, telling `bar` the records settled of those published, the
/// simulated time and the steps a second, every [`REDRAW`] until the run is done.
pub fn run_with_bar(
    setup: &Setup,
    backend: &BackendKind,
    mut options: RunOptions,
    bar: &dyn Bar,
) -> RunOutcome {
    let progress = Arc::new(Progress::default());
    options.progress = Some(Arc::clone(&progress));
    bar.set_length(setup.records().max(1));
    std::thread::scope(|scope| {
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
    })
}

/// Draws a seeded run ([`drawing::draw_seeded`]), telling a spinner `bar` the steps of the runs
/// it makes: a large seed runs twice for its drawing (once to learn when its lines happened,
/// once to keep what the stretch needs).
pub fn draw_seeded_with_bar(
    setup: &Setup,
    backend: &BackendKind,
    asked: Option<Range<usize>>,
    bar: &dyn Bar,
) -> Result<Drawn, String> {
    let progress = Arc::new(Progress::default());
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let drawer = scope.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                std::thread::park_timeout(REDRAW);
                let steps = progress.steps.load(Ordering::Relaxed);
                let sim_s = progress.sim_ms.load(Ordering::Relaxed) / 1000;
                bar.set_message(format!(
                    "drawing: running the seed for its drawing · simulated {sim_s} s · {steps} steps"
                ));
                bar.tick();
            }
        });
        let drawn = drawing::draw_seeded_with(setup, backend, asked, Some(Arc::clone(&progress)));
        finished.store(true, Ordering::Relaxed);
        drawer.thread().unpark();
        drawn
    })
}

/// Runs a campaign until its last seed, its time `budget`, or `stop` is raised, telling `bar`
/// the seeds done and, when they change, how many failed or were inconclusive and whether it is
/// stopping. Returns what ran, and whether the budget was spent.
pub fn run_campaign_with_bar(
    campaign: &Campaign,
    budget: Option<Duration>,
    stop: &AtomicBool,
    bar: &dyn Bar,
) -> (Ran, bool) {
    // Seeds not clean when the message was last written: it changes only when they do.
    let told = AtomicU64::new(0);
    let told_stopping = AtomicBool::new(false);
    run_within(
        campaign,
        &|tally| {
            bar.set_position(tally.done);
            let unclean = tally.failed + tally.inconclusive;
            let stopping = stop.load(Ordering::Relaxed);
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
        stop,
    )
}
