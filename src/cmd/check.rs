//! `leasehold check`: exhaustive model checking of a bounded configuration (docs/check.md).
//!
//! This file parses the flags and prints: the check itself is a library call
//! ([`leasehold_model::check::run()`]), and so is its report
//! ([`leasehold_front::check_report`]). A counterexample is shown by replaying the scenario
//! file it writes through the scenario executor, so the timeline printed is the one
//! `leasehold replay FILE` prints.

use crate::cmd::sim::progress::{catch_interrupts, stop_reason, INTERRUPTED};
use crate::files;
use crate::status::{CmdResult, Status, UserError};
use leasehold_front::budget::{format_bytes, parse_memory_budget, Spent};
use leasehold_front::check_flags::{loopback, CheckRequest};
use leasehold_front::check_report::{command, counterexample_report, header, text, Printed};
use leasehold_front::CheckedBackend;
use leasehold_model::check::search::Progress;
use leasehold_model::check::{
    run as check, CheckConfig, Counts, Engine, ExplorerModel, Interrupt, LeaseModel, Limits,
    Options, Outcome, Report,
};
use stateright::Model;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default bound on generated states (the library's).
pub use leasehold_front::defaults::STATES_MAX as STATES_MAX_DEFAULT;

/// The bound on the shortest-counterexample search (the library's).
pub use leasehold_front::defaults::COUNTEREXAMPLE_STATES_MAX;

/// Arguments of `leasehold check`. Every bound left out takes the variant's default (shown
/// by `leasehold protocols`).
#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// The protocol variant or mutant (`leasehold protocols`).
    #[arg(long, default_value = "fenced")]
    pub variant: String,
    /// Number of consumer groups.
    #[arg(long)]
    pub groups: Option<u32>,
    /// Events published at the start.
    #[arg(long)]
    pub events: Option<u32>,
    /// Number of workers.
    #[arg(long)]
    pub workers: Option<u32>,
    /// Deliveries per event before dead-lettering.
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Ack policy: nack_on_error, ack_always, ack_first, manual.
    #[arg(long)]
    pub policy: Option<String>,
    /// Worker crashes (a crashed worker restarts idle; its requests stay in flight).
    #[arg(long)]
    pub crashes: Option<u8>,
    /// Requests dropped in flight.
    #[arg(long)]
    pub drops: Option<u8>,
    /// Requests duplicated in flight.
    #[arg(long)]
    pub dups: Option<u8>,
    /// Replies lost after the broker applied the request (ambiguous results).
    #[arg(long)]
    pub lost_replies: Option<u8>,
    /// Broker restarts.
    #[arg(long)]
    pub broker_restarts: Option<u8>,
    /// Renew requests: a number, or `unbounded` (the renew loop is a real cycle; I6 is then
    /// checked by a search for fair cycles).
    #[arg(long)]
    pub renews: Option<String>,
    /// With `--renews unbounded`: the fairness assumption of I6, `weak` (default: each
    /// worker, each lease's expiry and each request in flight) or `none`.
    #[arg(long)]
    pub fairness: Option<String>,
    /// Handler outcomes explored: `plain` (success or an error; the default) or `all` (also
    /// the handler's `AckMessage`, `NackMessage` and `RejectMessage`).
    #[arg(long)]
    pub outcomes: Option<String>,
    /// Time: `untimed` (an expiry may end a lease at any moment; no deadline arithmetic) or
    /// `ticks` (a discrete clock: a `Tick` advances it, fetches and renews compute deadlines
    /// with the broker's own arithmetic, lease ends by the clock, workers A and B skewed).
    /// Default: the variant's (see `leasehold protocols`).
    #[arg(long, value_name = "MODE")]
    pub time: Option<String>,
    /// With `--time ticks`: milliseconds per tick (1, the default, is the broker's own unit:
    /// exact; a coarser tick is an abstraction).
    #[arg(long, value_name = "MS")]
    pub tick_ms: Option<u64>,
    /// With `--time ticks`: a lease's (and a renew's) duration in ticks (default 3).
    #[arg(long, value_name = "N")]
    pub lease_ticks: Option<u32>,
    /// With `--time ticks`: worker A's clock runs this many ticks behind the broker's and
    /// worker B's as many ahead (default 1; 0: no skew).
    #[arg(long, value_name = "N")]
    pub skew_ticks: Option<u32>,
    /// The search: `leasehold` (the default: leasehold's own depth-first search with
    /// symmetry reduction over workers and partial-order reduction, shortest counterexamples
    /// by breadth-first search, fair
    /// cycles for unbounded renews) or `stateright` (the same model through stateright's
    /// checker: its breadth-first search, or its depth-first search with its own symmetry
    /// reduction; an independent cross-check of the state counts and verdicts; it cannot be
    /// stopped by --for or --max-memory, only by --max-states).
    #[arg(long, default_value = "leasehold", value_name = "ENGINE")]
    pub engine: String,
    /// Search threads.
    #[arg(long, default_value_t = leasehold_front::defaults::CHECK_THREADS as u32)]
    pub threads: u32,
    /// Turn symmetry reduction over workers and groups off.
    #[arg(long)]
    pub no_symmetry: bool,
    /// Turn partial-order reduction off (leasehold's engine, finite budgets: in a state where a
    /// worker holds a lease, only that worker's moves are explored, since nothing else reads
    /// or changes the worker; see docs/check.md).
    #[arg(long)]
    pub no_partial_order: bool,
    /// Turn subsumption off (leasehold's engine, finite budgets: a state that is one already
    /// explored but for more faults or renews used is not explored again; see docs/check.md).
    #[arg(long)]
    pub no_subsumption: bool,
    /// Turn late duplicates off (leasehold's engine, finite budgets: a request is duplicated
    /// only as one copy of it is delivered, which loses nothing since a duplicate changes
    /// nothing a step reads until a copy is taken; see docs/check.md).
    #[arg(long)]
    pub no_late_duplicates: bool,
    /// Start from the configuration that reaches every cell of the protocol's surface the
    /// variant supports (two groups of one event, two workers, every handler outcome, a renew,
    /// each fault once, the clock): the default of a variant expected to hold (a planted bug
    /// takes it only with this flag); the flags given override it. Broad, not deep: `fenced`'s
    /// takes about 12 s (docs/check.md).
    #[arg(long, conflicts_with = "tailored")]
    pub covering: bool,
    /// Start from the variant's own configuration instead: for a planted bug, the smallest
    /// that exposes it (a counterexample in under a second); for a protocol expected to hold,
    /// one group explored deep (three events, three workers, plain outcomes, a crash, a lost
    /// reply, a broker restart; a few seconds, and the cells it leaves uncovered are named).
    #[arg(long)]
    pub tailored: bool,
    /// Also run without symmetry reduction and report both state counts.
    #[arg(long, conflicts_with = "no_symmetry")]
    pub compare_symmetry: bool,
    /// After a violation, search again past it (I5 excepted) to report every invariant the
    /// configuration can break, also those only reachable after another broke.
    #[arg(long)]
    pub all_violations: bool,
    /// Stop at the first state that breaks an invariant: its shortest counterexample in the
    /// time the search takes to reach one (a planted bug in the covering configuration: seconds
    /// instead of minutes); the invariants not found broken are not proven (leasehold's
    /// engine, finite budgets).
    #[arg(long, conflicts_with = "all_violations")]
    pub first_violation: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Also write the report to this file: as JSON when its name ends in `.json` (what
    /// `--json` prints), else the text printed.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Serve stateright's Explorer on this loopback address (e.g. 127.0.0.1:3000). It
    /// searches in the browser: the flags of leasehold's own search and report are refused
    /// beside it.
    #[arg(
        long,
        conflicts_with_all = [
            "threads", "compare_symmetry", "all_violations", "first_violation", "json", "report",
            "max_states", "out",
            "engine", "no_partial_order", "no_subsumption", "no_late_duplicates",
        ]
    )]
    pub explore: Option<String>,
    /// Stop with "bounded" after about this many generated states.
    #[arg(long, default_value_t = STATES_MAX_DEFAULT)]
    pub max_states: u64,
    /// Stop with "bounded" after this long (`90s`, `10m`, `2h30m`), as at --max-states: what
    /// the search found stands, what it did not is not proven. Ctrl-C or SIGTERM stops it the
    /// same way; a second Ctrl-C quits at once.
    #[arg(long = "for", value_name = "DURATION", conflicts_with = "explore")]
    pub for_: Option<String>,
    /// Stop with "bounded" when the process's resident memory passes this (`16GiB`, `512MiB`,
    /// `none`; default `auto`: 80 % of the memory available at the start), as at --max-states:
    /// a search that would run out of memory reports what it found instead of being killed.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "auto",
        conflicts_with = "explore"
    )]
    pub max_memory: String,
    /// Where counterexample scenarios are written.
    #[arg(long, default_value = "scenarios/found")]
    pub out: PathBuf,
    /// The broker to check: leasehold's reference broker (the default), or one a build of
    /// the command line registers for the model checker (`leasehold::cli::main_with_checked`).
    #[arg(long, value_name = "NAME", conflicts_with = "explore")]
    pub backend: Option<String>,
}

