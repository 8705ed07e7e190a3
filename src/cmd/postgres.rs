//! `--backend postgres`: the flags, and the Postgres backend value they configure
//! ([`leasehold_postgres::Postgres`], which holds the server a run talks to).
//!
//! `--postgres-url URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) names a server
//! someone else runs: each run creates its own schema there and drops it at the end, and a
//! broker restart is refused (it would have to restart that server). `--postgres-spawn` starts
//! private servers instead (`initdb` in a temporary folder, a free loopback port, `fsync` on),
//! one per simulator thread, which a broker restart shuts down at once and starts again; they
//! stop when the command ends.

use crate::cmd::backends::refuse_flags_beside;
use crate::status::UserError;
#[cfg(feature = "postgres")]
use leasehold_postgres::DEFAULT_URL;
use leasehold_sim::seeded::BackendKind;

/// The Postgres backend's default server: this build has no Postgres backend (feature
/// `postgres` off), so `--backend postgres` is an unknown backend.
#[cfg(not(feature = "postgres"))]
const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The Postgres flags of `replay`, `timeline`, `sim`, `shrink` and `report`.
#[derive(clap::Args, Debug, Clone)]
pub struct PostgresArgs {
    /// With --backend postgres: the server to use (each run has its own schema, dropped at
    /// the end).
    #[arg(long, default_value = DEFAULT_URL, value_name = "URL")]
    pub postgres_url: String,
    /// With --backend postgres: start private PostgreSQL servers (initdb in a temporary
    /// folder, fsync on; one per simulator thread) instead of using --postgres-url; a broker
    /// restart then restarts the server.
    #[arg(long)]
    pub postgres_spawn: bool,
}

impl Default for PostgresArgs {
    /// No Postgres flag given: the default server.
    fn default() -> PostgresArgs {
        PostgresArgs {
            postgres_url: DEFAULT_URL.to_string(),
            postgres_spawn: false,
        }
    }
}

/// The Postgres backend `--backend postgres` and the Postgres flags configure: `None` for
/// another backend, whose name must then come without Postgres flags (given, they are refused
/// by name).
pub fn configured(backend: &str, args: &PostgresArgs) -> Result<Option<BackendKind>, UserError> {
    if backend != "postgres" {
        let given = if args.postgres_spawn {
            Some("--postgres-spawn")
        } else {
            (args.postgres_url != DEFAULT_URL).then_some("--postgres-url")
        };
        refuse_flags_beside("postgres", backend, given)?;
        return Ok(None);
    }
    Ok(postgres(args))
}

/// The Postgres backend the flags configure.
#[cfg(feature = "postgres")]
fn postgres(args: &PostgresArgs) -> Option<BackendKind> {
    use leasehold_postgres::Postgres;
    Some(BackendKind::new(if args.postgres_spawn {
        Postgres::spawn()
    } else {
        Postgres::url(args.postgres_url.clone())
    }))
}

/// None: this build has no Postgres backend.
#[cfg(not(feature = "postgres"))]
fn postgres(_: &PostgresArgs) -> Option<BackendKind> {
    None
}
