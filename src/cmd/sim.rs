//! `leasehold sim`: a seeded campaign (or one seed, or one seeded scenario file), or the merge
//! of a sharded campaign's `--json` outputs.
//!
//! This module parses flags and prints; the campaign itself — defaults, validation, the recipe
//! line, the summary and its merge — is the `leasehold_sim` library's. The first line printed
//! is the replay recipe of the whole campaign; each failing invariant's smallest seed is
//! written as a seeded scenario under `scenarios/found/` with the command that replays it.

pub(crate) mod progress;

use crate::cmd::backends::Context;
use crate::files;
use crate::status::{CmdResult, Status, UserError};
use leasehold_front::budget::parse_budget;
use leasehold_front::campaign_report::{self, save_failures};
use leasehold_front::defaults;
use leasehold_front::draw::Drawing;
use leasehold_front::seeded::{
    load_seeded_file, parse_seeds, save_seed, seed_json, seed_text, seeded_setup, SavedSeed,
};
use leasehold_front::sim_flags::TemplateRequest;
use leasehold_front::stream::{self, StdoutTimeline, Story};
use leasehold_sim::drawing;
use leasehold_sim::scenario::Scenario;
use leasehold_sim::seeded::campaign::{Campaign, CampaignReport, THREADS_MAX};
use leasehold_sim::seeded::prng::Draws;
use leasehold_sim::seeded::seeded_file::check_expect;
use leasehold_sim::seeded::summary::{parse_shard, SeedRange, Stopped};
use leasehold_sim::seeded::{BackendKind, Fault, Ratio, RunOptions, RunOutcome, Setup};
use leasehold_sim::timeline::Style;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The modes that take a run's setup from elsewhere (a seeded `--file`; `--merge`, from its
/// shards' recipes): every flag that makes a setup conflicts with them.
const SETUP_FROM_ELSEWHERE: [&str; 2] = ["file", "merge"];

/// Arguments of `leasehold sim` (boxed: they are many).
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The options.
    #[command(flatten)]
    pub options: Box<Options>,
}

