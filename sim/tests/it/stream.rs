//! A streamed timeline ([`RunOptions::timeline`]) tells, line for line, the story the whole
//! recorded trace tells, with the same `tN` for every violation, while keeping only what is
//! still open.

use leasehold_model::Variant;
use leasehold_sim::recorder::{RecordSink, TimelineSink};
use leasehold_sim::seeded::campaign::Campaign;
use leasehold_sim::seeded::seeded_file::{first_violation_story, run_setup, run_setup_with};
use leasehold_sim::seeded::{BackendKind, RunOptions, RunOutcome, Setup};
use leasehold_sim::timeline::{self, Record};
use std::sync::{Arc, Mutex};

/// Runs `setup` with a streamed timeline: its lines, its records, and the outcome.
fn streamed(setup: &Setup) -> (Vec<String>, Vec<Record>, RunOutcome) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let records = Arc::new(Mutex::new(Vec::new()));
    let (line_sink, record_sink) = (Arc::clone(&lines), Arc::clone(&records));
    let options = RunOptions {
        timeline: Some(TimelineSink(Arc::new(move |line: &str| {
            line_sink.lock().unwrap().push(line.to_string());
        }))),
        records: Some(RecordSink(Arc::new(move |record: &Record| {
            record_sink.lock().unwrap().push(record.clone());
        }))),
        ..RunOptions::default()
    };
    let outcome = run_setup_with(setup, &BackendKind::Pure, &options);
    let lines = std::mem::take(&mut *lines.lock().unwrap());
    let records = std::mem::take(&mut *records.lock().unwrap());
    (lines, records, outcome)
}

/// Compares the streamed run of `setup` with its whole recording; returns the lines shown.
fn same_story(setup: &Setup, what: &str) -> usize {
    let whole = run_setup(setup, &BackendKind::Pure, true);
    let recorded = whole.recorded.as_ref().expect("a recorded run");
    let rendered = timeline::render(&recorded.trace);
    let (lines, records, outcome) = streamed(setup);
    assert_eq!(outcome.trace_hash, whole.trace_hash, "{what}");
    assert_eq!(outcome.violations, whole.violations, "{what}");
    if let Some(k) =
        (0..lines.len().min(rendered.lines.len())).find(|&k| lines[k] != rendered.lines[k])
    {
        panic!(
            "{what}: line {k} differs\n streamed: {}\n recorded: {}",
            lines[k], rendered.lines[k]
        );
    }
    assert_eq!(lines.len(), rendered.lines.len(), "{what}");
    // The records `--json` gives, streamed with the lines: those of the whole trace.
    let whole = timeline::records(&recorded.trace, &rendered);
    if let Some(k) = (0..records.len().min(whole.len())).find(|&k| records[k] != whole[k]) {
        panic!(
            "{what}: record {k} differs\n streamed: {:?}\n recorded: {:?}",
            records[k], whole[k]
        );
    }
    assert_eq!(records.len(), whole.len(), "{what}");
    let told = outcome.streamed.expect("a streamed run");
    assert_eq!(told.lines, lines.len(), "{what}");
    let t: Vec<Option<usize>> = recorded
        .trace
        .violations
        .iter()
        .map(|found| rendered.t_of(found.line))
        .collect();
    assert_eq!(told.violation_t, t, "{what}");
    let kept = outcome.recorded.expect("what is left of the trace");
    assert_eq!(kept.trace.violations, recorded.trace.violations, "{what}");
    lines.len()
}

/// Every `parts`-th variant from `part` on, sixteen seeds each, with its default setup or its
/// swarm's (the tests below split the swarm's, the larger, so that the halves run at once).
fn every_variant(swarm: bool, part: usize, parts: usize) -> usize {
    let mut lines = 0;
    for &variant in Variant::ALL.iter().skip(part).step_by(parts) {
        let mut campaign = Campaign::new(Setup::default_for(variant), 0..1);
        campaign.swarm = swarm;
        campaign.expiry_mixed = swarm;
        for seed in 0..16 {
            let setup = campaign.setup(seed);
            lines += same_story(&setup, &format!("{variant} swarm {swarm} seed {seed}"));
        }
    }
    lines
}

