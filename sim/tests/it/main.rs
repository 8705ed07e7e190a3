//! The simulator's integration tests, one binary: each file is a module.

mod drawing;
mod engine;
mod fuzz_run;
mod internals;
mod parse;
mod reachable;
mod scale;
mod scenarios;
mod seeded;
mod story;
mod stream;
mod to_script;
