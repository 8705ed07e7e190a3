//! The verdict matrix as report files: `VERDICTS.md` and `verdicts.json` written into a folder,
//! or regenerated aside and compared with the committed ones (`leasehold report
//! --check-diff`), and the lines that summarise a run.

use super::render::{self, Header};
use super::Unexpected;
use super::{evidence_files, stale_evidence, Cell, Engine, EngineRun, MatrixConfig, Row};
use crate::files;
use crate::Error;
use leasehold_model::{Invariant, Variant};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The Markdown report's file name.
pub const VERDICTS_MD: &str = "VERDICTS.md";
/// The JSON report's file name.
pub const VERDICTS_JSON: &str = "verdicts.json";

/// Where a report goes and what it says of itself.
#[derive(Clone, Debug)]
pub struct ReportFiles {
    /// The command written into the report (only the flags that change its content).
    pub command: String,
    /// The report's folder: `VERDICTS.md`, `verdicts.json` and the evidence scenarios.
    pub out: PathBuf,
    /// Regenerate into a temporary folder and compare with the report in `out` instead of
    /// writing there.
    pub check_diff: bool,
}

/// What a report run wrote or compared.
#[derive(Clone, Debug)]
pub struct Reported {
    /// A row per variant.
    pub rows: Vec<Row>,
    /// The cells that differ from their expectation.
    pub unexpected: Vec<Unexpected>,
    /// With `check_diff`: how the committed report differs from the regeneration, one text
    /// per file (empty: up to date).
    pub differences: Vec<String>,
    /// The JSON report, as written.
    pub json_text: String,
}

impl Reported {
    /// Every cell as expected, and (with `check_diff`) the committed report up to date.
    pub fn ok(&self) -> bool {
        self.unexpected.is_empty() && self.differences.is_empty()
    }
}

/// Runs the matrix with `engines` and writes its report as `files` says; `progress` hears each
/// (variant, engine, wall seconds) as it finishes.
pub fn write_report(
    files: &ReportFiles,
    config: &MatrixConfig,
    engines: &[Box<dyn EngineRun>],
    progress: &dyn Fn(Variant, Engine, f64),
) -> Result<Reported, Error> {
    let started = Instant::now();
    let write_dir = if files.check_diff {
        std::env::temp_dir().join(format!("leasehold-report-{}", std::process::id()))
    } else {
        files.out.clone()
    };
    let rows = config.run_with(engines, &write_dir, progress)?;
    let json_text = write_files(files, config, &rows, &write_dir, started)?;
    let differences = finish_files(files, &write_dir, &rows)?;
    Ok(Reported {
        unexpected: rows.iter().flat_map(Row::unexpected).collect(),
        rows,
        differences,
        json_text,
    })
}

/// Renders and writes `VERDICTS.md` and `verdicts.json` into `dir`; returns the JSON text.
fn write_files(
    files: &ReportFiles,
    config: &MatrixConfig,
    rows: &[Row],
    dir: &Path,
    started: Instant,
) -> Result<String, Error> {
    let bounds = config.bounds();
    let check_diff = format!(
        "cargo run --release -- {} --check-diff",
        files.command.trim_start_matches("leasehold ")
    );
    let header = Header {
        command: &files.command,
        depth: config.depth,
        check_diff: &check_diff,
        bounds: &bounds,
    };
    let markdown = render::markdown(&header, rows);
    let json = render::json(&header, rows, started.elapsed().as_secs_f64());
    let json_text = format!(
        "{}\n",
        serde_json::to_string_pretty(&json).expect("the report serialises")
    );
    files::write_atomic(&dir.join(VERDICTS_MD), markdown.as_bytes())?;
    files::write_atomic(&dir.join(VERDICTS_JSON), json_text.as_bytes())?;
    Ok(json_text)
}

/// With `check_diff`: the differences between the fresh report in `write_dir` and the
/// committed one in `files.out` (then removes `write_dir`). Otherwise removes the stale
/// evidence files under `files.out`.
fn finish_files(files: &ReportFiles, write_dir: &Path, rows: &[Row]) -> Result<Vec<String>, Error> {
    let out = &files.out;
    if !files.check_diff {
        for path in stale_evidence(out, rows) {
            std::fs::remove_file(out.join(&path))
                .map_err(|e| Error(format!("{}: cannot remove: {e}", out.join(&path).display())))?;
        }
        return Ok(Vec::new());
    }
    let mut differences = compare(out, write_dir, rows);
    for path in stale_evidence(out, rows) {
        differences.push(format!(
            "{}: no longer produced (the violation it replays is not found any more)\n",
            out.join(path).display()
        ));
    }
    let _ = std::fs::remove_dir_all(write_dir);
    Ok(differences)
}

