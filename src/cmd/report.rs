//! `leasehold report`: every variant through both engines, as the verdict matrix
//! `reports/VERDICTS.md` (and `reports/verdicts.json`).
//!
//! The matrix itself — the engines, the cells, the expectations and the judging — is the
//! library's ([`leasehold_front::matrix`]); this module turns flags into a
//! [`MatrixConfig`], renders the rows and writes (or compares) the files.
//!
//! * [`render`] — the Markdown (byte-stable) and JSON (with timings) renderings.

use crate::cli::{CmdResult, Status, UserError};
use crate::files;
use leasehold_front::matrix::{
    self, engines, evidence_files, stale_evidence, Cell, Depth, Engine, EngineRun, MatrixConfig,
    Row, Unexpected,
};
use leasehold_model::{Invariant, Variant};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The Markdown report's file name.
pub const VERDICTS_MD: &str = "VERDICTS.md";
/// The JSON report's file name.
pub const VERDICTS_JSON: &str = "verdicts.json";

/// Arguments of `leasehold report`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct Args {
    /// A few hundred simulator seeds per variant instead of up to 10,000 (the model checker
    /// keeps its bounds), for CI; written under reports/quick/ by default.
    #[arg(long)]
    pub quick: bool,
    /// Where VERDICTS.md, verdicts.json and the evidence scenarios go (default: reports/,
    /// or reports/quick/ with --quick).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only these variants, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// Regenerate into a temporary folder and compare with the committed VERDICTS.md (and
    /// its scenario files); exit 1 with a summary if they differ. Writes nothing under --out.
    #[arg(long)]
    pub check_diff: bool,
    /// Print the JSON report on stdout.
    #[arg(long)]
    pub json: bool,
    /// Threads for the engines (the results do not depend on it).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The broker the simulator's campaigns run on: `pure`, `embedded`, `redis`, `postgres`, or
    /// one a suite registered (`cli::main_with`); the model checker explores the reference
    /// broker.
    /// Name the variants it implements with --variants.
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The Redis server (with `--backend redis`).
    #[command(flatten)]
    pub redis: crate::cmd::redis::RedisArgs,
    /// The PostgreSQL server (with `--backend postgres`).
    #[command(flatten)]
    pub postgres: crate::cmd::postgres::PostgresArgs,
    /// Diagnostic: override a variant's expectation, VARIANT=INVARIANT or VARIANT=holds
    /// (repeatable).
    #[arg(long, hide = true)]
    pub expect: Vec<String>,
}

impl Args {
    fn depth(&self) -> Depth {
        if self.quick {
            Depth::Quick
        } else {
            Depth::Full
        }
    }

    /// The report's folder.
    pub fn out_dir(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| {
            if self.quick {
                PathBuf::from("reports/quick")
            } else {
                PathBuf::from("reports")
            }
        })
    }

    /// The command written into the report: only the flags that change its content.
    fn canonical_command(&self) -> String {
        let mut command = "leasehold report".to_string();
        if self.quick {
            command.push_str(" --quick");
        }
        if !self.variants.is_empty() {
            command.push_str(&format!(" --variants {}", self.variants.join(",")));
        }
        for expect in &self.expect {
            command.push_str(&format!(" --expect {expect}"));
        }
        // `Args::default()` (tests) names no backend: the reference one.
        if !["", leasehold_sim::seeded::BackendKind::PURE].contains(&self.backend.as_str()) {
            command.push_str(&format!(" --backend {}", self.backend));
        }
        command
    }
}

/// The matrix the flags ask for: the variants named (all by default), docs/variants.md's
/// expectations with the `--expect` overrides, the depth and the threads.
pub fn matrix_config(args: &Args) -> Result<MatrixConfig, UserError> {
    if args.threads == 0 || args.threads > 64 {
        return Err(UserError(format!(
            "--threads {}: must be between 1 and 64",
            args.threads
        )));
    }
    let mut config = matrix::config(args.depth()).threads(args.threads);
    if !args.variants.is_empty() {
        let mut chosen = Vec::new();
        for name in &args.variants {
            chosen.push(Variant::from_name(name.trim()).ok_or_else(|| {
                UserError(format!(
                    "--variants: unknown variant '{}'; valid: {}",
                    name.trim(),
                    Variant::names()
                ))
            })?);
        }
        config = config.variants(&chosen);
    }
    for text in &args.expect {
        let (variant, violated) = matrix::parse_expect(text)?;
        config = config.expect(variant, violated);
    }
    Ok(config)
}

