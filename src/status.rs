//! What a command returns: its exit status, or a one-line user error (docs/cli.md).

use std::process::ExitCode;

/// The process exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Everything held, or the run matched its expectations.
    Ok,
    /// An invariant was violated or an expectation failed (the output names it).
    Failed,
    /// Bad usage or bad input.
    BadInput,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status.code())
    }
}

impl Status {
    /// `Ok` when everything held (or the run matched its file's expectations), else
    /// `Failed`.
    pub fn held(held: bool) -> Status {
        if held {
            Status::Ok
        } else {
            Status::Failed
        }
    }

    /// The numeric exit status: 0, 1 or 2.
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Failed => 1,
            Status::BadInput => 2,
        }
    }
}

/// A user error (a bad flag, a malformed file): printed as one line, exit status 2. The
/// library's error type: the front door's calls fail with the same one-line messages.
pub use leasehold_front::Error as UserError;

/// What every command returns.
pub type CmdResult = Result<Status, UserError>;

/// The exit status of a command whose output was closed before it ended (`leasehold sim …
/// --trace | head`): what a shell reports for a program stopped by `SIGPIPE`.
pub const EXIT_OUTPUT_CLOSED: u8 = 128 + 13;

/// A panic's message, when it has one (`panic!` with a literal or a formatted text).
pub(crate) fn panic_message<'a>(info: &'a std::panic::PanicHookInfo<'_>) -> Option<&'a str> {
    let payload = info.payload();
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
}
