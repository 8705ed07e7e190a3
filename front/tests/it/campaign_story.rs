//! A failing campaign seed's story at scale: the front door re-runs the smallest failing seed
//! only up to its first violation and keeps at most `TIMELINE_LINES_MAX` lines of it, so a large
//! seed fails a test with a bounded message, cut where it says, ending at the violation.

use leasehold_front::campaign::TIMELINE_LINES_MAX;
use leasehold_front::{self as leasehold, Invariant, Variant};

use crate::scratch;
use scratch::out;

/// The `tN` a timeline line starts with.
fn t_of(line: &str) -> usize {
    let number = line.trim_start_matches('t');
    let end = number.find(' ').unwrap_or(number.len());
    number[..end]
        .parse()
        .unwrap_or_else(|_| panic!("not a tN line: {line}"))
}

#[test]
fn a_long_failing_seed_keeps_the_end_of_its_story_up_to_the_violation() {
    let (_scratch, dir) = out("long");
    let mut template = leasehold::defaults::sim_template(Variant::RenewRevives).unwrap();
    // Seed 0 of this size (`leasehold sim --variant renew-revives --events 3000 --seed 0`)
    // first breaks I2 after well over a thousand lines.
    template.resize(3_000, 2, 3);
    template.derive_bounds(true, true);
    let run = leasehold::campaign(template).seeds(0..1).expiry_mixed();
    let found = run.out(&dir).run().unwrap();
    let failure = found.assert_fails(Invariant::I2);
    let lines: Vec<&str> = failure.timeline.lines().collect();
    assert_eq!(lines.len(), TIMELINE_LINES_MAX);
    assert!(failure.timeline_from > 0);
    // Contiguous from where it was cut to the violation's line.
    for (k, line) in lines.iter().enumerate() {
        assert_eq!(t_of(line), failure.timeline_from + k, "{line}");
    }
    assert!(
        lines.last().unwrap().contains("⚠ I2 violated"),
        "{:?}",
        lines.last()
    );
    let message = found.failure(failure).to_string();
    let cut = format!(
        "… (t0..t{} not shown: the file replays them)",
        failure.timeline_from
    );
    assert!(message.contains(&cut), "{message}");
    // The file replays the whole run to the same first violation.
    let replayed = leasehold::replay(&failure.file, &leasehold::BackendKind::Pure).unwrap();
    let violated_at = replayed
        .timeline()
        .lines()
        .find(|l| l.contains("⚠ I2 violated"))
        .expect("the replay breaks I2");
    assert_eq!(violated_at, *lines.last().unwrap());
    // The replay streams its timeline into text: the same text as the whole recorded render.
    let text = std::fs::read_to_string(&failure.file).unwrap();
    let name = failure.file.display().to_string();
    let setup = leasehold::sim::seeded::seeded_file::load_seeded(&text, &name).unwrap();
    let whole =
        leasehold::sim::seeded::seeded_file::run_setup(&setup, &leasehold::BackendKind::Pure, true);
    assert_eq!(replayed.timeline(), whole.trace.unwrap());
}

#[test]
fn a_short_failing_seed_keeps_its_whole_story() {
    let (_scratch, dir) = out("short");
    let template = leasehold::defaults::sim_template(Variant::VolatileAck).unwrap();
    let found = leasehold::campaign(template)
        .seeds(0..5)
        .out(&dir)
        .run()
        .unwrap();
    let failure = found.failure.as_ref().expect("volatile-ack fails a seed");
    assert_eq!(failure.timeline_from, 0);
    assert!(failure.timeline.starts_with("t0 "), "{}", failure.timeline);
    let message = found.failure(failure).to_string();
    assert!(!message.contains("not shown"), "{message}");
}

/// A campaign with a time budget runs seeds in order until it is spent, and names the seeds
/// it ran: that command's range, run without a budget, gives the same summary and hash.
#[test]
fn a_time_budget_names_the_seeds_it_ran_and_they_rerun_the_same() {
    let (_scratch, dir) = out("budget");
    let template = leasehold::defaults::sim_template(Variant::Fenced).unwrap();
    let budget = std::time::Duration::from_millis(300);
    let found = leasehold::campaign(template.clone())
        .seeds(5..u64::MAX)
        .threads(2)
        .for_at_most(budget)
        .out(&dir)
        .run()
        .unwrap();
    assert!(found.budget_spent);
    let ran = found.summary.seeds_run;
    assert!(ran > 0, "no seed ran in {budget:?}");
    let range = format!("--seeds 5..{} ", 5 + ran);
    assert!(found.command.contains(&range), "{}", found.command);
    let again = leasehold::campaign(template.clone())
        .seeds(5..5 + ran)
        .run()
        .unwrap();
    assert_eq!(again.summary, found.summary);
    assert!(!again.budget_spent);
    // A budget the campaign does not need is not reported as spent.
    let short = leasehold::campaign(template)
        .seeds(0..3)
        .for_at_most(std::time::Duration::from_secs(3600))
        .run()
        .unwrap();
    assert!(!short.budget_spent);
    assert_eq!(short.summary.seeds_run, 3);
}
