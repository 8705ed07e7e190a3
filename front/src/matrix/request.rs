//! [`MatrixRequest`]: a run of the verdict matrix as `leasehold report`'s flags describe it —
//! the depth, the variants and expectation overrides by name, the threads, the backend's name —
//! turned into a [`MatrixConfig`], the folder it is written to and the command the report
//! names.

use super::{config, parse_expect, Depth, MatrixConfig};
use crate::Error;
use leasehold_model::Variant;
use leasehold_sim::seeded::BackendKind;
use std::path::PathBuf;

/// A matrix run as named by flags. [`MatrixRequest::default`] is `leasehold report` with no
/// flag.
#[derive(Clone, Debug)]
pub struct MatrixRequest {
    /// A few hundred seeds per variant instead of up to 10,000 (`--quick`).
    pub quick: bool,
    /// The folder written (`--out`; default `reports/`, or `reports/quick/` when quick).
    pub out: Option<PathBuf>,
    /// Only these variants, by name (`--variants`; empty: all).
    pub variants: Vec<String>,
    /// Expectation overrides, `VARIANT=INVARIANT` or `VARIANT=holds` (`--expect`).
    pub expect: Vec<String>,
    /// Threads for the engines, 1 to 64 (`--threads`).
    pub threads: usize,
    /// The name of the backend the campaigns run on (`--backend`).
    pub backend: String,
}

impl Default for MatrixRequest {
    fn default() -> MatrixRequest {
        MatrixRequest {
            quick: false,
            out: None,
            variants: Vec::new(),
            expect: Vec::new(),
            threads: 1,
            backend: BackendKind::PURE.to_string(),
        }
    }
}

impl MatrixRequest {
    /// The matrix asked for: the variants named (all by default), docs/variants.md's
    /// expectations with the overrides, the depth and the threads (on the reference broker:
    /// [`MatrixConfig::backend`] sets another).
    pub fn config(&self) -> Result<MatrixConfig, Error> {
        if self.threads == 0 || self.threads > 64 {
            return Err(Error(format!(
                "--threads {}: must be between 1 and 64",
                self.threads
            )));
        }
        let depth = if self.quick {
            Depth::Quick
        } else {
            Depth::Full
        };
        let mut config = config(depth).threads(self.threads);
        if !self.variants.is_empty() {
            let mut chosen = Vec::new();
            for name in &self.variants {
                chosen.push(Variant::from_name(name.trim()).ok_or_else(|| {
                    Error(format!(
                        "--variants: unknown variant '{}'; valid: {}",
                        name.trim(),
                        Variant::names()
                    ))
                })?);
            }
            config = config.variants(&chosen);
        }
        for text in &self.expect {
            let (variant, violated) = parse_expect(text).map_err(Error)?;
            config = config.expect(variant, violated);
        }
        Ok(config)
    }

    /// The report's folder.
    pub fn out_dir(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| {
            if !["", BackendKind::PURE].contains(&self.backend.as_str()) {
                // Another backend's matrix never overwrites the reference broker's.
                PathBuf::from(format!("reports/on-{}", self.backend))
            } else if self.quick {
                PathBuf::from("reports/quick")
            } else {
                PathBuf::from("reports")
            }
        })
    }

    /// The command written into the report: only what changes its content (not the folder,
    /// the threads or the output format).
    pub fn command(&self) -> String {
        let mut command = "leasehold report".to_string();
        if self.quick {
            command.push_str(" --quick");
        }
        if !self.variants.is_empty() {
            command.push_str(&format!(" --variants {}", self.variants.join(",")));
        }
        for expect in &self.expect {
            command.push_str(&format!(" --expect {expect}"));
        }
        if !["", BackendKind::PURE].contains(&self.backend.as_str()) {
            command.push_str(&format!(" --backend {}", self.backend));
        }
        command
    }

    /// [`MatrixRequest::command`] with the flags that select `backend` and its server
    /// ([`BackendKind::flags`]: a password in a server's address is never written).
    pub fn command_on(&self, backend: &BackendKind) -> String {
        let plain = MatrixRequest {
            backend: String::new(),
            ..self.clone()
        };
        format!("{}{}", plain.command(), backend.flags())
    }
}
