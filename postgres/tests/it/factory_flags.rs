//! The reproducing flags of a PostgreSQL backend: they name its server, its password hidden.
//! No server needed.

use leasehold_model::BackendFactory;
use leasehold_postgres::{Postgres, DEFAULT_URL};

#[test]
fn the_reproducing_flags_name_the_server_with_its_password_hidden() {
    assert_eq!(Postgres::url(DEFAULT_URL).flags(), " --backend postgres");
    assert_eq!(
        Postgres::url("postgres://app:s3cret@db:5433/q").flags(),
        " --backend postgres --postgres-url postgres://app:***@db:5433/q"
    );
    assert_eq!(
        Postgres::spawn().flags(),
        " --backend postgres --postgres-spawn"
    );
    assert!(Postgres::url("postgres://app:s3cret@db/q")
        .restarts_refused()
        .is_some_and(|why| !why.contains("s3cret")));
    assert!(Postgres::spawn().restarts_refused().is_none());
}
