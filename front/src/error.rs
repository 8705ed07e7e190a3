//! The one error type of the front door: a one-line message naming the file, line or field
//! that is wrong (the command line prints it and exits 2).

use std::fmt;

/// A bad input (an unknown name, a malformed file, a file that cannot be written): one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error(message)
    }
}