fn user(message: String) -> UserError {
    UserError(message)
}

/// The check the flags name, for the library to turn into a configuration and options.
fn request(args: &Args) -> CheckRequest {
    CheckRequest {
        variant: args.variant.clone(),
        groups: args.groups,
        events: args.events,
        workers: args.workers,
        max_attempts: args.max_attempts,
        policy: args.policy.clone(),
        crashes: args.crashes,
        drops: args.drops,
        dups: args.dups,
        lost_replies: args.lost_replies,
        broker_restarts: args.broker_restarts,
        renews: args.renews.clone(),
        fairness: args.fairness.clone(),
        outcomes: args.outcomes.clone(),
        time: args.time.clone(),
        tick_ms: args.tick_ms,
        lease_ticks: args.lease_ticks,
        skew_ticks: args.skew_ticks,
        engine: args.engine.clone(),
        threads: args.threads,
        no_symmetry: args.no_symmetry,
        no_partial_order: args.no_partial_order,
        no_subsumption: args.no_subsumption,
        no_late_duplicates: args.no_late_duplicates,
        covering: args.covering,
        tailored: args.tailored,
        all_violations: args.all_violations,
        first_violation: args.first_violation,
        max_states: args.max_states,
        timed: args.for_.is_some(),
    }
}

/// Runs the library check, on the reference broker or on `broker`, with a spinner on stderr
/// (shown after a second, when `progress`: stderr is a terminal); returns the report and the
/// wall-clock seconds.
pub fn run_check(
    config: &CheckConfig,
    options: &Options,
    broker: Option<&CheckedBackend>,
    progress: bool,
) -> (Report, f64) {
    let bar = progress.then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        bar
    });
    let started = Instant::now();
    let update = |counts: Counts| {
        let Some(bar) = &bar else { return };
        let seconds = started.elapsed().as_secs_f64();
        if seconds > 1.0 && bar.is_hidden() {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        let rate = counts.unique as f64 / seconds.max(1e-9);
        let (states, unique) = (counts.generated, counts.unique);
        bar.set_message(format!(
            "{states} states, {unique} unique, {rate:.0} unique/s"
        ));
    };
    let progress = bar.is_some().then_some(&update as Progress<'_>);
    let report = match broker {
        Some(broker) => broker.run(config, options, progress),
        None => check(config, options, progress),
    };
    let seconds = started.elapsed().as_secs_f64();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    (report, seconds)
}

/// Runs the command.
pub fn run(args: Args, context: &crate::cmd::backends::Context) -> CmdResult {
    if let Some(path) = &args.report {
        files::check_report_path("--report", path)?;
    }
    let request = request(&args);
    let mut config = request.config()?;
    let options = request.options()?;
    if let Some(why) = options.unsupported(&config) {
        return Err(user(format!("--engine {}: {why}", options.engine.name())));
    }
    if args.compare_symmetry && config.cyclic() {
        return Err(user(
            "--compare-symmetry: with --renews unbounded the search for fair cycles runs \
             without symmetry reduction, so there is nothing to compare"
                .to_string(),
        ));
    }
    let explore = args.explore.as_deref().map(loopback).transpose()?;
    let broker = args
        .backend
        .as_deref()
        .map(|name| context.checked(name))
        .transpose()?;
    let time_refused = match &broker {
        Some(broker) => broker.unsupported(&config),
        None => leasehold_model::check::time_unsupported::<leasehold_model::Broker>(&config),
    };
    if let Some(why) = time_refused {
        if request.time.is_some() {
            return Err(user(why));
        }
        // The starting configuration's clock, not asked for: the broker is checked untimed,
        // and the coverage names the time cells it could not reach.
        eprintln!("note: {why}: checked untimed instead (the time cells are not covered)");
        config.time = leasehold_model::check::Time::Untimed;
    }
    let command = command(
        "leasehold",
        &config,
        broker.as_ref().map(|b| b.name()),
        &options,
        args.all_violations,
    );
    if let Some(addr) = explore {
        return serve(&config, &options, addr, &command);
    }
    let budget = args
        .for_
        .as_deref()
        .map(leasehold_front::budget::parse_budget)
        .transpose()?;
    // stateright's checker has no interrupt: a memory budget could not stop it.
    let memory = match options.engine {
        Engine::Leasehold => parse_memory_budget(&args.max_memory)?,
        Engine::Stateright => None,
    };
    let progress = crate::cmd::sim::progress::bars_wanted(false);
    let header = header(&command, &config, &options);
    if !args.json {
        println!("{header}");
    }
    let options = Options {
        limits: Limits {
            interrupt: Interrupt::on(Arc::clone(&INTERRUPTED)),
            ..options.limits
        },
        ..options
    };
    catch_interrupts("the search ends as at a bound, then the report", false);
    let ((report, seconds), spent) =
        leasehold_front::budget::within_limits(budget, memory, &INTERRUPTED, || {
            run_check(&config, &options, broker.as_ref(), progress)
        });
    let stopped = report.interrupted.then(|| match (spent, memory) {
        (Some(Spent::Memory), Some(bytes)) => {
            format!("memory budget {} reached", format_bytes(bytes))
        }
        _ => stop_reason(budget),
    });
    let without_symmetry = args.compare_symmetry.then(|| {
        let plain = Options {
            symmetry: false,
            ..options
        };
        run_check(&config, &plain, broker.as_ref(), progress)
            .0
            .counts
    });
    let counterexamples = report
        .counterexamples
        .iter()
        .map(|cx| counterexample_report(&config, broker.as_ref(), cx, &args.out))
        .collect::<Result<Vec<_>, _>>()?;
    let mut printed = Printed::new(command, broker.as_ref(), report, seconds);
    printed.without_symmetry = without_symmetry;
    printed.counterexamples = counterexamples;
    printed.stopped = stopped;
    let json = serde_json::to_string_pretty(&printed).expect("the report serialises");
    if args.json {
        println!("{json}");
    } else {
        print!("{}", text(&printed));
    }
    files::write_report(
        args.report.as_deref(),
        || json,
        || format!("{header}\n{}", text(&printed)),
    )?;
    Ok(Status::held(printed.report.outcome == Outcome::Holds))
}

fn serve(config: &CheckConfig, options: &Options, addr: SocketAddr, command: &str) -> CmdResult {
    // Fail with a one-line error if the port is taken, before stateright would panic.
    std::net::TcpListener::bind(addr)
        .map_err(|e| user(format!("--explore {addr}: cannot listen: {e}")))?;
    println!("{command}");
    println!("serving stateright's Explorer on http://{addr}/ (it checks nothing until \"Run to completion\" is pressed; Ctrl-C stops)");
    let model = LeaseModel::new(config.clone()).with_symmetry(options.symmetry);
    let _ = ExplorerModel(model).checker().serve(addr);
    Ok(Status::Ok)
}
