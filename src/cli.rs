//! The argument grammar and the exit statuses (docs/cli.md).

use crate::cmd::backends::Context;
use crate::status::panic_message;
pub use crate::status::{CmdResult, Status, UserError, EXIT_OUTPUT_CLOSED};
use clap::{Parser, Subcommand};
use leasehold_front::CheckedBackend;
use leasehold_sim::seeded::BackendKind;
use std::process::ExitCode;

/// Deterministic simulation and model checking for lease/ACK message-queue protocols.
#[derive(Parser, Debug)]
#[command(name = "leasehold", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Model-check a variant and configuration exhaustively (by default leasehold's own
    /// explicit-state search; `--engine stateright` cross-checks with stateright's checker,
    /// `--explore` serves stateright's Explorer).
    Check(crate::cmd::check::Args),
    /// Run a seeded simulation campaign.
    Sim(crate::cmd::sim::Args),
    /// Re-run a scenario file, print its timeline and check its `[expect]`.
    Replay(crate::cmd::replay::Args),
    /// Minimise a failing scenario while it still fails the same invariant.
    Shrink(crate::cmd::shrink::Args),
    /// Print (or draw as SVG) a scenario's timeline.
    Timeline(crate::cmd::timeline::Args),
    /// List the protocol variants and mutants.
    Protocols(crate::cmd::protocols::Args),
    /// Run every variant through both engines and write the verdict matrix.
    Report(crate::cmd::report::Args),
}

/// Prints help or version as clap does (exit 0), and any usage error as one line (exit 2).
pub fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = error.print();
            Status::Ok.into()
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // No command: one line naming them, as any other usage error.
            let commands: Vec<String> = <Cli as clap::CommandFactory>::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .filter(|name| name != "help")
                .collect();
            eprintln!(
                "leasehold: error: a command is needed: one of {} (see 'leasehold --help')",
                commands.join(", ")
            );
            Status::BadInput.into()
        }
        _ => {
            let text = error.to_string();
            let first = first_paragraph(&text);
            let first = if first.is_empty() {
                "bad usage"
            } else {
                &first
            };
            let first = first.trim_start_matches("error: ");
            eprintln!("leasehold: error: {first} (see 'leasehold --help')");
            Status::BadInput.into()
        }
    }
}

/// The first paragraph of clap's message, its lines joined by spaces: a missing argument's
/// name is on the line after the sentence that announces it.
fn first_paragraph(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A closed standard output or error (the reader went away: `| head`, `| grep -q`) ends the
/// command quietly with [`EXIT_OUTPUT_CLOSED`], as it ends any Unix tool, not with a panic's
/// report: printing to a closed pipe panics with std's "failed printing to" message. The
/// selected backends' resources (private Redis servers) are released first. Other panics keep
/// the report they had.
fn closed_output_ends_quietly(context: Context) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = panic_message(info).unwrap_or_default();
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            context.shutdown();
            std::process::exit(i32::from(EXIT_OUTPUT_CLOSED));
        }
        previous(info);
    }));
}

/// The `leasehold` command line: parses the process's arguments, runs the command, returns
/// its exit status. `backends` are registered beside the stock ones (`pure`, `embedded`,
/// `redis`, `postgres`) for `--backend NAME` of every command, so a suite's own binary — `fn main() ->
/// ExitCode { leasehold::cli::main_with(&[my_queue()]) }` — runs the commands its failing
/// tests print, on its own backend.
pub fn main_with(backends: &[BackendKind]) -> ExitCode {
    run_with(Context::new(backends, &[]))
}

/// [`main_with`] for brokers the model checker can explore too ([`leasehold_front::CheckedBroker`],
/// registered with [`leasehold_front::checked_backend`]): `check --backend NAME` checks them,
/// and every other command runs them as `--backend NAME` — `fn main() -> ExitCode {
/// leasehold::cli::main_with_checked(&[my_queue()]) }`.
pub fn main_with_checked(brokers: &[CheckedBackend]) -> ExitCode {
    run_with(Context::new(&[], brokers))
}

fn run_with(context: Context) -> ExitCode {
    use crate::cmd;
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    // The selected backends' resources (private servers: `--redis-spawn`, `--postgres-spawn`)
    // are released with the command, also on a panic.
    struct Release(Context);
    impl Drop for Release {
        fn drop(&mut self) {
            self.0.shutdown();
        }
    }
    let _release = Release(context.clone());
    cmd::backends::lost_server_is_an_error(context.clone());
    cmd::sim::progress::quit_cleanly_on_signals(context.clone());
    closed_output_ends_quietly(context.clone());
    let context = &context;
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(args, context),
        Command::Sim(args) => cmd::sim::run(args, context),
        Command::Replay(args) => cmd::replay::run(args, context),
        Command::Shrink(args) => cmd::shrink::run(args, context),
        Command::Timeline(args) => cmd::timeline::run(args, context),
        Command::Protocols(args) => cmd::protocols::run(args),
        Command::Report(args) => cmd::report::run(args, context),
    };
    match result {
        Ok(status) => status.into(),
        Err(error) => {
            eprintln!("leasehold: error: {error}");
            Status::BadInput.into()
        }
    }
}
