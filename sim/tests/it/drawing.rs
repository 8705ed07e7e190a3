//! A drawing of a stretch of a run ([`leasehold_sim::drawing`]): the trace a seeded run keeps
//! for it draws that stretch exactly as the whole recorded trace does, it stays small however
//! long the run, and the stretch drawn by default ends at the first violation.

use leasehold_model::Variant;
use leasehold_sim::drawing::{self, Chosen, DRAWN_LINES};
use leasehold_sim::engine::Expiry;
use leasehold_sim::seeded::seeded_file::run_setup;
use leasehold_sim::seeded::{BackendKind, FaultPlan, Setup};
use leasehold_sim::{svg, timeline, trace};

fn setup(variant: Variant, events: u32, seed: u64) -> Setup {
    let mut setup = Setup::default_for(variant);
    setup.events = events;
    setup.seed = seed;
    setup
}

/// For stretches at the start, in the middle and at the end of runs that hold and runs that
/// fail, the kept trace's drawing is byte for byte the whole trace's drawing of the same
/// stretch, over the same virtual times, and the run's verdict is the whole run's.
#[test]
fn a_kept_stretch_draws_as_the_whole_trace_does() {
    let mut compared = 0;
    for variant in [Variant::Fenced, Variant::VolatileAck, Variant::RenewRevives] {
        for seed in 1..5 {
            let mut setup = setup(variant, 600, seed);
            // Half the runs expire lazily: an expiry is told at the next fetch, possibly after
            // the stretch's end, for a lease that ended at its deadline, within it.
            setup.expiry = if seed % 2 == 0 {
                Expiry::AtDeadline
            } else {
                Expiry::OnFetch
            };
            let whole = run_setup(&setup, &BackendKind::Pure, true);
            let trace = &whole.recorded.as_ref().expect("recorded").trace;
            let rendered = timeline::render(trace);
            let total = rendered.lines.len();
            assert!(total > 2_000, "{variant:?} seed {seed}: only {total} lines");
            let mut stretches = vec![
                0..40,
                total / 2 - 30..total / 2 + 30,
                total - 50..total + 10,
            ];
            if setup.expiry == Expiry::OnFetch {
                // A stretch that ends after a lease's deadline and before the fetch that
                // expires it: the lease ends at its deadline in the drawing, not at the end.
                let late = told_late_expiry(trace, &rendered).expect("an expiry told late");
                stretches.push(late - 39..late + 1);
            }
            for lines in stretches {
                let what = format!("{variant:?} seed {seed} lines {lines:?}");
                let expected = drawing::stretch_of_trace(trace, &rendered, Some(lines.clone()))
                    .expect("a valid stretch")
                    .expect("a stretch, not the whole run");
                let drawn =
                    drawing::draw_seeded(&setup, &BackendKind::Pure, Some(lines)).expect("drawn");
                let stretch = drawn.stretch.clone().expect("a stretch");
                assert_eq!(stretch, expected, "{what}");
                assert_eq!(stretch.chosen, Chosen::Asked, "{what}");
                assert_eq!(drawn.outcome.violations, whole.violations, "{what}");
                let kept = &drawn.outcome.recorded.as_ref().expect("kept").trace;
                let view = Some(stretch.view);
                assert_eq!(
                    svg::render_view(kept, view, "t", "s", "p"),
                    svg::render_view(trace, view, "t", "s", "p"),
                    "{what}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 42);
}

/// The `tN` (past the first 40) of a line after a lease's deadline and before the fetch that
/// expires it (a lazy broker's expiry is told, and stamped, at that fetch; the lease ends at
/// its deadline).
fn told_late_expiry(trace: &trace::Trace, rendered: &timeline::Timeline) -> Option<usize> {
    let shown = |i: usize| rendered.index.get(i).copied().flatten();
    let lines: Vec<_> = trace.lines.iter().collect();
    for (i, line) in lines.iter().enumerate() {
        let trace::LineKind::Expired { issuance, .. } = line.kind else {
            continue;
        };
        let Some((deadline_ms, _)) = trace.leases[issuance.0 as usize].ended else {
            continue;
        };
        let between = (0..i)
            .rev()
            .take_while(|&j| lines[j].at_ms >= deadline_ms)
            .find(|&j| lines[j].at_ms < line.at_ms && shown(j).is_some_and(|t| t > 40));
        if let Some(j) = between {
            return shown(j);
        }
    }
    None
}

/// A stretch of a long run keeps what is open and the stretch, not the run.
#[test]
fn a_kept_stretch_of_a_long_run_stays_small() {
    let setup = setup(Variant::Fenced, 5_000, 3);
    let drawn =
        drawing::draw_seeded(&setup, &BackendKind::Pure, Some(20_000..20_060)).expect("drawn");
    let stretch = drawn.stretch.expect("a stretch");
    let total = stretch.total.expect("told to its end");
    assert!(total > 40_000, "only {total} lines");
    let kept = &drawn.outcome.recorded.as_ref().expect("kept").trace;
    assert!(
        kept.lines.kept() < 1_000,
        "{} lines kept",
        kept.lines.kept()
    );
    assert!(
        kept.leases.kept() < 1_000,
        "{} leases kept",
        kept.leases.kept()
    );
    assert!(
        kept.lines.iter().any(|l| l.at_ms == stretch.view.from_ms)
            && kept.lines.iter().any(|l| l.at_ms == stretch.view.to_ms),
        "the stretch's lines are kept"
    );
}

/// Drawn by default: the whole of a short run; the last lines of a long one that holds; the
/// lines up to (and with) the first violation of a long one that fails.
#[test]
fn the_default_stretch_ends_at_the_first_violation_or_the_end() {
    let mut short = setup(Variant::Fenced, 1, 1);
    short.faults = FaultPlan::none();
    let drawn = drawing::draw_seeded(&short, &BackendKind::Pure, None).expect("drawn");
    let whole = run_setup(&short, &BackendKind::Pure, true);
    let lines = timeline::render(&whole.recorded.expect("recorded").trace)
        .lines
        .len();
    assert!(lines <= DRAWN_LINES, "{lines} lines");
    assert_eq!(drawn.stretch, None, "a short run is drawn whole");

    let holds = setup(Variant::Fenced, 200, 2);
    let drawn = drawing::draw_seeded(&holds, &BackendKind::Pure, None).expect("drawn");
    let stretch = drawn.stretch.expect("a stretch");
    let total = stretch.total.expect("told to its end");
    assert_eq!(stretch.chosen, Chosen::End);
    assert_eq!(stretch.lines, total - DRAWN_LINES..total);

    let mut failing = 0;
    for seed in 0..80 {
        let fails = setup(Variant::RenewRevives, 20, seed);
        let whole = run_setup(&fails, &BackendKind::Pure, true);
        let trace = &whole.recorded.as_ref().expect("recorded").trace;
        let rendered = timeline::render(trace);
        let Some(first) = trace.violations.first() else {
            continue;
        };
        let t = rendered.t_of(first.line).expect("a violation after a line");
        if t < DRAWN_LINES {
            continue;
        }
        let drawn = drawing::draw_seeded(&fails, &BackendKind::Pure, None).expect("drawn");
        let stretch = drawn.stretch.expect("a stretch");
        assert_eq!(stretch.chosen, Chosen::UpToViolation, "seed {seed}");
        assert_eq!(stretch.lines, t + 1 - DRAWN_LINES..t + 1, "seed {seed}");
        assert_eq!(
            stretch.total, None,
            "seed {seed}: the first run stopped at it"
        );
        let kept = &drawn.outcome.recorded.as_ref().expect("kept").trace;
        let svg = svg::render_view(kept, Some(stretch.view), "t", "s", "p");
        // The line of the first violation is marked, with every invariant broken there.
        let marked = svg.lines().find(|l| l.contains(" violated</text>"));
        assert!(
            marked.is_some_and(|l| l.contains(first.invariant().id())),
            "seed {seed}: {} not marked: {marked:?}",
            first.invariant().id()
        );
        failing += 1;
    }
    assert!(failing >= 3, "only {failing} seeds failed late enough");
}

#[test]
fn lines_are_a_to_b_with_b_after_a() {
    assert_eq!(drawing::parse_lines("40..100"), Ok(40..100));
    assert_eq!(drawing::parse_lines("t40..t100"), Ok(40..100));
    for bad in ["100..40", "5..5", "40", "a..b", "..4", "-1..3"] {
        let error = drawing::parse_lines(bad).expect_err(bad);
        assert!(error.starts_with(&format!("lines {bad}:")), "{error}");
    }
}

/// A label's box in a drawing: its text's extent as the layout reckons it (`per_char` pixels a
/// character), from its ascent to its descent about the baseline.
#[derive(Debug)]
struct Label {
    text: String,
    x1: f64,
    x2: f64,
    y1: f64,
    y2: f64,
}

impl Label {
    fn meets(&self, other: &Label) -> bool {
        self.x1 < other.x2 && other.x1 < self.x2 && self.y1 < other.y2 && other.y1 < self.y2
    }
}

/// The labels of leases (regular text) and of markers (bold, in a settle's colour) in `svg`.
fn labels(svg: &str) -> (Vec<Label>, Vec<Label>) {
    let attr = |element: &str, name: &str| {
        let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = element[start..].find('"')?;
        Some(element[start..start + len].to_string())
    };
    let (mut leases, mut markers) = (Vec::new(), Vec::new());
    for element in svg.split("<text ").skip(1) {
        let Some((head, rest)) = element.split_once('>') else {
            continue;
        };
        let text = rest.split("</text>").next().unwrap_or("").to_string();
        let head = format!(" {head}");
        let number = |name| attr(&head, name).and_then(|v| v.parse::<f64>().ok());
        let (Some(x), Some(y)) = (number("x"), number("y")) else {
            continue;
        };
        let bold = attr(&head, "font-weight").is_some();
        let fill = attr(&head, "fill").unwrap_or_default();
        let sized = attr(&head, "font-size").is_some();
        let (list, per_char) = if fill == "#212121" && !bold {
            (&mut leases, 7.0)
        } else if bold && !sized && !text.starts_with('⚠') && text != "broker restart" {
            (&mut markers, 8.0)
        } else {
            continue;
        };
        let width = per_char * text.chars().count() as f64;
        let (x1, x2) = match attr(&head, "text-anchor").as_deref() {
            Some("end") => (x - width, x),
            _ => (x, x + width),
        };
        list.push(Label {
            text,
            x1,
            x2,
            y1: y - 9.0,
            y2: y + 3.0,
        });
    }
    (leases, markers)
}

/// In dense stretches of long runs, no marker's label is written over a lease's label or over
/// another marker's (a marker with no room keeps its label as a tooltip).
#[test]
fn labels_are_not_written_over_each_other() {
    let mut markers_seen = 0;
    for seed in 1..4 {
        let setup = setup(Variant::RenewRevives, 300, seed);
        let whole = run_setup(&setup, &BackendKind::Pure, true);
        let trace = &whole.recorded.as_ref().expect("recorded").trace;
        let rendered = timeline::render(trace);
        let total = rendered.lines.len();
        for start in (0..total - 40).step_by(total / 10) {
            let lines = start..start + 40;
            let stretch = drawing::stretch_of_trace(trace, &rendered, Some(lines.clone()))
                .expect("a valid stretch")
                .expect("a stretch");
            let svg = svg::render_view(trace, Some(stretch.view), "t", "s", "p");
            let (leases, markers) = labels(&svg);
            markers_seen += markers.len();
            for (i, marker) in markers.iter().enumerate() {
                let over = leases
                    .iter()
                    .chain(&markers[i + 1..])
                    .find(|l| marker.meets(l));
                assert!(
                    over.is_none(),
                    "seed {seed} lines {lines:?}: {:?} over {:?}",
                    marker.text,
                    over.map(|l| &l.text)
                );
            }
        }
    }
    assert!(markers_seen > 100, "only {markers_seen} marker labels");
}
