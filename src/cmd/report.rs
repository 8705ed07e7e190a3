//! `leasehold report`: every variant through both engines, as the verdict matrix
//! `reports/VERDICTS.md` (and `reports/verdicts.json`).
//!
//! The matrix itself — the engines, the cells, the expectations and the judging — is the
//! library's ([`leasehold_front::matrix`]), and so are the files it writes or compares
//! ([`leasehold_front::matrix::report`]); this module turns flags into a [`leasehold_front::matrix::MatrixConfig`] and
//! prints.

use crate::status::{CmdResult, Status};
use leasehold_front::matrix::report::{self, ReportFiles};
use leasehold_front::matrix::{engines, Engine, MatrixRequest};
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
    /// reports/quick/ with --quick, reports/on-BACKEND/ with another --backend).
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
    /// The broker the simulator's campaigns run on and the model checker's counterexamples
    /// are replayed on: `pure`, `embedded`, `redis`, `postgres`, `jetstream`, `rabbitmq`, or
    /// one a suite registered (`cli::main_with`). Name the variants it implements with
    /// --variants. A server at a URL is not restarted: its campaigns run without broker
    /// restarts.
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The backend's server (`--url URL`, `--spawn`).
    #[command(flatten)]
    pub server: crate::cmd::backends::ServerArgs,
    /// Diagnostic: override a variant's expectation, VARIANT=INVARIANT or VARIANT=holds
    /// (repeatable).
    #[arg(long, hide = true)]
    pub expect: Vec<String>,
}

impl Args {
    /// The matrix run the flags name, for the library.
    fn request(&self) -> MatrixRequest {
        MatrixRequest {
            quick: self.quick,
            out: self.out.clone(),
            variants: self.variants.clone(),
            expect: self.expect.clone(),
            threads: self.threads,
            backend: self.backend.clone(),
        }
    }
}

/// Runs the command.
pub fn run(args: Args, context: &crate::cmd::backends::Context) -> CmdResult {
    let backend = context.select(&args.backend, &args.server)?;
    let request = args.request();
    let config = request.config()?.backend(backend);
    let engines = engines::engines(config.threads, &config.backend);
    let started = Instant::now();
    if !args.json {
        let names: Vec<&str> = engines.iter().map(|e| e.engine().name()).collect();
        let n = config.variants.len();
        println!(
            "{}  ({n} variant{}, engines: {})",
            request.command_on(&config.backend),
            if n == 1 { "" } else { "s" },
            names.join(", ")
        );
    }
    let progress = |variant: Variant, engine: Engine, seconds: f64| {
        eprintln!("report: {variant} × {engine}: {seconds:.1} s");
    };
    let files = ReportFiles {
        command: request.command_on(&config.backend),
        out: request.out_dir(),
        check_diff: args.check_diff,
    };
    let reported = report::write_report(&files, &config, &engines, &progress)?;
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