/// The options of `leasehold sim`.
///
/// The flags that make a run's setup (variant, sizes, workload bounds, faults) conflict with
/// `--file` and `--merge`, which take the setup from elsewhere: refused rather than ignored.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Protocol variant or mutant (`leasehold protocols`).
    #[arg(long, default_value = "fenced", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub variant: String,
    /// Run this one seed and print its trace hash (with --trace, its trace).
    #[arg(long, conflicts_with_all = ["seeds", "shard", "stop_on_failure"])]
    pub seed: Option<u64>,
    /// Run the seeds A..B (B excluded); `A..` runs on until stopped (by --for, Ctrl-C or
    /// SIGTERM).
    #[arg(long, default_value = "0..100")]
    pub seeds: String,
    /// Run seeds, in order, for at most this long (`90s`, `10m`, `2h30m`): the seeds under way
    /// then finish, no other starts, and the summary names the seeds that ran (their rerun
    /// gives the same hash). Ctrl-C or SIGTERM stops a campaign the same way; a second Ctrl-C
    /// quits at once.
    #[arg(long = "for", value_name = "DURATION", conflicts_with_all = ["seed", "file"])]
    pub for_: Option<String>,
    /// Each seed draws its own subset of the allowed faults and their intensities, and its
    /// workload size (most seeds small, some up to 10,000 events, 4 groups, 8 workers).
    #[arg(long)]
    pub swarm: bool,
    /// Start from a plan with every fault off (then switch some on with the fault flags).
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub no_faults: bool,
    /// Worker crash + restart, per worker action (ratio N/D; 0 turns it off).
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub crash: Option<Ratio>,
    /// Worker pause past the lease, per handler run.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub pause: Option<Ratio>,
    /// Network delay, per message.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub delay: Option<Ratio>,
    /// Network reorder (an extra delay), per message.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub reorder: Option<Ratio>,
    /// Network drop, per message.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub drop: Option<Ratio>,
    /// Network duplicate, per request.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub duplicate: Option<Ratio>,
    /// Partition of a worker from the broker, per worker action.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub partition: Option<Ratio>,
    /// Broker unavailable (fast failure), per request.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub unavailable: Option<Ratio>,
    /// Broker failure reported on a settle (nothing applied; the runtime nacks), per settle.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub failed: Option<Ratio>,
    /// Ambiguous response (applied, reply lost), per settle.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub lost_reply: Option<Ratio>,
    /// Broker restart, per request.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub broker_restart: Option<Ratio>,
    /// Per-worker clock offset and drift, per worker.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub clock_skew: Option<Ratio>,
    /// Slow handler (longer than the lease), per handler run.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub slow_handler: Option<Ratio>,
    /// Handler error, per handler run.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub handler_error: Option<Ratio>,
    /// Requests aimed at their lease's deadline (± 1 ms), per settle or renew.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub boundary: Option<Ratio>,
    /// Longest crash downtime, ms (default: three leases).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub crash_downtime_ms_max: Option<u64>,
    /// Longest worker pause, ms (default: three leases; a pause lasts at least a lease).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub pause_ms_max: Option<u64>,
    /// Longest network delay, ms (default: a fifth of a lease).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub delay_ms_max: Option<u64>,
    /// Longest extra delay of a reordered message, ms (default: half a lease).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub reorder_ms_max: Option<u64>,
    /// Longest partition, ms (default: three leases).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub partition_ms_max: Option<u64>,
    /// Largest worker clock offset either way, ms (default: a lease and a half).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub clock_offset_ms_max: Option<u64>,
    /// Largest worker clock drift either way, parts per million (default: 50,000).
    #[arg(long, value_name = "PPM", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub clock_drift_ppm_max: Option<u64>,
    /// Longest slow handler, ms (default: three leases; a slow handler runs at least a lease).
    #[arg(long, value_name = "MS", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub slow_handler_ms_max: Option<u64>,
    /// Events published at time 0.
    #[arg(long, default_value_t = defaults::SIM_EVENTS, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub events: u32,
    /// Consumer groups.
    #[arg(long, default_value_t = defaults::SIM_GROUPS, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub groups: u32,
    /// Workers.
    #[arg(long, default_value_t = defaults::SIM_WORKERS, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub workers: u32,
    /// Ack policy: nack_on_error, ack_always, ack_first, manual.
    #[arg(long, default_value = "nack_on_error", conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub policy: String,
    /// Deliveries per (group, event) before dead-lettering.
    #[arg(long, default_value_t = defaults::SIM_MAX_ATTEMPTS, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub max_attempts: u32,
    /// Lease duration (Redis variants: the claim idle time).
    #[arg(long, default_value_t = defaults::SIM_LEASE_MS, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub lease_ms: u64,
    /// Bound on the safety (faulty) phase, simulated ms (default: sixty leases, or two per
    /// record a worker handles when more).
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub safety_ms_max: Option<u64>,
    /// Bound on steps per run (default: a million, or twenty per delivery when more); a seed
    /// that reaches it is inconclusive.
    #[arg(long, conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub steps_max: Option<u64>,
    /// When the broker expires leases: `at_deadline`, `on_fetch` (lazily, as Redis claims), or
    /// `mixed` (each seed draws one).
    #[arg(long, default_value = defaults::SIM_EXPIRY, value_parser = ["mixed", "at_deadline", "on_fetch"], conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub expiry: String,
    /// How random words become numbers in a range: `uniform` (rand's `Uniform`), or
    /// `gen_range` (rand's `gen_range`: the seeded files written before `draws` existed).
    #[arg(long, default_value = "uniform", value_parser = Draws::ALL.map(Draws::name), conflicts_with_all = SETUP_FROM_ELSEWHERE)]
    pub draws: String,
    /// Threads (the results do not depend on it), at most 256; by default, one per core.
    #[arg(long, default_value_t = defaults::sim_threads())]
    pub threads: usize,
    /// Run only shard k of n (1-based): the seeds whose index is k-1 modulo n.
    #[arg(long, default_value = "1/1")]
    pub shard: String,
    /// The broker: `pure` (the state machine), `embedded` (the thread-safe in-process
    /// broker; fenced only), `redis` (a Redis server; the redis-streams variants),
    /// `postgres` (a PostgreSQL server; pg-visibility, pg-fenced), `jetstream` (a nats-server
    /// with JetStream; jetstream), `rabbitmq` (a RabbitMQ server; rabbitmq,
    /// rabbitmq-channel), or one a suite registered (`cli::main_with`).
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The backend's server (`--url URL`, `--spawn`).
    #[command(flatten)]
    pub server: crate::cmd::backends::ServerArgs,
    /// Stop at the smallest failing seed (the seeds-to-first-failure measure).
    #[arg(long)]
    pub stop_on_failure: bool,
    /// Run a seeded scenario file instead of flags (the file gives the variant, the
    /// configuration, the workload and the faults: the flags that set them are refused).
    #[arg(
        long,
        conflicts_with_all = ["seed", "seeds", "swarm", "shard", "stop_on_failure"]
    )]
    pub file: Option<PathBuf>,
    /// Merge the `--json` outputs of the shards 1/n … n/n of one campaign into the summary of
    /// the whole campaign (the shards' recipes give their setup: the flags that set one are
    /// refused).
    #[arg(
        long,
        num_args = 1..,
        value_name = "FILES",
        conflicts_with_all = [
            "seed", "file", "seeds", "swarm", "shard", "stop_on_failure", "backend",
            "trace", "svg", "url", "spawn",
            "for_",
        ]
    )]
    pub merge: Vec<PathBuf>,
    /// With --seed or --file: print the trace.
    #[arg(long)]
    pub trace: bool,
    /// With --seed or --file: also draw the run's timeline as SVG into this file (atomically):
    /// the 40 lines up to its first violation (or its last 40), unless `--lines` asks for
    /// others; what `leasehold timeline FILE --svg OUT` draws of a saved seed.
    #[arg(long, value_name = "OUT", conflicts_with = "json")]
    pub svg: Option<PathBuf>,
    /// With --svg: draw the lines tA..tB (B excluded; `40..100` or `t40..t100`).
    #[arg(long, value_name = "A..B", requires = "svg", value_parser = drawing::parse_lines)]
    pub lines: Option<std::ops::Range<usize>>,
    /// Where failing seeds are written.
    #[arg(long, default_value = "scenarios/found")]
    pub out: PathBuf,
    /// Do not write failing seeds.
    #[arg(long)]
    pub no_save: bool,
    /// With --seed: write the seed's scenario file (under --out) whatever its verdict, a clean
    /// one expecting every invariant to hold: a schedule to keep, replay and snapshot.
    #[arg(long, requires = "seed", conflicts_with = "no_save")]
    pub save: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Also write the summary to this file: as JSON when its name ends in `.json` (what
    /// `--json` prints), else the text printed.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args, context: &Context) -> CmdResult {
    let args = *args.options;
    if let Some(path) = &args.report {
        files::check_report_path("--report", path)?;
    }
    if !args.merge.is_empty() {
        return run_merge(&args);
    }
    let backend = context.select(&args.backend, &args.server)?;
    if args.threads == 0 || args.threads > THREADS_MAX {
        return Err(UserError(format!(
            "--threads: {} is not between 1 and {THREADS_MAX}",
            args.threads
        )));
    }
    if args.trace && args.seed.is_none() && args.file.is_none() {
        return Err(UserError(
            "--trace: a single seed's timeline, with --seed or --file (a campaign prints the \
             story of its first failing seed)"
                .to_string(),
        ));
    }
    if let Some(out) = &args.svg {
        if args.seed.is_none() && args.file.is_none() {
            return Err(UserError(
                "--svg: a single seed's drawing, with --seed or --file (draw a campaign's \
                 failing seed from the file it writes: leasehold timeline FILE --svg OUT)"
                    .to_string(),
            ));
        }
        if files::is_stdout(out) {
            return Err(UserError(format!(
                "--svg {}: sim prints its report on standard output; draw into a file, or draw \
                 the seed's saved file alone with leasehold timeline FILE --svg -",
                out.display()
            )));
        }
        files::check_report_path("--svg", out)?;
    }
    if let Some(path) = &args.file {
        return run_file(&args, path, &backend);
    }
    let (template, pinned) = template_request(&args).template()?;
    backend.check(&template).map_err(UserError)?;
    let mut campaign = Campaign::new(template, 0..1);
    campaign.swarm = args.swarm;
    campaign.expiry_mixed = args.expiry == "mixed";
    campaign.threads = args.threads;
    campaign.backend = backend;
    campaign.stop_on_failure = args.stop_on_failure;
    campaign.pinned = pinned;
    campaign
        .largest_setup()
        .validate()
        .map_err(|e| UserError(e.for_flags()))?;
    if let Some(seed) = args.seed {
        return run_one(&args, &campaign, seed);
    }
    campaign.seeds = parse_seeds(&args.seeds)?;
    let budget = args.for_.as_deref().map(parse_budget).transpose()?;
    campaign.shard = parse_shard(&args.shard).map_err(|e| UserError(format!("--shard: {e}")))?;
    run_campaign(&args, &campaign, budget)
}

