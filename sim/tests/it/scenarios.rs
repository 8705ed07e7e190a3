//! Every scenario under `scenarios/` (not `scenarios/found/`) replays on the pure broker, matches
//! its own expectations, and pins its timeline in an insta snapshot. A registration test fails
//! on a file that is neither run here nor skipped with a written reason.
//!
//! The snapshots were checked by reading them against Rheo's and RillKit's published examples
//! and docs/protocol.md, docs/variants.md and docs/scenarios.md; the assertions beside them
//! state those examples' facts independently.

use leasehold_model::{Broker, SettleOp};
use leasehold_sim::parse::parse;
use leasehold_sim::script::{self, Replay};
use std::path::{Path, PathBuf};

/// Every scenario file this suite replays.
const RUN: &[&str] = &[
    "t0-t5-stale-ack.toml",
    "policy-nack-on-error.toml",
    "policy-ack-always.toml",
    "policy-ack-first.toml",
    "policy-manual.toml",
    "ackmessage-nackmessage.toml",
    "settle-ambiguous-durable.toml",
    "settle-backend-unavailable.toml",
    "settle-stale-dropped.toml",
    "settle-failed-nacked.toml",
    "redis-streams-late-xack.toml",
    "redis-streams-fenced-late-xack.toml",
    "jetstream-late-ack.toml",
    "pg-visibility-late-delete.toml",
    "pg-fenced-late-delete.toml",
    "rabbitmq-crash-redelivered.toml",
    "rabbitmq-stale-tag.toml",
    "rabbitmq-delivery-limit.toml",
    "rabbitmq-channel-406-returns-siblings.toml",
    "liveness-crash-broker-restart.toml",
    "clock-skew-fenced.toml",
    "wait-lapse-on-fetch.toml",
    "mutant-unfenced-settle.toml",
    "mutant-renew-revives.toml",
    "mutant-lease-id-reuse.toml",
    "mutant-max-seen-frontier.toml",
    "mutant-no-dead-letter.toml",
    "mutant-volatile-ack.toml",
    "mutant-nack-on-ambiguous.toml",
    "mutant-worker-clock-expiry.toml",
    "mutant-dlq-drop.toml",
    "mutant-only-ack-fenced.toml",
    "mutant-attempts-reset.toml",
    "mutant-stuck-lease.toml",
    "mutant-inclusive-deadline.toml",
    "mutant-stale-timer.toml",
    "mutant-volatile-publish.toml",
    "mutant-renew-from-deadline.toml",
    "mutant-renew-keeps-timer.toml",
    "mutant-renew-worker-clock.toml",
    "mutant-ack-all-groups.toml",
    "inclusive-deadline-before-timer.toml",
];

/// Files under `scenarios/` deliberately not run here, each with the reason.
const SKIP: &[(&str, &str)] = &[];

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

fn replay(file: &str) -> Replay {
    let path = scenarios_dir().join(file);
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let script = parse(&src, &format!("scenarios/{file}")).unwrap_or_else(|e| panic!("{e}"));
    script::run(&script, Broker::new(script.setup.broker_config()))
}

fn replay_matched(file: &str) -> Replay {
    let replay = replay(file);
    assert!(
        replay.matched,
        "{file} did not match its expectations:\n{}",
        replay.text()
    );
    replay
}

fn snapshot_name(file: &str) -> String {
    file.trim_end_matches(".toml").to_string()
}

#[test]
fn every_scenario_file_is_registered() {
    let mut unregistered = Vec::new();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(scenarios_dir()).expect("scenarios/ exists") {
        let path = entry.expect("readable").path();
        if path.is_dir() {
            continue; // scenarios/found/ holds generated findings, replayed by their own suite.
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".toml") {
            continue;
        }
        files.push(name.clone());
        let skipped = SKIP
            .iter()
            .any(|(file, why)| *file == name && !why.trim().is_empty());
        if !RUN.contains(&name.as_str()) && !skipped {
            unregistered.push(name);
        }
    }
    assert!(
        unregistered.is_empty(),
        "scenario files neither run nor skipped with a reason: {unregistered:?}"
    );
    for name in RUN {
        assert!(
            files.iter().any(|f| f == name),
            "{name} is registered but missing"
        );
    }
}

