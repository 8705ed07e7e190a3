//! The planted bug, from a campaign to a drawing, through this crate's own command line
//! (`cargo run -p leasehold-example-queue -- …`) and only through it: a campaign on
//! `--backend acks-by-id` finds the stale ack, `shrink FILE --backend acks-by-id` keeps that
//! backend in both of its phases and writes a scripted scenario of a few steps that replays to
//! the same invariant on the buggy queue (and not on the fixed one, nor on the reference
//! broker), and `timeline FILE --backend acks-by-id --svg OUT` draws it.

use super::out;
use leasehold_example_queue::{ACKS_BY_ID, FIXED};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The most steps the shrunk story may keep.
const STEPS_MAX: usize = 8;

/// Runs this crate's command line with `args`.
fn queue_cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold-example-queue"))
        .args(args)
        .output()
        .expect("the example's command line runs")
}

fn said(output: &Output) -> String {
    format!(
        "status {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A fresh folder for this test's files.
fn folder(test: &str) -> PathBuf {
    let dir = out(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a folder");
    dir
}

/// The campaign's saved file for its first I1 failure, from the line it prints:
/// `I1 seed N: replay with: … replay FILE --backend acks-by-id …`.
fn campaign_finding(dir: &Path) -> PathBuf {
    let dir_text = dir.display().to_string();
    let output = queue_cli(&[
        "sim",
        "--seeds",
        "0..40",
        "--backend",
        ACKS_BY_ID,
        "--out",
        &dir_text,
    ]);
    let text = said(&output);
    assert_eq!(output.status.code(), Some(1), "the campaign fails: {text}");
    let line = String::from_utf8_lossy(&output.stdout)
        .lines()
        .find(|line| line.starts_with("I1 seed "))
        .unwrap_or_else(|| panic!("an I1 finding: {text}"))
        .to_string();
    let (_, recipe) = line
        .split_once("replay with: ")
        .unwrap_or_else(|| panic!("a replay recipe in {line}"));
    let file = recipe
        .split_whitespace()
        .skip_while(|word| *word != "replay")
        .nth(1)
        .unwrap_or_else(|| panic!("a file in {line}"));
    assert!(
        line.contains(&format!("--backend {ACKS_BY_ID}")),
        "the replay line names the queue: {line}"
    );
    PathBuf::from(file)
}

/// Counts a scenario file's `[[step]]` tables.
fn steps_of(text: &str) -> usize {
    text.lines()
        .filter(|line| line.trim() == "[[step]]")
        .count()
}

/// Whether `svg` is well-formed as XML goes for a drawing: every tag closed in order, every
/// attribute quoted, every entity one of XML's.
fn well_formed(svg: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        text_is_escaped(&rest[..start])?;
        let end = rest[start..]
            .find('>')
            .ok_or_else(|| format!("an unclosed tag at {}", &rest[start..]))?
            + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(top) if top == name.trim() => continue,
                top => return Err(format!("</{name}> closes {top:?}")),
            }
        }
        if !tag.matches('"').count().is_multiple_of(2) {
            return Err(format!("an unbalanced quote in <{tag}>"));
        }
        let name = tag.split_whitespace().next().unwrap_or_default();
        if name.is_empty() {
            return Err("an empty tag".to_string());
        }
        if !tag.ends_with('/') {
            open.push(name);
        }
    }
    text_is_escaped(rest)?;
    match (open.as_slice(), svg.trim_start().starts_with("<svg")) {
        ([], true) => Ok(()),
        (left, _) => Err(format!("left open: {left:?}, or not an <svg> document")),
    }
}

fn text_is_escaped(text: &str) -> Result<(), String> {
    for (at, _) in text.match_indices('&') {
        let entity = &text[at..text[at..].find(';').map_or(text.len(), |e| at + e + 1)];
        let known = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity)
            || entity.starts_with("&#");
        if !known {
            return Err(format!("an unescaped '&' in {text:?}"));
        }
    }
    Ok(())
}