/// The run template the flags name, for the library to build and validate.
fn template_request(args: &Options) -> TemplateRequest {
    let faults = [
        (Fault::Crash, args.crash),
        (Fault::Pause, args.pause),
        (Fault::Delay, args.delay),
        (Fault::Reorder, args.reorder),
        (Fault::Drop, args.drop),
        (Fault::Duplicate, args.duplicate),
        (Fault::Partition, args.partition),
        (Fault::Unavailable, args.unavailable),
        (Fault::Failed, args.failed),
        (Fault::LostReply, args.lost_reply),
        (Fault::BrokerRestart, args.broker_restart),
        (Fault::ClockSkew, args.clock_skew),
        (Fault::SlowHandler, args.slow_handler),
        (Fault::HandlerError, args.handler_error),
        (Fault::Boundary, args.boundary),
    ];
    TemplateRequest {
        variant: args.variant.clone(),
        policy: args.policy.clone(),
        events: args.events,
        groups: args.groups,
        workers: args.workers,
        max_attempts: args.max_attempts,
        lease_ms: args.lease_ms,
        no_faults: args.no_faults,
        faults: faults
            .into_iter()
            .filter_map(|(f, r)| Some((f, r?)))
            .collect(),
        // In the order of `FaultPlan::MAGNITUDES`.
        magnitudes: [
            args.crash_downtime_ms_max,
            args.pause_ms_max,
            args.delay_ms_max,
            args.reorder_ms_max,
            args.partition_ms_max,
            args.clock_offset_ms_max,
            args.clock_drift_ppm_max,
            args.slow_handler_ms_max,
        ],
        expiry: args.expiry.clone(),
        draws: args.draws.clone(),
        safety_ms_max: args.safety_ms_max,
        steps_max: args.steps_max,
    }
}

