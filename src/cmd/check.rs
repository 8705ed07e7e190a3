//! `leasehold check`: exhaustive model checking of a bounded configuration (SPEC section 4).
//!
//! The proof is stateright's search (depth-first with symmetry reduction over workers by
//! default). When it finds a violation, our own breadth-first search finds the shortest
//! counterexample, which is printed as a timeline and written as a scenario file.

mod scenario;

pub use scenario::scenario;

use crate::cli::{CmdResult, Status, UserError};
use crate::files;
use leasehold_model::check::{
    shortest_counterexamples, trace, Budgets, CheckConfig, Counterexample, LeaseModel,
    REACHABILITY, SAFETY,
};
use leasehold_model::{AckPolicy, Invariant, Variant};
use serde::Serialize;
use stateright::{Checker, Model};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The default bound on generated states: about 30 B per unique state in stateright's
/// fingerprint set plus the search stack keeps a depth-first run under ~10 GiB on a 24 GiB
/// machine.
pub const STATES_MAX_DEFAULT: usize = 300_000_000;

/// The bound on the shortest-counterexample search (breadth-first, without symmetry: it keeps
/// whole states of a level and a parent pointer per state, so it gets a smaller bound).
pub const COUNTEREXAMPLE_STATES_MAX: usize = 5_000_000;

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
    /// Worker crash/restart cycles.
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
    /// Renew requests.
    #[arg(long)]
    pub renews: Option<u8>,
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Breadth-first search.
    #[arg(long, conflicts_with = "dfs")]
    pub bfs: bool,
    /// Depth-first search (the default).
    #[arg(long)]
    pub dfs: bool,
    /// Turn symmetry reduction over workers off.
    #[arg(long)]
    pub no_symmetry: bool,
    /// Also run without symmetry reduction and report both state counts.
    #[arg(long)]
    pub compare_symmetry: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Serve stateright's Explorer on this loopback address (e.g. 127.0.0.1:3000).
    #[arg(long)]
    pub explore: Option<String>,
    /// Stop with "bounded" after about this many generated states.
    #[arg(long, default_value_t = STATES_MAX_DEFAULT)]
    pub max_states: usize,
    /// Where counterexample scenarios are written.
    #[arg(long, default_value = "scenarios/found")]
    pub out: PathBuf,
}

/// The configuration the arguments ask for: the variant's defaults, overridden by flags.
pub fn config(args: &Args) -> Result<CheckConfig, UserError> {
    let variant = Variant::from_name(&args.variant).ok_or_else(|| {
        UserError(format!(
            "--variant: unknown variant '{}'; valid: {}",
            args.variant,
            Variant::names()
        ))
    })?;
    let mut config = CheckConfig::default_for(variant);
    if let Some(policy) = &args.policy {
        config.policy = AckPolicy::from_name(policy).ok_or_else(|| {
            let names: Vec<_> = AckPolicy::ALL.iter().map(|p| p.name()).collect();
            UserError(format!(
                "--policy: unknown policy '{policy}'; valid: {}",
                names.join(", ")
            ))
        })?;
    }
    config.group_count = args.groups.map_or(config.group_count, |g| g as usize);
    config.event_count = args.events.unwrap_or(config.event_count);
    config.worker_count = args.workers.map_or(config.worker_count, |w| w as usize);
    config.max_attempts = args.max_attempts.unwrap_or(config.max_attempts);
    let b = config.budgets;
    config.budgets = Budgets {
        crashes: args.crashes.unwrap_or(b.crashes),
        drops: args.drops.unwrap_or(b.drops),
        dups: args.dups.unwrap_or(b.dups),
        lost_replies: args.lost_replies.unwrap_or(b.lost_replies),
        broker_restarts: args.broker_restarts.unwrap_or(b.broker_restarts),
        renews: args.renews.unwrap_or(b.renews),
    };
    config.validate()?;
    Ok(config)
}

/// A loopback socket address, or a one-line error.
pub fn loopback(addr: &str) -> Result<SocketAddr, UserError> {
    let parsed: SocketAddr = addr.parse().map_err(|_| {
        UserError(format!(
            "--explore {addr}: not an address (expected e.g. 127.0.0.1:3000)"
        ))
    })?;
    if !parsed.ip().is_loopback() {
        return Err(UserError(format!(
            "--explore {addr}: the Explorer is served on loopback only (127.0.0.1 or [::1])"
        )));
    }
    Ok(parsed)
}