#[test]
fn a_streamed_timeline_is_the_recorded_one_line_for_line() {
    let lines = every_variant(false, 0, 1);
    assert!(lines > 20_000, "{lines} lines compared");
}

#[test]
#[ignore = "slow: whole swarm timelines streamed and recorded; .ci/run runs it (--include-ignored)"]
fn a_streamed_swarm_timeline_is_the_recorded_one_line_for_line() {
    let lines = every_variant(true, 0, 2);
    assert!(lines > 20_000, "{lines} lines compared");
}

#[test]
#[ignore = "slow: whole swarm timelines streamed and recorded; .ci/run runs it (--include-ignored)"]
fn a_streamed_swarm_timeline_of_the_other_variants_is_the_recorded_one_line_for_line() {
    let lines = every_variant(true, 1, 2);
    assert!(lines > 20_000, "{lines} lines compared");
}

/// The same on long runs (a test of its own, so that the two run at once).
#[test]
fn a_long_streamed_timeline_is_the_recorded_one_line_for_line() {
    let mut lines = 0;
    for (variant, events, seeds) in [
        (Variant::Fenced, 3_000, 0..2),
        (Variant::VolatileAck, 1_000, 0..2),
        (Variant::RedisStreams, 1_000, 0..2),
    ] {
        let mut setup = Setup::default_for(variant);
        setup.events = events;
        for seed in seeds {
            setup.seed = seed;
            lines += same_story(&setup, &format!("{variant} events {events} seed {seed}"));
        }
    }
    assert!(lines > 20_000, "{lines} lines compared");
}

/// The streamed recorder's memory follows what is open, not the run: on a run of 83,390
/// lines it never keeps more than a small number of them at once.
#[test]
fn a_streamed_recorder_keeps_what_is_open_not_the_run() {
    let mut setup = Setup::default_for(Variant::Fenced);
    setup.events = 10_000;
    setup.seed = 1;
    let (lines, _, outcome) = streamed(&setup);
    let told = outcome.streamed.expect("a streamed run");
    assert!(lines.len() > 50_000, "{} lines", lines.len());
    assert!(
        told.kept_lines_max < 2_000,
        "kept {} of {} lines at once",
        told.kept_lines_max,
        lines.len()
    );
    let kept = outcome.recorded.expect("what is left of the trace");
    assert!(kept.events.is_empty(), "no event log");
}

/// A campaign's failure story keeps only the end of the streamed timeline: its lines are the
/// last lines, up to the first violation's `tN`, of the same run recorded whole.
#[test]
fn a_failing_seeds_story_is_the_end_of_its_timeline_up_to_the_first_violation() {
    const CONTEXT: usize = 8;
    let recorded_to_first = RunOptions {
        record: true,
        stop_at_first_violation: true,
        ..RunOptions::default()
    };
    let mut told = 0;
    for variant in [
        Variant::VolatileAck,
        Variant::LeaseIdReuse,
        Variant::DlqDrop,
        Variant::MaxSeenFrontier,
        Variant::RedisStreams,
        Variant::RenewRevives,
    ] {
        for seed in 0..8 {
            let mut setup = Setup::default_for(variant);
            setup.seed = seed;
            let whole = run_setup_with(&setup, &BackendKind::Pure, &recorded_to_first);
            let story = first_violation_story(&setup, &BackendKind::Pure, CONTEXT);
            let Some(first) = whole.violations.first() else {
                assert_eq!(story, None, "{variant} seed {seed}");
                continue;
            };
            let story = story.expect("a failing seed has a story");
            assert_eq!(&story.found.violation, first, "{variant} seed {seed}");
            let recorded = whole.recorded.as_ref().expect("a recorded run");
            let rendered = timeline::render(&recorded.trace);
            let t = rendered.t_of(recorded.trace.violations[0].line);
            assert_eq!(story.t, t, "{variant} seed {seed}");
            let last = t.unwrap_or(0);
            let from = (last + 1).saturating_sub(CONTEXT);
            assert_eq!(
                story.lines,
                rendered.lines[from..=last],
                "{variant} seed {seed}"
            );
            told += 1;
        }
    }
    assert!(told >= 20, "{told} stories compared");
}