fn run_one(args: &Options, campaign: &Campaign, seed: u64) -> CmdResult {
    let setup = campaign.setup(seed);
    let swarm_flag = if args.swarm { " (swarm)" } else { "" };
    let header = campaign.seed_command(seed);
    if !args.json {
        println!("{header}");
        println!("faults{swarm_flag}: {}", setup.faults.summary());
    }
    let started = Instant::now();
    let story = single_seed_story(args);
    let outcome = progress::run_one_seed(&setup, &campaign.backend, &story);
    let wall = started.elapsed();
    // Written before the report, which names it (in `--json` too).
    let broken = outcome.violations.first().map(|v| v.invariant);
    let saved = if args.save || (broken.is_some() && !args.no_save) {
        Some(save_seed(&args.out, &setup, broken, &campaign.backend)?)
    } else {
        None
    };
    let status = report_one(args, &header, &setup, &outcome, wall, saved.as_ref())?;
    if let Some(out) = &args.svg {
        let title = format!("sim {} seed {seed}", setup.variant.name());
        draw_seed(args, &setup, &campaign.backend, &title, &header, "", out)?;
    }
    Ok(status)
}

/// Draws a single seed's run (`--svg OUT`, lines `--lines`), as `timeline FILE --svg` draws a
/// saved seed. The run is deterministic: the drawing's runs are the one reported.
fn draw_seed(
    args: &Options,
    setup: &Setup,
    backend: &BackendKind,
    title: &str,
    header: &str,
    from: &str,
    out: &Path,
) -> Result<(), UserError> {
    let drawn = progress::draw_seeded(setup, backend, args.lines.clone())
        .map_err(|e| UserError(format!("--{e}")))?;
    let recorded = drawn.outcome.recorded.expect("a recorded run");
    let drawing = Drawing {
        trace: &recorded.trace,
        stretch: drawn.stretch.as_ref(),
        title,
        subtitle: format!(
            "variant {} · ack_policy {} · seed {}{from}",
            setup.variant.name(),
            setup.policy.name(),
            setup.seed
        ),
        command: format!("{header} --svg {}", out.display()),
        lines: args.lines.clone(),
    };
    for line in drawing.write(out)? {
        println!("{line}");
    }
    Ok(())
}