#[test]
fn every_registered_scenario_matches_and_its_timeline_is_pinned() {
    for file in RUN {
        let replay = replay_matched(file);
        let mut text = format!("{}\n", replay.header);
        for line in &replay.timeline {
            text.push_str(line);
            text.push('\n');
        }
        // The invariants broken, not where the oracle first saw each: that is pinned by the
        // replay tests of single-violation scenarios, and may move when the oracle learns to
        // see a violation earlier.
        let mut broken: Vec<String> = replay
            .violations
            .iter()
            .map(|v| format!("{} {}", v.id, v.name))
            .collect();
        broken.sort();
        if !broken.is_empty() {
            text.push_str(&format!("violated: {}\n", broken.join(", ")));
        }
        insta::assert_snapshot!(snapshot_name(file), text);
    }
}

#[test]
fn the_same_scenario_twice_gives_the_same_trace_hash() {
    for file in RUN {
        let (a, b) = (replay(file), replay(file));
        assert_eq!(a.trace_hash, b.trace_hash, "{file}");
        assert_eq!(a.timeline, b.timeline, "{file}");
    }
}

#[test]
fn t0_t5_is_the_first_seeds_timeline_in_six_lines() {
    // The seed's six lines (event and lease names are the scenario's; the frontier movement is
    // docs/timelines.md's rendering of "durable progress").
    let expected = [
        "t0  worker A fetches event E1 → lease L1",
        "t1  worker A crashes before ACK",
        "t2  lease L1 expires",
        "t3  worker B fetches event E1 → lease L2",
        "t4  worker A (restarted, delayed) tries ACK L1 → rejected (stale_lease)",
        "t5  worker B ACK L2 → durable progress (frontier 0 → 1)",
    ];
    let replay = replay_matched("t0-t5-stale-ack.toml");
    assert_eq!(replay.timeline, expected);
    assert!(replay.violations.is_empty());
}

#[test]
fn the_policy_table_matches_the_second_seed() {
    // nack_on_error  handler calls=2 pending=0 dlq=1
    // ack_always     handler calls=1 pending=0 dlq=0
    // ack_first      handler calls=1 pending=0 dlq=0
    // manual         handler calls=2 pending=0 dlq=1
    let table = [
        ("policy-nack-on-error.toml", 2, 1),
        ("policy-ack-always.toml", 1, 0),
        ("policy-ack-first.toml", 1, 0),
        ("policy-manual.toml", 2, 1),
    ];
    for (file, calls, dead) in table {
        let replay = replay_matched(file);
        let handled = replay
            .timeline
            .iter()
            .filter(|l| l.contains(" handles "))
            .count();
        assert_eq!(handled, calls, "{file}: handler calls");
        let dead_lettered = replay
            .timeline
            .iter()
            .filter(|l| l.contains("dead-lettered"))
            .count();
        assert_eq!(dead_lettered, dead, "{file}: dead letters");
    }
}

#[test]
fn ack_first_reports_its_losses_as_the_policys_guarantee() {
    let replay = replay_matched("policy-ack-first.toml");
    assert!(replay.violations.is_empty());
    assert!(
        replay
            .notes
            .iter()
            .any(|n| n.contains("at most once by design")),
        "{:?}",
        replay.notes
    );
}