/// One line per variant on stdout: what each engine found.
fn summary_line(row: &Row) -> String {
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

/// Runs the command.
pub fn run(args: Args, context: &crate::cmd::backends::Context) -> CmdResult {
    let backend = context.select(&args.backend, &args.redis, &args.postgres)?;
    let config = matrix_config(&args)?.backend(backend);
    run_with(
        &args,
        &config,
        &engines::engines(config.threads, &config.backend),
    )
}

/// What the run wrote or compared: the unexpected cells and the differences from the
/// committed report (`--check-diff`).
struct Outcome {
    unexpected: Vec<Unexpected>,
    differences: Vec<String>,
    json_text: String,
}

/// Runs the command with the given engines (tests pass stand-ins).
pub fn run_with(args: &Args, config: &MatrixConfig, engines: &[Box<dyn EngineRun>]) -> CmdResult {
    let started = Instant::now();
    let out = args.out_dir();
    let write_dir = if args.check_diff {
        std::env::temp_dir().join(format!("leasehold-report-{}", std::process::id()))
    } else {
        out.clone()
    };
    if !args.json {
        let names: Vec<&str> = engines.iter().map(|e| e.engine().name()).collect();
        let n = config.variants.len();
        println!(
            "{}  ({n} variant{}, engines: {})",
            args.canonical_command(),
            if n == 1 { "" } else { "s" },
            names.join(", ")
        );
    }
    let progress = |variant: Variant, engine: Engine, seconds: f64| {
        eprintln!("report: {variant} × {engine}: {seconds:.1} s");
    };
    let rows = config.run_with(engines, &write_dir, &progress)?;
    let json_text = write_reports(args, config, &rows, &write_dir, started)?;
    let differences = finish_files(args, &out, &write_dir, &rows)?;
    let outcome = Outcome {
        unexpected: rows.iter().flat_map(Row::unexpected).collect(),
        differences,
        json_text,
    };
    print_outcome(args, &rows, &outcome, &out, started);
    Ok(
        if outcome.unexpected.is_empty() && outcome.differences.is_empty() {
            Status::Ok
        } else {
            Status::Failed
        },
    )
}

/// Renders and writes `VERDICTS.md` and `verdicts.json` into `dir`; returns the JSON text.
fn write_reports(
    args: &Args,
    config: &MatrixConfig,
    rows: &[Row],
    dir: &Path,
    started: Instant,
) -> Result<String, UserError> {
    let command = args.canonical_command();
    let bounds = config.bounds();
    let check_diff = format!(
        "cargo run --release -- report{} --check-diff",
        if args.quick { " --quick" } else { "" }
    );
    let header = matrix::render::Header {
        command: &command,
        depth: args.depth(),
        check_diff: &check_diff,
        bounds: &bounds,
    };
    let markdown = matrix::render::markdown(&header, rows);
    let json = matrix::render::json(&header, rows, started.elapsed().as_secs_f64());
    let json_text = format!(
        "{}\n",
        serde_json::to_string_pretty(&json).expect("the report serialises")
    );
    files::write_atomic(&dir.join(VERDICTS_MD), markdown.as_bytes())?;
    files::write_atomic(&dir.join(VERDICTS_JSON), json_text.as_bytes())?;
    Ok(json_text)
}

/// With `--check-diff`: the differences between the fresh report in `write_dir` and the
/// committed one in `out` (then removes `write_dir`). Otherwise removes the stale evidence
/// files under `out`.
fn finish_files(
    args: &Args,
    out: &Path,
    write_dir: &Path,
    rows: &[Row],
) -> Result<Vec<String>, UserError> {
    if !args.check_diff {
        for path in stale_evidence(out, rows) {
            std::fs::remove_file(out.join(&path)).map_err(|e| {
                UserError(format!("{}: cannot remove: {e}", out.join(&path).display()))
            })?;
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

fn print_outcome(args: &Args, rows: &[Row], outcome: &Outcome, out: &Path, started: Instant) {
    if args.json {
        print!("{}", outcome.json_text);
    } else {
        for row in rows {
            println!("{}", summary_line(row));
        }
    }
    for u in &outcome.unexpected {
        println!("{u}");
    }
    for d in &outcome.differences {
        print!("{d}");
    }
    if args.json {
        return;
    }
    let wrote = if args.check_diff {
        format!("compared with {}", out.join(VERDICTS_MD).display())
    } else {
        format!(
            "wrote {} and {}",
            out.join(VERDICTS_MD).display(),
            out.join(VERDICTS_JSON).display()
        )
    };
    let cells = if outcome.unexpected.is_empty() {
        "every cell as expected".to_string()
    } else {
        format!("{} unexpected cell(s)", outcome.unexpected.len())
    };
    let diff = match (args.check_diff, outcome.differences.is_empty()) {
        (false, _) => "",
        (true, true) => ", the committed report is up to date",
        (true, false) => {
            ", the committed report is OUT OF DATE (regenerate it without --check-diff)"
        }
    };
    println!(
        "result: {cells}{diff}; {wrote} ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_front::matrix::{EngineResult, Evidence};
    use std::collections::BTreeMap;

    /// A stand-in engine that finds exactly docs/variants.md's expected violations (and, for
    /// `dlq-drop`, an extra one), with made-up but fixed evidence: it exercises the matrix, not
    /// a protocol.
    struct StandIn(Engine);

    impl EngineRun for StandIn {
        fn engine(&self) -> Engine {
            self.0
        }

        fn run(
            &self,
            variant: Variant,
            _depth: Depth,
            out: &Path,
        ) -> Result<EngineResult, UserError> {
            let mut cells = BTreeMap::new();
            for inv in Invariant::ALL {
                let breaks = variant.expected_violation() == Some(inv)
                    || (variant == Variant::DlqDrop && inv == Invariant::I4);
                let cell = if self.0 == Engine::Check && inv == Invariant::I7 {
                    Cell::NotChecked
                } else if breaks {
                    let scenario = format!("scenarios/{variant}-{}-{}.toml", self.0, inv.id());
                    files::write_atomic(&out.join(&scenario), b"name = \"x\"\n")?;
                    Cell::Violated(match self.0 {
                        Engine::Check => Evidence::Check {
                            depth: 3,
                            scenario: Some(scenario),
                            replays: true,
                        },
                        Engine::Sim => Evidence::Sim {
                            seeds_to_first_failure: 2,
                            first_seed: 1,
                            median_seeds_to_failure: matrix::median_gap(0, &[1, 4, 5]),
                            failures_sampled: 3,
                            failures: 3,
                            seeds_run: 10,
                            scenario: Some(scenario),
                            replays: true,
                        },
                    })
                } else {
                    Cell::Holds
                };
                cells.insert(inv, cell);
            }
            Ok(EngineResult {
                command: format!("leasehold {} --variant {variant}", self.0),
                cells,
                seconds: 0.0,
                stats: serde_json::Value::Null,
            })
        }
    }

    fn stand_ins() -> Vec<Box<dyn EngineRun>> {
        vec![
            Box::new(StandIn(Engine::Check)),
            Box::new(StandIn(Engine::Sim)),
        ]
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "leasehold-report-test-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn run_stand_in(args: &Args) -> Status {
        // `Args::default()` has no thread; the command line's default is 1.
        let args = Args {
            threads: 1,
            ..args.clone()
        };
        let config = matrix_config(&args).expect("a valid matrix");
        run_with(&args, &config, &stand_ins()).expect("runs")
    }

    #[test]
    fn every_expected_cell_exits_0_and_renders_the_evidence() {
        let dir = temp("ok");
        let args = Args {
            out: Some(dir.clone()),
            ..Args::default()
        };
        assert_eq!(run_stand_in(&args), Status::Ok);
        let md = std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("written");
        assert!(md.contains("**Result: every cell as expected** (20 variants"));
        // docs/variants.md: three protocols hold, seventeen variants each break one invariant
        // (redis-streams, pg-visibility, and fifteen mutants: twelve, then one per blind spot).
        assert!(md.contains(
            "**Headline**: 3 of 3 variants expected to hold hold in every cell the engines \
             evaluate; 17 of 17 expected violations are caught by both engines (check 17, sim \
             17); 0 unexpected cells."
        ));
        // The expected violation is bold and linked to its scenario; the extra one is informational.
        assert!(md.contains("**[violated (depth 3)](scenarios/dlq-drop-check-I3.toml)**"));
        assert!(md.contains("[also violated (depth 3)](scenarios/dlq-drop-check-I4.toml)"));
        // Failures at seeds 1, 4, 5 from 0: gaps 2, 3, 1 → median 2.
        assert!(md.contains("[violated (2 seeds, median 2)](scenarios/dlq-drop-sim-I3.toml)"));
        assert!(!md.contains("⚠ "), "no cell is marked");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(VERDICTS_JSON)).expect("json"))
                .expect("valid json");
        assert_eq!(json["result"], "as_expected");
        assert_eq!(
            json["variants"][0]["engines"]["check"]["cells"]["I7"]["cell"]["verdict"],
            "not_checked"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_broken_expectation_exits_1_and_marks_the_cell() {
        let dir = temp("bad");
        let args = Args {
            out: Some(dir.clone()),
            variants: vec!["dlq-drop".into(), "fenced".into()],
            expect: vec!["dlq-drop=I2".into()],
            ..Args::default()
        };
        assert_eq!(run_stand_in(&args), Status::Failed);
        let md = std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("written");
        assert!(md.contains("* ⚠ unexpected: dlq-drop × I2 × check: holds, expected violated"));
        assert!(md.contains("* ⚠ unexpected: dlq-drop × I2 × sim: holds, expected violated"));
        assert!(md.contains(
            "**Headline**: 1 of 1 variants expected to hold hold in every cell the engines \
             evaluate; 0 of 1 expected violations are caught by both engines (check 0, sim 0); \
             2 unexpected cells."
        ));
        assert!(md.contains(
            "Generated by `leasehold report --variants dlq-drop,fenced --expect dlq-drop=I2`"
        ));
        // fenced stays first: rows keep the canonical order.
        assert!(
            md.find("| `fenced` |").expect("fenced row")
                < md.find("| `dlq-drop` |").expect("dlq row")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn check_diff_passes_on_a_fresh_report_and_fails_on_an_edited_one() {
        let dir = temp("diff");
        let args = Args {
            out: Some(dir.clone()),
            variants: vec!["fenced".into(), "dlq-drop".into()],
            ..Args::default()
        };
        assert_eq!(run_stand_in(&args), Status::Ok);
        let before = std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("written");
        let diff = Args {
            check_diff: true,
            ..args.clone()
        };
        assert_eq!(run_stand_in(&diff), Status::Ok);
        // --check-diff writes nothing under --out.
        assert_eq!(
            std::fs::read_to_string(dir.join(VERDICTS_MD)).expect("still there"),
            before
        );
        std::fs::write(dir.join(VERDICTS_MD), before.replace("depth 3", "depth 4")).expect("edit");
        assert_eq!(run_stand_in(&diff), Status::Failed);
        std::fs::write(dir.join(VERDICTS_MD), &before).expect("restore");
        std::fs::write(dir.join("scenarios/dlq-drop-sim-I3.toml"), "edited").expect("edit");
        assert_eq!(run_stand_in(&diff), Status::Failed);
        // Evidence a run no longer produces is a difference, and a regeneration removes it
        // (files of variants not run, and other files, are left alone).
        let stale = dir.join("scenarios/dlq-drop-check-I6.toml");
        let other = dir.join("scenarios/stuck-lease-check-I6.toml");
        std::fs::write(&stale, "old").expect("write");
        std::fs::write(&other, "kept").expect("write");
        assert_eq!(run_stand_in(&args), Status::Ok);
        assert!(!stale.exists());
        assert!(other.exists());
        std::fs::write(&stale, "old").expect("write");
        assert_eq!(run_stand_in(&diff), Status::Failed);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn diff_summary_names_the_changed_lines() {
        let summary = diff_summary("a\nb\nc\n", "a\nB\nc\n", 5);
        assert_eq!(summary, "  - line 2: b\n  + line 2: B\n");
    }
}