fn run_file(args: &Options, path: &Path, backend: &BackendKind) -> CmdResult {
    let (scenario, setup) = load_seeded_file(path)?;
    backend
        .check(&setup)
        .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    let header = format!(
        "leasehold sim --file {}{}",
        path.display(),
        backend.flags_named()
    );
    if !args.json {
        println!("{header}");
        println!("faults: {}", setup.faults.summary());
    }
    let started = Instant::now();
    let story = single_seed_story(args);
    let outcome = progress::run_one_seed(&setup, backend, &story);
    let wall = started.elapsed();
    report_one(args, &header, &setup, &outcome, wall, None)?;
    if let Some(out) = &args.svg {
        let from = format!(" · {}", path.display());
        draw_seed(args, &setup, backend, &scenario.name, &header, &from, out)?;
    }
    // A file's [expect] decides the status, as for `replay`.
    let mismatches = check_expect(&scenario, &outcome);
    if !args.json {
        for mismatch in &mismatches {
            println!("mismatch: {mismatch}");
        }
    }
    Ok(Status::held(mismatches.is_empty()))
}

/// A single seed's timeline (`--trace`) streams to standard output as the run goes (`--json`
/// prints no timeline).
fn single_seed_story(args: &Options) -> Story {
    if args.trace && !args.json {
        Story::Streamed(StdoutTimeline::new())
    } else {
        Story::None
    }
}

fn report_one(
    args: &Options,
    header: &str,
    setup: &Setup,
    outcome: &RunOutcome,
    wall: Duration,
    saved: Option<&SavedSeed>,
) -> CmdResult {
    let status = Status::held(outcome.violations.is_empty());
    let json = || {
        let value = seed_json(header, setup, outcome, wall, saved);
        serde_json::to_string_pretty(&value).expect("json")
    };
    let text = seed_text(setup, outcome, wall, saved);
    if args.json {
        println!("{}", json());
    } else {
        if let Some(trace) = &outcome.trace {
            print!("{trace}");
        }
        print!("{text}");
    }
    files::write_report(args.report.as_deref(), json, || {
        let faults = format!("faults: {}", setup.faults.summary());
        format!("{header}\n{faults}\n{text}")
    })?;
    Ok(status)
}