/// The verdict on one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No reachable state breaks it (the search was exhaustive).
    Holds,
    /// A reachable state breaks it.
    Violated,
    /// A reachable state has it (`sometimes`).
    Reached,
    /// No reachable state has it (the search was exhaustive).
    NotReached,
    /// The search was cut short before finding it: nothing is proven.
    Bounded,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Reached => "reached",
            Verdict::NotReached => "not reached",
            Verdict::Bounded => "bounded",
        }
    }
}

/// Counts and timing of one stateright run.
#[derive(Clone, Debug, Serialize)]
pub struct RunStats {
    /// `dfs` or `bfs`.
    pub search: &'static str,
    /// Whether symmetry reduction was on.
    pub symmetry: bool,
    /// Threads.
    pub threads: usize,
    /// States generated (successors computed, duplicates included).
    pub states_generated: usize,
    /// Unique states (up to symmetry when it is on).
    pub unique_states: usize,
    /// Longest path explored.
    pub max_depth: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// `Some(max_states)` when the search stopped at the state bound.
    pub bounded: Option<usize>,
    /// Names of the properties stateright found a discovery for.
    #[serde(skip)]
    pub discovered: Vec<&'static str>,
}

impl RunStats {
    /// Unique states per second.
    pub fn unique_per_second(&self) -> f64 {
        self.unique_states as f64 / self.seconds.max(1e-9)
    }

    /// The probability estimate of a fingerprint collision among the unique states: n²/2⁶⁵.
    pub fn collision_estimate(&self) -> f64 {
        let n = self.unique_states as f64;
        n * n / 2f64.powi(65)
    }
}

/// One property's line in the report.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyReport {
    /// `always` or `sometimes`.
    pub kind: &'static str,
    /// The property's name (`I1 stale-never-counts`, …).
    pub name: &'static str,
    /// The verdict.
    pub verdict: Verdict,
}

/// One counterexample in the report.
#[derive(Clone, Debug, Serialize)]
pub struct CounterexampleReport {
    /// `I1` …
    pub invariant: &'static str,
    /// The invariant's name.
    pub name: &'static str,
    /// Number of model steps (minimal: breadth-first).
    pub steps: usize,
    /// The timeline text.
    pub timeline: String,
    /// Where the scenario was written.
    pub scenario: Option<String>,
}

/// The whole report of a check.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The replay recipe: `leasehold check --variant … …`.
    pub command: String,
    /// The configuration.
    pub config: CheckConfig,
    /// The main run.
    pub run: RunStats,
    /// The run without symmetry, when asked for.
    pub without_symmetry: Option<RunStats>,
    /// The fingerprint-collision estimate (n²/2⁶⁵).
    pub collision_estimate: f64,
    /// Per property.
    pub properties: Vec<PropertyReport>,
    /// Shortest counterexamples, one per violated invariant.
    pub counterexamples: Vec<CounterexampleReport>,
    /// `Some(bound)` when the shortest-counterexample search stopped before finding a path
    /// for every violated invariant.
    pub counterexample_search_bounded: Option<usize>,
    /// `holds`, `violated`, `bounded` or `vacuous` (a `sometimes` property not reached).
    pub outcome: &'static str,
}

fn drive<C: Checker<LeaseModel>>(
    checker: C,
    started: Instant,
    progress: bool,
) -> (C, Vec<&'static str>) {
    let spinner = progress.then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        bar
    });
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(bar) = &spinner {
            let seconds = started.elapsed().as_secs_f64();
            if seconds > 1.0 && bar.is_hidden() {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.enable_steady_tick(Duration::from_millis(120));
            }
            bar.set_message(format!(
                "{} states, {} unique, {:.0} unique/s",
                checker.state_count(),
                checker.unique_state_count(),
                checker.unique_state_count() as f64 / seconds.max(1e-9)
            ));
        }
    }
    if let Some(bar) = spinner {
        bar.finish_and_clear();
    }
    let checker = checker.join();
    let names = checker
        .model()
        .properties()
        .iter()
        .map(|p| p.name)
        .filter(|name| checker.discovery(name).is_some())
        .collect();
    (checker, names)
}