#[test]
fn at_most_once_losses_count_the_acks_without_a_completed_run() {
    // Two events; the first handler run returns, the second raises. `ack_always` acks both
    // after their runs, `ack_first` before them: one ack without a completed run either way.
    // When both runs return, nothing is lost and no note is printed.
    for policy in ["ack_always", "ack_first"] {
        for (outcomes, lost) in [(r#"["ok", "error"]"#, Some(1)), (r#"["ok", "ok"]"#, None)] {
            let src = format!(
                "name = \"losses\"\nvariant = \"fenced\"\n\n[config]\ngroups = [\"g\"]\n\
                 events = 2\nworkers = [\"A\"]\nlease_ms = 1000\nmax_attempts = 2\n\
                 ack_policy = \"{policy}\"\n\n[[step]]\nat_ms = 0\nop = \"drain\"\n\
                 outcomes = {outcomes}\nexpect = \"ok\"\n"
            );
            let script = parse(&src, "losses.toml").unwrap_or_else(|e| panic!("{e}"));
            let replay = script::run(&script, Broker::new(script.setup.broker_config()));
            assert!(replay.violations.is_empty(), "{policy}: {}", replay.text());
            let noted: Vec<_> = replay
                .notes
                .iter()
                .filter(|n| n.contains("acked without a completed handler run"))
                .collect();
            match lost {
                Some(count) => assert!(
                    noted.len() == 1 && noted[0].starts_with(&format!("note: {count} event(s)")),
                    "{policy} {outcomes}: {:?}",
                    replay.notes
                ),
                None => assert!(noted.is_empty(), "{policy} {outcomes}: {:?}", replay.notes),
            }
        }
    }
}

#[test]
fn a_stale_ack_is_dropped_without_a_nack() {
    let replay = replay_matched("settle-stale-dropped.toml");
    let nacks = replay
        .trace
        .requests
        .iter()
        .filter(|r| matches!(r.op, SettleOp::Nack { .. }))
        .count();
    assert_eq!(nacks, 0, "the runtime must not nack a stale lease");
}

#[test]
fn only_the_failed_ack_is_followed_by_a_nack() {
    for (file, nacks) in [
        ("settle-failed-nacked.toml", 1),
        ("settle-ambiguous-durable.toml", 0),
        ("settle-backend-unavailable.toml", 0),
    ] {
        let replay = replay_matched(file);
        let sent = replay
            .trace
            .requests
            .iter()
            .filter(|r| matches!(r.op, SettleOp::Nack { .. }))
            .count();
        assert_eq!(sent, nacks, "{file}");
    }
}

#[test]
fn every_mutant_scenario_reproduces_its_variants_expected_violation() {
    let mut mutants = 0;
    for file in RUN.iter().filter(|f| f.starts_with("mutant-")) {
        let replay = replay_matched(file);
        let src = std::fs::read_to_string(scenarios_dir().join(file)).unwrap();
        let script = parse(&src, file).unwrap();
        let expected = script
            .variant
            .expected_violation()
            .expect("a mutant breaks an invariant");
        assert!(replay.violated(expected), "{file}: {expected} not violated");
        assert_eq!(script.expect.violated, Some(expected), "{file}");
        mutants += 1;
    }
    let all = leasehold_model::Variant::ALL
        .iter()
        .filter(|v| v.kind() == leasehold_model::VariantKind::Mutant)
        .count();
    assert_eq!(mutants, all, "one scenario per mutant");
}

#[test]
fn the_late_xack_counts_on_redis_streams_and_not_when_fenced() {
    let plain = replay_matched("redis-streams-late-xack.toml");
    assert!(plain.violated(leasehold_model::Invariant::I1));
    // Found where it happens: the late XACK, t4 (step[4]).
    let i1 = &plain.violations[0];
    assert_eq!((i1.id, i1.t, i1.step), ("I1", Some(4), Some(4)));
    let fenced = replay_matched("redis-streams-fenced-late-xack.toml");
    assert!(fenced.violations.is_empty());
}

#[test]
fn the_late_ack_counts_on_jetstream_at_the_late_ack() {
    let late = replay_matched("jetstream-late-ack.toml");
    let i1 = &late.violations[0];
    assert_eq!((i1.id, i1.t, i1.step), ("I1", Some(4), Some(4)));
}

#[test]
fn the_late_delete_by_id_counts_on_pg_visibility_and_not_when_fenced() {
    let plain = replay_matched("pg-visibility-late-delete.toml");
    // Found where it happens: c1's late delete by id, t4 (step[4]).
    let i1 = &plain.violations[0];
    assert_eq!((i1.id, i1.t, i1.step), ("I1", Some(4), Some(4)));
    let fenced = replay_matched("pg-fenced-late-delete.toml");
    assert!(fenced.violations.is_empty());
}

/// docs/protocol.md: a lease is valid while `now < deadline`. The boundary files, replayed on
/// `fenced`, break nothing: the ack at exactly the deadline is refused under both expiry modes,
/// the nack's timer is cancelled, and a published event survives the restart.
#[test]
fn the_blind_spot_scenarios_hold_on_fenced_under_both_expiry_modes() {
    for file in [
        "mutant-inclusive-deadline.toml",
        "mutant-stale-timer.toml",
        "mutant-volatile-publish.toml",
    ] {
        for expiry in ["at_deadline", "on_fetch"] {
            let src = std::fs::read_to_string(scenarios_dir().join(file)).unwrap();
            let src = src
                .lines()
                .filter(|l| !l.starts_with("variant") && !l.starts_with("expiry"))
                .filter(|l| !l.starts_with("violated") && !l.starts_with("expect = \"ok\""))
                .map(|l| match l {
                    "[config]" => format!("[config]\nexpiry = \"{expiry}\""),
                    "[expect]" => "[expect]\ninvariants = \"hold\"".to_string(),
                    l => l.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            let src = format!("variant = \"fenced\"\n{src}\n");
            let script = parse(&src, file).unwrap_or_else(|e| panic!("{e}"));
            let replay = script::run(&script, Broker::new(script.setup.broker_config()));
            assert!(replay.violations.is_empty(), "{file} {expiry}");
            assert!(replay.matched, "{file} {expiry}:\n{}", replay.text());
        }
    }
}

/// `before_timer` on a settle at exactly the deadline under `expiry = "at_deadline"`: the ack
/// meets the lease the broker has not expired yet. The mutant accepts it (I1); `fenced`
/// refuses it (`stale_lease`, nothing broken); without the flag the broker's timer runs
/// first and the mutant refuses it too (the lease expired at 1000).
#[test]
fn an_ack_before_the_timer_at_the_deadline_counts_only_on_the_inclusive_mutant() {
    let file = "inclusive-deadline-before-timer.toml";
    let mutant = replay_matched(file);
    assert!(mutant.violated(leasehold_model::Invariant::I1));
    let src = std::fs::read_to_string(scenarios_dir().join(file)).unwrap();
    let run = |src: &str| {
        let script = parse(src, file).unwrap_or_else(|e| panic!("{e}"));
        script::run(&script, Broker::new(script.setup.broker_config()))
    };
    let fenced = run(&src
        .replace("variant = \"inclusive-deadline\"", "variant = \"fenced\"")
        .replace("expect = \"ok\"", "expect = \"stale_lease\"")
        .replace("violated = \"I1\"", "invariants = \"hold\""));
    assert!(fenced.matched, "{}", fenced.text());
    assert!(fenced.violations.is_empty());
    let timer_first = run(&src
        .replace("before_timer = true\n", "")
        .replace("expect = \"ok\"", "expect = \"stale_lease\"")
        .replace("violated = \"I1\"", "invariants = \"hold\""));
    assert!(timer_first.matched, "{}", timer_first.text());
    assert!(timer_first.violations.is_empty());
}

/// Replays a scenario given as text, on the pure broker.
fn replay_inline(name: &str, src: &str) -> Replay {
    let script = parse(src, name).unwrap_or_else(|e| panic!("{e}"));
    let replay = script::run(&script, Broker::new(script.setup.broker_config()));
    assert!(replay.matched, "{name}:\n{}", replay.text());
    replay
}

/// `unfenced-settle`: A nacks L1, B gets E1 as L2, and A's ack of L1 is accepted by its event
/// alone. L1 had ended when its nack was accepted.
const ACK_AFTER_NACK: &str = r#"name = "an ack of a lease already nacked"
variant = "unfenced-settle"

[config]
groups = ["g"]
events = 1
workers = ["A", "B"]
lease_ms = 30000
max_attempts = 3

[[step]]
at_ms = 0
worker = "A"
op = "fetch"
bind = "L1"

[[step]]
at_ms = 1000
worker = "A"
op = "nack"
lease = "L1"
expect = "ok"

[[step]]
at_ms = 2000
worker = "B"
op = "fetch"
bind = "L2"

[[step]]
at_ms = 3000
worker = "A"
op = "ack"
lease = "L1"
expect = "ok"

[expect]
violated = "I1"
"#;

/// `renew-revives`: L1 expires, B gets E1 as L2, A's renew brings L1 back over L2 (I2) and
/// A's ack of L1 is accepted though L2 superseded it (I1).
const ACK_OF_A_REVIVED_LEASE: &str = r#"name = "an ack of a lease revived behind a later one"
variant = "renew-revives"

[config]
groups = ["g"]
events = 1
workers = ["A", "B"]
lease_ms = 30000
max_attempts = 3

[[step]]
at_ms = 0
worker = "A"
op = "fetch"
bind = "L1"

[[step]]
at_ms = 31000
worker = "B"
op = "fetch"
bind = "L2"

[[step]]
at_ms = 32000
worker = "A"
op = "renew"
lease = "L1"
expect = "ok"

[[step]]
at_ms = 33000
worker = "A"
op = "ack"
lease = "L1"
expect = "ok"

[expect]
violated = "I1"
"#;

/// The `tN` of each `at tN` in a violation's detail, in order.
fn causes_named(detail: &str) -> Vec<usize> {
    detail
        .split(" at t")
        .skip(1)
        .map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits
                .parse()
                .unwrap_or_else(|_| panic!("no tN in {detail:?}"))
        })
        .collect()
}

/// Every violation names the line that tells its cause beside the line it shows at: an I1 how
/// the lease it accepted had ended (its expiry, a settle, a later lease, or its id issued to
/// another lease after a restart), an I2 when the unexpired lease was issued. Each cause's line
/// is checked to tell that cause; the timelines and violations are pinned.
#[test]
fn a_violation_names_the_line_of_its_cause() {
    let cases: [(&str, Replay, &str, &[&str]); 5] = [
        (
            "cause-expired",
            replay_matched("mutant-unfenced-settle.toml"),
            "I1",
            &["  lease L1 expires"],
        ),
        (
            "cause-settled",
            replay_inline("ack-after-nack.toml", ACK_AFTER_NACK),
            "I1",
            &["worker A NACK L1 → E1 available again"],
        ),
        (
            "cause-superseded",
            replay_inline("ack-of-a-revived-lease.toml", ACK_OF_A_REVIVED_LEASE),
            "I1",
            &["worker B fetches event E1 → lease L2"],
        ),
        (
            "cause-id-issued-twice",
            replay_matched("mutant-lease-id-reuse.toml"),
            "I1",
            &[
                "  lease L1 expires",
                "worker B fetches event E1 → lease L2 (L1's id 1 again)",
                "  broker restarts",
            ],
        ),
        (
            "cause-unexpired",
            replay_matched("mutant-stale-timer.toml"),
            "I2",
            &["worker B fetches event E1 → lease L2"],
        ),
    ];
    for (name, replay, id, told) in cases {
        let violation = replay
            .violations
            .iter()
            .find(|v| v.id == id)
            .unwrap_or_else(|| panic!("{name}: no {id}:\n{}", replay.text()));
        let named = causes_named(&violation.detail);
        assert_eq!(named.len(), told.len(), "{name}: {}", violation.detail);
        for (&t, what) in named.iter().zip(told) {
            assert!(
                Some(t) < violation.t && replay.timeline[t].contains(what),
                "{name}: t{t} should tell {what:?}: {}\n{}",
                violation.detail,
                replay.text()
            );
        }
        let mut text = format!("{}\n", replay.header);
        for line in &replay.timeline {
            text.push_str(line);
            text.push('\n');
        }
        for v in &replay.violations {
            text.push_str(&format!("{v}\n"));
        }
        insta::assert_snapshot!(name, text);
    }
}

/// A timer armed for L1 that outlived it (`stale-timer`) expires B's L2: its line says whose
/// timer fired. A lease expired by its own timer keeps the plain line.
#[test]
fn a_stale_timer_that_fires_has_a_line_naming_whose_timer_it_was() {
    let stale = replay_matched("mutant-stale-timer.toml");
    assert_eq!(stale.timeline[3], "t3  L1's timer fires → lease L2 expires");
    let own = replay_matched("t0-t5-stale-ack.toml");
    assert_eq!(own.timeline[2], "t2  lease L1 expires");
}

/// `--times`: each line shows its virtual time after its `tN`, each lease its deadline where
/// it is issued or a request names it; without it the timeline is the plain one. Dropping the
/// additions gives the plain line back, and each line's time is its trace line's.
#[test]
fn a_timeline_with_times_shows_each_lines_time_and_each_leases_deadline() {
    use leasehold_sim::timeline::{render, render_with, Style};
    for (file, name) in [
        ("t0-t5-stale-ack.toml", "times-t0-t5-stale-ack"),
        (
            "inclusive-deadline-before-timer.toml",
            "times-inclusive-deadline-before-timer",
        ),
    ] {
        let replay = replay_matched(file);
        assert_eq!(render(&replay.trace).lines, replay.timeline, "{file}");
        let timed = render_with(&replay.trace, Style { times: true });
        assert_eq!(timed.lines.len(), replay.timeline.len(), "{file}");
        // A shown line's time: its trace line's, the last that shows as it (a restart folded
        // into a worker's next line maps to that line too).
        let times: Vec<u64> = (0..timed.lines.len())
            .map(|t| {
                let i = (0..replay.trace.lines.len())
                    .rfind(|&i| timed.index[i] == Some(t))
                    .expect("a trace line");
                replay.trace.lines[i].at_ms
            })
            .collect();
        for ((timed, plain), at_ms) in timed.lines.iter().zip(&replay.timeline).zip(&times) {
            let (t, rest) = timed.split_once("  ").expect("tN first");
            let rest = rest
                .strip_prefix(&format!("[{at_ms} ms] "))
                .unwrap_or_else(|| panic!("{file}: {timed:?} at {at_ms} ms"));
            let mut stripped = format!("{t}  {rest}");
            while let Some(at) = stripped.find(" (deadline ") {
                let end = at + stripped[at..].find(" ms)").expect("closed") + 4;
                stripped.replace_range(at..end, "");
            }
            assert_eq!(&stripped, plain, "{file}");
        }
        let mut text = format!("{}\n", replay.header);
        for line in &timed.lines {
            text.push_str(line);
            text.push('\n');
        }
        insta::assert_snapshot!(name, text);
    }
}

/// docs/rabbitmq.md: a crashed worker's delivery comes back as attempt 2 (fact 1); a stale tag
/// is refused and only the current delivery's ack counts (fact 2); a nack requeues at once
/// whatever its delay, and the return past the delivery limit dead-letters (facts 3, 6).
#[test]
fn the_rabbitmq_scenarios_tell_the_servers_facts() {
    let crash = replay_matched("rabbitmq-crash-redelivered.toml");
    assert!(crash.violations.is_empty());
    assert!(crash
        .timeline
        .iter()
        .any(|l| l.contains("fetches event E1 → lease L3")));
    let stale = replay_matched("rabbitmq-stale-tag.toml");
    assert!(stale.violations.is_empty());
    assert!(
        stale.timeline[4].ends_with("rejected (stale_lease)"),
        "{:?}",
        stale.timeline
    );
    // A 406 closes the channel and returns its other delivery, which another worker gets
    // while its holder's lease has most of its time left (fact 2; I2).
    let siblings = replay_matched("rabbitmq-channel-406-returns-siblings.toml");
    assert!(siblings.violations.iter().all(|v| v.id == "I2"));
    assert!(siblings.timeline[4].contains("c2 fetches event E2"));
    assert!(siblings.timeline[8].contains("c2 fetches event E3"));
    let limit = replay_matched("rabbitmq-delivery-limit.toml");
    assert!(limit.violations.is_empty());
    // Fetched at t = 20 despite the nack's delay of 5 s: no delay on RabbitMQ.
    assert!(
        limit.timeline[2].contains("fetches event E1 → lease L2"),
        "{:?}",
        limit.timeline
    );
    assert!(
        limit.timeline[3].contains("dead-lettered"),
        "{:?}",
        limit.timeline
    );
}
