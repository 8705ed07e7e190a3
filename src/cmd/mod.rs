//! One module per command.

pub mod backends;
pub mod check;
pub mod protocols;
pub mod replay;
pub mod report;
pub mod shrink;
pub mod sim;
pub mod timeline;
