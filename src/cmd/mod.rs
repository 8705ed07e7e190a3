//! One module per command.

pub mod backends;
pub mod check;
pub mod postgres;
pub mod protocols;
pub mod redis;
pub mod replay;
pub mod report;
pub mod shrink;
pub mod sim;
pub mod timeline;
