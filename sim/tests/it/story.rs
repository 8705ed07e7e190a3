//! A found seed's timeline tells the true story: in every seeded scenario under
//! `scenarios/found/`, each request's landing is a line at the moment it lands (lines in landing
//! order, the order of the engine's own event log), the frontier and record effects the lines
//! tell are the broker's state at that step (read through `BrokerView` at the end of every step,
//! independently of the engine's read-back), and every violation has a line that marks it.

use leasehold_model::{BrokerView, Seq, Status};
use leasehold_sim::event::Event;
use leasehold_sim::recorder::StepObserver;
use leasehold_sim::seeded::seeded_file::{load_seeded, run_setup_with};
use leasehold_sim::seeded::{BackendKind, RunOptions};
use leasehold_sim::timeline;
use leasehold_sim::trace::{LineKind, Part, Trace};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

fn found_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/found");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/found exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no seeded findings under {}",
        dir.display()
    );
    files
}

/// What the lines told so far: each group's frontier, and the status a landing left each
/// record in during the current step (`None`: something later in the step touched it).
#[derive(Default)]
struct Told {
    lines_seen: usize,
    frontier: Vec<Seq>,
    touched: BTreeMap<(usize, Seq), Option<Status>>,
    errors: Vec<String>,
}

impl Told {
    fn moved(&mut self, i: usize, group: usize, (before, after): (Seq, Seq)) {
        if self.frontier[group] != before {
            self.errors.push(format!(
                "line {i}: frontier of group {group} told {before} → {after}, but the lines so far left it at {}",
                self.frontier[group]
            ));
        }
        self.frontier[group] = after;
    }

    /// Folds the new lines of `trace` in, then compares with the broker.
    fn step(&mut self, trace: &Trace, broker: &dyn BrokerView) {
        if self.frontier.is_empty() {
            self.frontier = vec![0; broker.group_count()];
        }
        for i in self.lines_seen..trace.lines.len() {
            self.line(trace, i);
        }
        self.lines_seen = trace.lines.len();
        for (group, &told) in self.frontier.iter().enumerate() {
            let actual = broker.frontier(group);
            if told != actual {
                let at = trace.lines.len().saturating_sub(1);
                self.errors.push(format!(
                    "after line {at}: the lines tell frontier {told} for group {group}, the broker has {actual}"
                ));
            }
        }
        for (&(group, seq), &status) in &self.touched {
            let Some(status) = status else { continue };
            let actual = broker.status_kind(group, seq);
            if actual != status {
                self.errors.push(format!(
                    "record ({group}, {seq}): the last landing of the step told {status:?}, the broker has {actual:?}"
                ));
            }
        }
        self.touched.clear();
    }

    fn line(&mut self, trace: &Trace, i: usize) {
        let line = &trace.lines[i];
        match &line.kind {
            LineKind::Expired {
                issuance,
                frontier: Some(moved),
                ..
            } => {
                let lease = trace.lease(*issuance).lease;
                self.moved(i, lease.group, *moved);
            }
            LineKind::BrokerRestarted { frontier } => {
                for &(group, before, after) in frontier {
                    self.moved(i, group, (before, after));
                }
                self.touched.values_mut().for_each(|s| *s = None);
            }
            _ => {}
        }
        let touch = |told: &mut Told, issuance| {
            let lease = trace.lease(issuance).lease;
            told.touched.insert((lease.group, lease.seq), None);
        };
        match &line.kind {
            LineKind::Expired { issuance, .. } => touch(self, *issuance),
            LineKind::Fetched { .. } => {
                // A fetch leases records (and may dead-letter exhausted ones).
                self.touched.values_mut().for_each(|s| *s = None);
            }
            _ => {}
        }
        for part in &line.parts {
            let Part::Landed { request, duplicate } = *part else {
                continue;
            };
            let r = trace.request(request);
            let (answer, effect) = match duplicate {
                None => (r.answer.clone(), r.effect.clone()),
                Some(k) => (
                    r.duplicate_answers.get(k as usize).cloned(),
                    r.duplicate_effects[k as usize].clone(),
                ),
            };
            if !matches!(answer, Some(Ok(()))) {
                continue;
            }
            let lease = r.lease;
            if let Some(moved) = effect.frontier {
                self.moved(i, lease.group, moved);
            }
            self.touched.insert((lease.group, lease.seq), effect.status);
        }
    }
}

