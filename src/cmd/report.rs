//! `leasehold report`: every variant through both engines, as the verdict matrix
//! `reports/VERDICTS.md` (and `reports/verdicts.json`).
//!
//! The matrix itself — the engines, the cells, the expectations and the judging — is the
//! library's ([`leasehold_front::matrix`]), and so are the files it writes or compares
//! ([`leasehold_front::matrix::report`]); this module turns flags into a [`MatrixConfig`] and
//! prints.

use crate::status::{CmdResult, Status, UserError};
use leasehold_front::matrix::report::{self, ReportFiles};
use leasehold_front::matrix::{self, engines, Depth, Engine, EngineRun, MatrixConfig};
use leasehold_model::Variant;
use std::path::PathBuf;
use std::time::Instant;

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
    /// one a suite registered (`cli::main_with`; the model checker explores it too when it was
    /// registered for `check`). Name the variants it implements with --variants.
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

/// Runs the command with the given engines (tests pass stand-ins).
pub fn run_with(args: &Args, config: &MatrixConfig, engines: &[Box<dyn EngineRun>]) -> CmdResult {
    let started = Instant::now();
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
    let files = ReportFiles {
        command: args.canonical_command(),
        out: args.out_dir(),
        check_diff: args.check_diff,
    };
    let reported = report::write_report(&files, config, engines, &progress)?;
    if args.json {
        print!("{}", reported.json_text);
    } else {
        for row in &reported.rows {
            println!("{}", report::summary_line(row));
        }
    }
    for u in &reported.unexpected {
        println!("{u}");
    }
    for d in &reported.differences {
        print!("{d}");
    }
    if !args.json {
        let seconds = started.elapsed().as_secs_f64();
        println!("{}", report::result_line(&files, &reported, seconds));
    }
    Ok(Status::held(reported.ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_only_the_flags_that_change_it() {
        let args = Args {
            quick: true,
            variants: vec!["dlq-drop".into(), "fenced".into()],
            expect: vec!["dlq-drop=I2".into()],
            json: true,
            threads: 2,
            ..Args::default()
        };
        assert_eq!(
            args.canonical_command(),
            "leasehold report --quick --variants dlq-drop,fenced --expect dlq-drop=I2"
        );
        assert_eq!(args.out_dir(), PathBuf::from("reports/quick"));
    }
}
