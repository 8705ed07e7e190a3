//! [`PgServer`]: a private PostgreSQL server this process starts (`initdb` in a temporary
//! folder, a free loopback port, `fsync` on), restarts for a broker restart (an immediate
//! shutdown — the server process killed without a checkpoint — then a start that replays the
//! write-ahead log), and stops when dropped. [`ServerPool`] lends one server at a time to each
//! run, so that a broker restart in one run never disturbs another run of the same campaign.
//!
//! PostgreSQL refuses to run as root: run as root, the server's files belong to the `postgres`
//! user (or `$LEASEHOLD_POSTGRES_USER`) and its programs run through `runuser -u USER --`.
//! The programs come from `$LEASEHOLD_POSTGRES_BIN`, the folder of `initdb` on the `PATH`, or
//! the newest `/usr/lib/postgresql/*/bin`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a start or a stop looks at the server's lock file.
const LOCK_FILE_POLL: Duration = Duration::from_millis(2);

/// How long a start or a stop may take (`pg_ctl -w`'s own default).
const LOCK_FILE_WAIT_MAX: Duration = Duration::from_secs(60);

/// A private server; see the module documentation.
#[derive(Debug)]
pub struct PgServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    user: Option<String>,
    url: String,
    restarts: AtomicU64,
}

/// The folder of the server's programs.
pub fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("LEASEHOLD_POSTGRES_BIN") {
        return Ok(PathBuf::from(dir));
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
            return Ok(dir);
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no initdb found (install the postgresql package)".to_string())
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("a free port: {e}"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl PgServer {
    /// Starts a fresh server; the error is one line.
    pub fn start() -> Result<PgServer, String> {
        let bin = bin_dir()?;
        let user = is_root().then(|| {
            std::env::var("LEASEHOLD_POSTGRES_USER").unwrap_or_else(|_| "postgres".to_string())
        });
        let dir = tempdir()?;
        if let Some(user) = &user {
            run(
                Command::new("chown").arg(format!("{user}:")).arg(&dir),
                "chown",
            )?;
        }
        let port = free_port()?;
        let server = PgServer {
            url: format!("postgres://leasehold@127.0.0.1:{port}/postgres"),
            bin,
            dir,
            port,
            user,
            restarts: AtomicU64::new(0),
        };
        let data = server.data();
        server.program(
            "initdb",
            &[
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "leasehold",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        server.pg_ctl_start()?;
        Ok(server)
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Broker restarts so far.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// A broker restart: an immediate shutdown (no checkpoint; the next start replays the
    /// write-ahead log), then a start on the same data directory and port.
    pub fn restart(&self) -> Result<(), String> {
        self.program(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-W", "stop"],
        )?;
        self.wait_for_lock_file("stop", |status| status.is_none())?;
        self.pg_ctl_start()?;
        self.restarts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.program(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log,
                "-o",
                &options,
                "-W",
                "start",
            ],
        )
        .and_then(|()| {
            self.wait_for_lock_file("start", |status| {
                status.is_some_and(|status| status == "ready")
            })
        })
        .map_err(|e| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let last = tail.lines().last().unwrap_or_default().to_string();
            format!("{e}: {last}")
        })
    }

    /// Waits until the server's lock file (`postmaster.pid`) says `done`: called with `None`
    /// while there is none, else with its status line (`starting`, `ready`, `stopping`). This
    /// is what `pg_ctl -w` waits for, looked at every [`LOCK_FILE_POLL`] instead of every
    /// 100 ms (which was most of a restart's time).
    fn wait_for_lock_file(
        &self,
        what: &str,
        done: impl Fn(Option<&str>) -> bool,
    ) -> Result<(), String> {
        let path = self.dir.join("data").join("postmaster.pid");
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&path).ok();
            // The eighth line is the postmaster's status, padded with spaces.
            let status = text
                .as_deref()
                .map(|t| t.lines().nth(7).unwrap_or("").trim());
            if done(status) {
                return Ok(());
            }
            if started.elapsed() > LOCK_FILE_WAIT_MAX {
                return Err(format!(
                    "pg_ctl {what}: the server's lock file did not say so within {} s",
                    LOCK_FILE_WAIT_MAX.as_secs()
                ));
            }
            std::thread::sleep(LOCK_FILE_POLL);
        }
    }

    fn program(&self, name: &str, args: &[&str]) -> Result<(), String> {
        let path = self.bin.join(name);
        let mut command = match &self.user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(&path);
                c
            }
            None => Command::new(&path),
        };
        command.args(args).current_dir(&self.dir);
        run(&mut command, name)
    }
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    Err(format!("{what} failed ({}): {line}", out.status))
}

fn tempdir() -> Result<PathBuf, String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("leasehold-pg-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.program(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
        let _ = std::fs::remove_dir_all(Path::new(&self.dir));
    }
}

impl leasehold_model::server_pool::PrivateServer for PgServer {
    fn start() -> Result<PgServer, String> {
        PgServer::start()
    }

    fn restarts(&self) -> u64 {
        PgServer::restarts(self)
    }
}

/// Private servers lent one at a time to each run ([`leasehold_model::server_pool`]).
pub type ServerPool = leasehold_model::server_pool::ServerPool<PgServer>;

/// A server lent by a [`ServerPool`]; it goes back to the pool when dropped.
pub type PooledServer = leasehold_model::server_pool::PooledServer<PgServer>;