/// Runs stateright on `config`.
pub fn run_stateright(
    config: &CheckConfig,
    bfs: bool,
    symmetry: bool,
    threads: usize,
    max_states: usize,
    progress: bool,
) -> RunStats {
    let model = LeaseModel::new(config.clone()).with_symmetry(symmetry);
    let builder = model
        .checker()
        .threads(threads.max(1))
        .target_state_count(max_states);
    let started = Instant::now();
    let (states_generated, unique_states, max_depth, discovered) = if bfs {
        let (c, d) = drive(builder.spawn_bfs(), started, progress);
        (c.state_count(), c.unique_state_count(), c.max_depth(), d)
    } else {
        let (c, d) = drive(builder.spawn_dfs(), started, progress);
        (c.state_count(), c.unique_state_count(), c.max_depth(), d)
    };
    RunStats {
        search: if bfs { "bfs" } else { "dfs" },
        symmetry,
        threads: threads.max(1),
        states_generated,
        unique_states,
        max_depth,
        seconds: started.elapsed().as_secs_f64(),
        bounded: (states_generated >= max_states).then_some(max_states),
        discovered,
    }
}

/// The verdict on each property from a run's discoveries.
pub fn verdicts(run: &RunStats) -> Vec<PropertyReport> {
    let found = |name: &str| run.discovered.contains(&name);
    let mut out = Vec::new();
    for (_, name) in SAFETY {
        let verdict = match (found(name), run.bounded) {
            (true, _) => Verdict::Violated,
            (false, Some(_)) => Verdict::Bounded,
            (false, None) => Verdict::Holds,
        };
        out.push(PropertyReport {
            kind: "always",
            name,
            verdict,
        });
    }
    for name in REACHABILITY {
        let verdict = match (found(name), run.bounded) {
            (true, _) => Verdict::Reached,
            (false, Some(_)) => Verdict::Bounded,
            (false, None) => Verdict::NotReached,
        };
        out.push(PropertyReport {
            kind: "sometimes",
            name,
            verdict,
        });
    }
    out
}

/// Runs the command.
pub fn run(args: Args) -> CmdResult {
    let config = config(&args)?;
    let explore = args.explore.as_deref().map(loopback).transpose()?;
    if args.threads == 0 || args.threads > 64 {
        return Err(UserError(format!(
            "--threads {}: must be between 1 and 64",
            args.threads
        )));
    }
    let command = format!("leasehold check {config}");
    if let Some(addr) = explore {
        // Fail with a one-line error if the port is taken, before stateright would panic.
        std::net::TcpListener::bind(addr)
            .map_err(|e| UserError(format!("--explore {addr}: cannot listen: {e}")))?;
        println!("{command}");
        println!("serving stateright's Explorer on http://{addr}/ (it checks nothing until \"Run to completion\" is pressed; Ctrl-C stops)");
        let _ = LeaseModel::new(config)
            .with_symmetry(!args.no_symmetry)
            .checker()
            .serve(addr);
        return Ok(Status::Ok);
    }
    let symmetry = !args.no_symmetry;
    let progress = std::io::stderr().is_terminal() && !args.json;
    if !args.json {
        println!(
            "{command}  ({}, symmetry {}, {} thread{}, max-states {})",
            if args.bfs { "bfs" } else { "dfs" },
            if symmetry { "on" } else { "off" },
            args.threads,
            if args.threads == 1 { "" } else { "s" },
            args.max_states
        );
        if !config.policy.at_least_once() {
            println!(
                "note: {} is at most once by design: events may be acked without being processed (the policy's documented guarantee, not a protocol bug)",
                config.policy
            );
        }
    }
    let run = run_stateright(
        &config,
        args.bfs,
        symmetry,
        args.threads as usize,
        args.max_states,
        progress,
    );
    let without_symmetry = (args.compare_symmetry && symmetry).then(|| {
        run_stateright(
            &config,
            false,
            false,
            args.threads as usize,
            args.max_states,
            progress,
        )
    });
    let properties = verdicts(&run);
    let violated: Vec<Invariant> = SAFETY
        .iter()
        .filter(|(_, name)| run.discovered.contains(name))
        .map(|(inv, _)| *inv)
        .collect();
    let model = LeaseModel::new(config.clone());
    let mut counterexamples = Vec::new();
    let mut counterexample_search_bounded = None;
    if !violated.is_empty() {
        let bound = args.max_states.min(COUNTEREXAMPLE_STATES_MAX);
        let search = shortest_counterexamples(&model, &violated, bound);
        for cx in &search.found {
            counterexamples.push(counterexample(&model, cx, &args)?);
        }
        counterexample_search_bounded = search.bounded;
    }
    let vacuous = properties.iter().any(|p| p.verdict == Verdict::NotReached);
    let outcome = if !violated.is_empty() {
        "violated"
    } else if run.bounded.is_some() {
        "bounded"
    } else if vacuous {
        "vacuous"
    } else {
        "holds"
    };
    let report = Report {
        command,
        collision_estimate: run.collision_estimate(),
        config,
        run,
        without_symmetry,
        properties,
        counterexamples,
        counterexample_search_bounded,
        outcome,
    };
    let json = serde_json::to_string_pretty(&report).expect("the report serialises");
    if let Some(path) = &args.report {
        files::write_atomic(path, format!("{json}\n").as_bytes())?;
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", text(&report));
    }
    Ok(if outcome == "holds" {
        Status::Ok
    } else {
        Status::Failed
    })
}