fn run_campaign(args: &Options, campaign: &Campaign, budget: Option<Duration>) -> CmdResult {
    let header = campaign.command();
    if !args.json {
        println!("{header}");
        let kind = if campaign.swarm {
            "faults (swarm draws from)"
        } else {
            "faults"
        };
        println!("{kind}: {}", campaign.template.faults.summary());
    }
    let started = Instant::now();
    let stopped = progress::run_campaign(campaign, budget);
    let wall = started.elapsed();
    // A stopped campaign is reported as the campaign of the seeds it ran.
    let ran = if stopped.reason.is_some() {
        campaign.first(stopped.ran.done)
    } else {
        campaign.clone()
    };
    let summary = stopped.ran.summary;
    let saved = if args.no_save {
        Vec::new()
    } else {
        save_failures(&args.out, &ran, &summary)?
    };
    let mut report = ran.report(summary, wall.as_millis() as u64, saved);
    report.stopped = stopped.reason.map(|reason| Stopped {
        reason,
        asked: SeedRange::from(&campaign.seeds),
    });
    print_report(args, &ran, &report)?;
    Ok(Status::held(report.summary.seeds_failed == 0))
}

fn print_report(args: &Options, campaign: &Campaign, report: &CampaignReport) -> CmdResult {
    let text = campaign_report::report_text(campaign, report);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).expect("a report serialises")
        );
    } else {
        print!("{text}");
    }
    let json = || serde_json::to_string_pretty(report).expect("a report serialises");
    files::write_report(args.report.as_deref(), json, || {
        format!("{}\n{text}", report.command)
    })?;
    Ok(Status::Ok)
}

fn run_merge(args: &Options) -> CmdResult {
    let (merged, shards) = campaign_report::merge(&args.merge)?;
    let json = || serde_json::to_string_pretty(&merged).expect("a report serialises");
    let text = campaign_report::merged_text(&merged, shards);
    if args.json {
        println!("{}", json());
    } else {
        print!("{text}");
    }
    files::write_report(args.report.as_deref(), json, || text)?;
    Ok(Status::held(merged.summary.seeds_failed == 0))
}

/// The seeded half of `leasehold replay FILE`: when `path` holds a seeded scenario (`seed = N`,
/// no steps), runs it on `backend`, prints the replay recipe, the timeline (in `style`), the
/// violations and the trace hash (or one JSON object), and returns the status ("did the run
/// match the file's `[expect]`?"); `Ok(None)` for a scripted scenario.
pub fn replay_if_seeded(
    path: &Path,
    json: bool,
    backend: &BackendKind,
    style: Style,
) -> Result<Option<Status>, UserError> {
    // The replay streams to standard output: a bar on standard error when that is not the
    // same terminal, one per run.
    let bars = progress::bars_wanted(true);
    let run = |setup: &Setup, kind: &BackendKind, options: RunOptions, pass: &str| {
        progress::run_with_bar(setup, kind, options, bars, pass)
    };
    let matched = if json {
        stream::replay_seeded_json(path, backend, style, &run)?
    } else {
        stream::replay_seeded_text(path, backend, style, &run)?
    };
    Ok(matched.map(Status::held))
}

/// When `path` holds a seeded scenario (`seed = N`, no steps): the file and its run on
/// `backend`, its timeline told as `story` says. `Ok(None)` for a scripted scenario.
pub fn record_if_seeded(
    path: &Path,
    backend: &BackendKind,
    story: &Story,
    style: Style,
) -> Result<Option<(Scenario, leasehold_sim::seeded::RunOutcome)>, UserError> {
    let Some((scenario, setup, kind)) = seeded_setup(path, backend)? else {
        return Ok(None);
    };
    let outcome = progress::run_one_seed_styled(&setup, &kind, story, style);
    Ok(Some((scenario, outcome)))
}