fn check_file(path: &PathBuf) -> Vec<String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).expect("readable");
    let setup = load_seeded(&text, &name).expect("a seeded scenario");
    let told = Arc::new(Mutex::new(Told::default()));
    let seen = Arc::clone(&told);
    let observer = StepObserver(Arc::new(move |trace: &Trace, broker: &dyn BrokerView| {
        seen.lock().expect("not poisoned").step(trace, broker);
    }));
    let options = RunOptions {
        record: true,
        observer: Some(observer),
        ..RunOptions::default()
    };
    let outcome = run_setup_with(&setup, &BackendKind::Pure, &options);
    let recorded = outcome.recorded.expect("recorded");
    let trace = &recorded.trace;
    let mut errors = std::mem::take(&mut told.lock().expect("not poisoned").errors);
    // Lines in landing order: the landings the lines tell, in line order, are the engine's
    // landing events in the order they happened; a line never goes back in time.
    let logged: Vec<_> = recorded
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Landed {
                request, duplicate, ..
            } => Some((*request, *duplicate)),
            Event::NotApplied { request, .. } => Some((*request, false)),
            _ => None,
        })
        .collect();
    let told_order: Vec<_> = trace
        .lines
        .iter()
        .flat_map(|l| &l.parts)
        .filter_map(|p| match *p {
            Part::Landed { request, duplicate } => Some((request, duplicate.is_some())),
            _ => None,
        })
        .collect();
    if logged != told_order {
        errors.push("the landings are not told in the order they happened".to_string());
    }
    // An expiry line carries the lease's deadline, which the broker may act on later (at its
    // next fetch): its place is the order the broker acted in, so it is not compared here.
    let timed: Vec<_> = trace
        .lines
        .iter()
        .filter(|l| !matches!(l.kind, LineKind::Expired { .. }))
        .collect();
    for pair in timed.windows(2) {
        if pair[1].at_ms < pair[0].at_ms {
            errors.push(format!(
                "a line at {} ms ({:?}) follows one at {} ms ({:?})",
                pair[1].at_ms, pair[1].kind, pair[0].at_ms, pair[0].kind
            ));
        }
    }
    for r in &trace.requests {
        if r.landed_line.is_some_and(|l| l < r.line) {
            errors.push(format!("request {:?} lands before it is sent", r.id));
        }
    }
    // Every violation has its line, and that line marks it.
    let rendered = timeline::render(trace);
    if outcome.violations.is_empty() {
        errors.push("a finding that no longer fails".to_string());
    }
    for found in &trace.violations {
        let mark = format!("⚠ {} violated", found.invariant().id());
        match rendered.t_of(found.line) {
            Some(t) if rendered.lines[t].contains(&mark) => {}
            t => errors.push(format!(
                "{} has no marked line (t = {t:?})",
                found.invariant()
            )),
        }
    }
    errors.into_iter().map(|e| format!("{name}: {e}")).collect()
}

#[test]
fn every_found_timeline_tells_the_landings_in_order_and_matches_the_broker() {
    let errors: Vec<String> = found_files().iter().flat_map(check_file).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// `--json`'s records: one per shown line, in `tN` order, each with its line's text and the
/// violations that line marks. A restart folded into its worker's next line is that line's
/// record, not one of its own (which would repeat a `tN` out of order).
#[test]
#[ignore = "slow: every variant, plain and swarm, run with its story; .ci/run runs it (--include-ignored)"]
fn every_shown_line_has_one_record_in_order() {
    use leasehold_model::Variant;
    use leasehold_sim::seeded::campaign::Campaign;
    use leasehold_sim::seeded::seeded_file::run_setup;
    use leasehold_sim::seeded::Setup;
    let mut folds = 0;
    let mut late_expiries = 0;
    for &variant in Variant::ALL {
        for swarm in [false, true] {
            let mut campaign = Campaign::new(Setup::default_for(variant), 0..1);
            campaign.swarm = swarm;
            campaign.expiry_mixed = swarm;
            for seed in 0..12 {
                let what = format!("{variant} swarm {swarm} seed {seed}");
                let outcome = run_setup(&campaign.setup(seed), &BackendKind::Pure, true);
                let trace = &outcome.recorded.as_ref().expect("recorded").trace;
                let rendered = timeline::render(trace);
                let records = timeline::records(trace, &rendered);
                folds += rendered
                    .lines
                    .iter()
                    .filter(|l| l.contains("(restarted"))
                    .count();
                assert_eq!(records.len(), rendered.lines.len(), "{what}");
                let mut lapsed = std::collections::BTreeSet::new();
                for (t, (record, line)) in records.iter().zip(&rendered.lines).enumerate() {
                    assert_eq!(record.t, t, "{what}");
                    // A line stands when its thing happened, so time never goes back: a lazy
                    // broker's lease lapses at its deadline, and is expired when the broker
                    // does it, at its next fetch.
                    if let Some(before) = t.checked_sub(1).map(|b| records[b].at_ms) {
                        assert!(record.at_ms >= before, "{what} t{t}: {before} then {line}");
                    }
                    if record.operation == "lapse" {
                        lapsed.extend(record.lease.clone());
                    }
                    let late = record.operation == "expire"
                        && record.lease.as_ref().is_some_and(|name| {
                            trace.leases.iter().any(|l| {
                                &l.name == name
                                    && l.ended.as_ref().is_some_and(|e| e.0 < record.at_ms)
                            })
                        });
                    if late {
                        // Told at its deadline first: a settle refused in between reads
                        // after the lapse that explains it.
                        let lease = record.lease.clone().unwrap_or_default();
                        // A lapse is told at the contract's deadline; `renew-worker-clock`
                        // renews to a deadline of its own (the worker's clock + extend), told
                        // in the renew's line, and expires the lease there.
                        assert!(
                            lapsed.contains(&lease) || variant == Variant::RenewWorkerClock,
                            "{what} t{t}: {line} without a lapse"
                        );
                        late_expiries += 1;
                    }
                    // Written directly (as a streamed `--json` writes it), a record is the
                    // object `serde_json` builds of it, keys sorted.
                    let direct = serde_json::to_string(record).unwrap();
                    let object = serde_json::to_value(record).unwrap().to_string();
                    assert_eq!(direct, object, "{what} t{t}");
                    assert_eq!(&record.text, line, "{what}");
                    let mut marked: Vec<&str> = line
                        .split("⚠ ")
                        .skip(1)
                        .filter_map(|mark| mark.split(' ').next())
                        .collect();
                    let mut told = record.violations.clone();
                    marked.sort_unstable();
                    told.sort_unstable();
                    assert_eq!(told, marked, "{what} t{t}");
                }
            }
        }
    }
    assert!(folds > 100, "the seeds fold restarts ({folds})");
    assert!(
        late_expiries > 100,
        "the seeds expire leases lazily, past their deadlines ({late_expiries})"
    );
}