fn counterexample(
    model: &LeaseModel,
    cx: &Counterexample,
    args: &Args,
) -> Result<CounterexampleReport, UserError> {
    let scenario = scenario(model, cx);
    let body = toml::to_string(&scenario)
        .map_err(|e| UserError(format!("cannot serialise the scenario: {e}")))?;
    let stem = format!("{}-{}", model.config().variant, cx.invariant.id());
    let path = files::write_new(&args.out, &stem, "toml", body.as_bytes())?;
    Ok(CounterexampleReport {
        invariant: cx.invariant.id(),
        name: cx.invariant.name(),
        steps: cx.len(),
        timeline: trace::timeline(model, cx),
        scenario: Some(path.display().to_string()),
    })
}

fn stats_line(run: &RunStats) -> String {
    format!(
        "{} states generated, {} unique states, max depth {}, {:.2} s, {:.0} unique states/s ({}, symmetry {}, {} thread{})",
        run.states_generated,
        run.unique_states,
        run.max_depth,
        run.seconds,
        run.unique_per_second(),
        run.search,
        if run.symmetry { "on" } else { "off" },
        run.threads,
        if run.threads == 1 { "" } else { "s" },
    )
}

/// The text report.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&stats_line(&report.run));
    out.push('\n');
    if let Some(other) = &report.without_symmetry {
        out.push_str(&format!("without symmetry: {}\n", stats_line(other)));
    }
    out.push_str(&format!(
        "fingerprint collision estimate: {:.1e} (n²/2^65 for {} unique states)\n",
        report.collision_estimate, report.run.unique_states
    ));
    if let Some(bound) = report.run.bounded {
        out.push_str(&format!(
            "bounded: the search stopped at --max-states {bound}; properties not violated are NOT proven\n"
        ));
    }
    for p in &report.properties {
        out.push_str(&format!(
            "  {:<9} {:<44} {}\n",
            p.kind,
            p.name,
            p.verdict.text()
        ));
    }
    for cx in &report.counterexamples {
        out.push_str(&format!(
            "\nshortest counterexample for {} {} ({} steps):\n{}",
            cx.invariant, cx.name, cx.steps, cx.timeline
        ));
        if let Some(path) = &cx.scenario {
            out.push_str(&format!(
                "scenario written to {path} (replay: leasehold replay {path})\n"
            ));
        }
    }
    if let Some(bound) = report.counterexample_search_bounded {
        out.push_str(&format!(
            "\nthe shortest-counterexample search stopped at {bound} states before finding a path for every violated invariant\n"
        ));
    }
    out.push_str(&match report.outcome {
        "holds" => {
            "result: every invariant holds and every sometimes property is reached\n".to_string()
        }
        "violated" => {
            let names: Vec<&str> = report
                .properties
                .iter()
                .filter(|p| p.verdict == Verdict::Violated)
                .map(|p| p.name)
                .collect();
            format!(
                "result: VIOLATED {}\nreproduce: {}\n",
                names.join(", "),
                report.command
            )
        }
        "bounded" => "result: bounded (not proven)\n".to_string(),
        _ => "result: vacuous: a sometimes property was not reached\n".to_string(),
    });
    out
}