/// Compares the fresh report in `fresh_dir` with the committed one in `committed_dir`;
/// returns the differences (empty: identical).
fn compare(committed_dir: &Path, fresh_dir: &Path, rows: &[Row]) -> Vec<String> {
    let mut differences = Vec::new();
    let mut names = vec![VERDICTS_MD.to_string()];
    names.extend(evidence_files(rows));
    for name in names {
        let committed = committed_dir.join(&name);
        let fresh = std::fs::read_to_string(fresh_dir.join(&name)).unwrap_or_default();
        match std::fs::read_to_string(&committed) {
            Err(e) => differences.push(format!("{}: cannot read: {e}\n", committed.display())),
            Ok(old) if old != fresh => differences.push(format!(
                "{} differs from a regeneration:\n{}",
                committed.display(),
                diff_summary(&old, &fresh, 12)
            )),
            Ok(_) => {}
        }
    }
    differences
}

/// Lines present in one text and not the other, at most `limit` of each, as a diff summary.
pub fn diff_summary(committed: &str, fresh: &str, limit: usize) -> String {
    let old: Vec<&str> = committed.lines().collect();
    let new: Vec<&str> = fresh.lines().collect();
    let mut out = String::new();
    let removed: Vec<(usize, &str)> = old
        .iter()
        .enumerate()
        .filter(|(_, l)| !new.contains(l))
        .map(|(i, l)| (i + 1, *l))
        .collect();
    let added: Vec<(usize, &str)> = new
        .iter()
        .enumerate()
        .filter(|(_, l)| !old.contains(l))
        .map(|(i, l)| (i + 1, *l))
        .collect();
    for (sign, lines) in [("-", &removed), ("+", &added)] {
        for (n, line) in lines.iter().take(limit) {
            let line: String = line.chars().take(160).collect();
            out.push_str(&format!("  {sign} line {n}: {line}\n"));
        }
        if lines.len() > limit {
            out.push_str(&format!("  {sign} … {} more lines\n", lines.len() - limit));
        }
    }
    if removed.is_empty() && added.is_empty() {
        out.push_str("  (the same lines in another order, or a difference in line endings)\n");
    }
    out
}

/// One line per variant: what each engine found.
pub fn summary_line(row: &Row) -> String {
    let mut parts = Vec::new();
    for engine in Engine::ALL {
        let violated: Vec<String> = Invariant::ALL
            .iter()
            .filter_map(|&inv| match row.cell(engine, inv) {
                Cell::Violated(e) => Some(format!("{} ({})", inv.id(), e.short())),
                _ => None,
            })
            .collect();
        let other: Vec<String> = Invariant::ALL
            .iter()
            .filter_map(|&inv| match row.cell(engine, inv) {
                Cell::NotReached { .. } | Cell::Bounded { .. } => {
                    Some(format!("{} {}", inv.id(), row.cell(engine, inv).word()))
                }
                _ => None,
            })
            .collect();
        let mut text = if violated.is_empty() {
            "no violation".to_string()
        } else {
            format!("violated {}", violated.join(", "))
        };
        if !other.is_empty() {
            text.push_str(&format!("; {}", other.join(", ")));
        }
        parts.push(format!("{engine}: {text}"));
    }
    format!(
        "{:<22} expected {:<12} {}",
        row.variant.name(),
        row.expectation.text(),
        parts.join("  |  ")
    )
}

/// The last line of a report run: the cells, the comparison, what it wrote and how long it
/// took.
pub fn result_line(files: &ReportFiles, reported: &Reported, seconds: f64) -> String {
    let out = &files.out;
    let wrote = if files.check_diff {
        format!("compared with {}", out.join(VERDICTS_MD).display())
    } else {
        format!(
            "wrote {} and {}",
            out.join(VERDICTS_MD).display(),
            out.join(VERDICTS_JSON).display()
        )
    };
    let cells = if reported.unexpected.is_empty() {
        "every cell as expected".to_string()
    } else {
        format!("{} unexpected cell(s)", reported.unexpected.len())
    };
    let diff = match (files.check_diff, reported.differences.is_empty()) {
        (false, _) => "",
        (true, true) => ", the committed report is up to date",
        (true, false) => {
            ", the committed report is OUT OF DATE (regenerate it without --check-diff)"
        }
    };
    format!("result: {cells}{diff}; {wrote} ({seconds:.1} s)")
}