#[test]
fn the_campaigns_finding_shrinks_on_the_queue_and_draws() {
    let dir = folder("shrink-cli");
    let finding = campaign_finding(&dir);
    let finding_text = finding.display().to_string();

    // Shrink on the queue the campaign ran on: both phases keep it.
    let shrunk_path = dir.join("shrunk.toml");
    let shrunk_text = shrunk_path.display().to_string();
    let output = queue_cli(&[
        "shrink",
        &finding_text,
        "--backend",
        ACKS_BY_ID,
        "--out",
        &shrunk_text,
    ]);
    let text = said(&output);
    assert_eq!(output.status.code(), Some(0), "shrunk and written: {text}");
    assert!(
        text.contains(&format!("wrote {shrunk_text}")),
        "written where asked: {text}"
    );
    let scenario = std::fs::read_to_string(&shrunk_path).expect("the shrunk file");
    let steps = steps_of(&scenario);
    assert!(
        (1..=STEPS_MAX).contains(&steps),
        "{steps} steps (at most {STEPS_MAX}):\n{scenario}"
    );
    assert!(
        scenario.contains("[expect]\nviolated = \"I1\""),
        "the same invariant: {scenario}"
    );

    // It replays to I1 on the queue, through the command line and through the library.
    let replayed = queue_cli(&["replay", &shrunk_text, "--backend", ACKS_BY_ID]);
    let text = said(&replayed);
    assert_eq!(replayed.status.code(), Some(0), "matches its file: {text}");
    assert!(text.contains("violated: I1 stale-never-counts"), "{text}");
    let library =
        leasehold::replay(&shrunk_path, &leasehold_example_queue::acks_by_id()).expect("replays");
    assert!(
        library
            .violations
            .iter()
            .any(|v| v.contains("I1 stale-never-counts")),
        "{library:?}"
    );

    // The bug is the queue's: the fixed queue and the reference broker refuse the stale
    // settle, so the story does not break I1 there.
    for other in [FIXED, "pure"] {
        let elsewhere = queue_cli(&["replay", &shrunk_text, "--backend", other]);
        let text = said(&elsewhere);
        assert_eq!(elsewhere.status.code(), Some(1), "on {other}: {text}");
        assert!(!text.contains("violated: I1"), "on {other}: {text}");
    }

    // Drawn on the queue: a well-formed SVG that shows the violation and how to draw it again.
    let (status, svg) = draw(&shrunk_path, ACKS_BY_ID);
    assert_eq!(status, Some(0), "drawn, the file matched: {svg}");
    assert!(svg.contains("I1 violated"), "the violation is drawn: {svg}");
    assert!(
        svg.contains(&format!("--backend {ACKS_BY_ID}")),
        "the drawing names its backend: {svg}"
    );

    // The same story drawn on the fixed queue shows no violation (and misses its [expect]).
    let (status, svg) = draw(&shrunk_path, FIXED);
    assert_eq!(status, Some(1), "{svg}");
    assert!(!svg.contains("I1 violated"), "{svg}");
}

/// `timeline FILE --backend NAME --svg OUT` through this crate's command line: its exit
/// status and the drawing, checked well-formed.
fn draw(scenario: &Path, backend: &str) -> (Option<i32>, String) {
    let svg_path = scenario.with_extension(format!("{backend}.svg"));
    let svg_text = svg_path.display().to_string();
    let scenario_text = scenario.display().to_string();
    let drawn = queue_cli(&[
        "timeline",
        &scenario_text,
        "--backend",
        backend,
        "--svg",
        &svg_text,
    ]);
    let svg = std::fs::read_to_string(&svg_path)
        .unwrap_or_else(|e| panic!("{svg_text}: {e}: {}", said(&drawn)));
    well_formed(&svg).unwrap_or_else(|e| panic!("{e}:\n{svg}"));
    (drawn.status.code(), svg)
}

/// A name no one registered: one line naming the known ones, exit status 2, for every command
/// that takes `--backend`.
#[test]
fn an_unknown_backend_is_one_line_naming_the_registered_ones() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/t0-t5-stale-ack.toml")
        .display()
        .to_string();
    for command in ["sim", "report", "replay", "timeline", "shrink"] {
        let mut args = vec![command];
        if !["sim", "report"].contains(&command) {
            args.push(&scenario);
        }
        args.extend(["--backend", "nope"]);
        let output = queue_cli(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: {}",
            said(&output)
        );
        assert_eq!(stderr.lines().count(), 1, "{command}: {stderr}");
        for name in ["pure", "embedded", "redis", ACKS_BY_ID, FIXED] {
            assert!(stderr.contains(name), "{command} names {name}: {stderr}");
        }
    }
}

/// The library's shrink call does what the command does: the scripted result replays to I1
/// on the queue it shrank on.
#[test]
fn the_library_shrinks_on_the_queue() {
    let dir = folder("shrink-library");
    let finding = campaign_finding(&dir);
    let shrunk = leasehold::shrink(&finding)
        .backend(leasehold_example_queue::acks_by_id())
        .out(dir.join("library.toml"))
        .reproduce_with(super::PROGRAM)
        .run()
        .expect("shrinks");
    let written = shrunk.written.as_ref().expect("a result written");
    assert_eq!(shrunk.invariant, Some(leasehold::Invariant::I1));
    let (before, after) = shrunk.steps.expect("a scripted phase");
    assert!(after <= STEPS_MAX && after <= before, "{shrunk:?}");
    assert_eq!(
        shrunk.command.as_deref(),
        Some(
            format!(
                "{} replay {} --backend {ACKS_BY_ID}",
                super::PROGRAM,
                written.display()
            )
            .as_str()
        )
    );
    leasehold::replay(written, &leasehold_example_queue::acks_by_id())
        .expect("replays")
        .assert_matches();
}
