//! A private `redis-server` process: started on a free loopback port with a temporary
//! directory, persistence on (AOF, `appendfsync always`), restartable (a broker restart is a
//! `SIGKILL` and a fresh process on the same directory and port), stopped and removed on drop.
//!
//! [`ServerPool`] hands one server at a time to each backend, so that a broker restart in one
//! run never disturbs another run of the same campaign.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a starting server may take to answer `PING`.
const START_WAIT_MAX: Duration = Duration::from_secs(20);

/// A restarted server whose files passed this size and twice their size after the last
/// compaction has its AOF rewritten ([`RedisServer::restart`]).
const COMPACT_BYTES_MIN: u64 = 256 << 10;

/// How long an AOF rewrite may take.
const COMPACT_WAIT_MAX: Duration = Duration::from_secs(60);

/// The program started: `$LEASEHOLD_REDIS_SERVER`, or `redis-server` from `PATH`.
pub fn program() -> String {
    std::env::var("LEASEHOLD_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

/// A `redis-server` this process started.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    url: String,
    child: Mutex<Option<Child>>,
    restarts: AtomicU64,
    /// The files' size after the last AOF rewrite (0: never rewritten).
    compacted_bytes: AtomicU64,
}

impl RedisServer {
    /// Starts a server on a free loopback port with a fresh directory under [`data_root`]. Errors (one
    /// line) when `redis-server` cannot be run or does not answer.
    pub fn start() -> Result<RedisServer, String> {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        if STARTED.load(Ordering::Relaxed) == 0 {
            sweep_stale_dirs(&data_root());
        }
        let mut last_error = String::new();
        for _ in 0..5 {
            let n = STARTED.fetch_add(1, Ordering::Relaxed);
            let port = free_port()?;
            let dir =
                data_root().join(format!("leasehold-redis-{}-{n}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let server = RedisServer {
                port,
                url: format!("redis://127.0.0.1:{port}/"),
                dir,
                child: Mutex::new(None),
                restarts: AtomicU64::new(0),
                compacted_bytes: AtomicU64::new(0),
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                // Another process may have taken the port: try another one.
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// The server's URL, `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's data directory (AOF files and the log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size of the server's files (its AOF, mostly), in bytes.
    pub fn disk_bytes(&self) -> u64 {
        fn size(path: &Path) -> u64 {
            match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => std::fs::read_dir(path)
                    .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
                    .unwrap_or(0),
                Ok(meta) => meta.len(),
                Err(_) => 0,
            }
        }
        size(&self.dir)
    }

    /// The process id of the running server, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.lock().as_ref().map(Child::id)
    }

    /// How many times the server was restarted.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// A crash and a restart: `SIGKILL`, then a new process on the same port and directory,
    /// which reloads the AOF. With `appendfsync always` every write the old process answered
    /// is in it.
    ///
    /// The AOF is a log of every write since the server started, and each restart reloads all
    /// of it: a long run's restarts would cost what the run wrote, not what the server holds.
    /// So once the files grew past 256 KiB (`COMPACT_BYTES_MIN`) and twice their size after
    /// the last rewrite, the new process rewrites its AOF to its data (`BGREWRITEAOF`) before
    /// this returns. The rewrite is waited for, so no rewriting child outlives it, and a later
    /// `SIGKILL` finds none to orphan.
    pub fn restart(&self) -> Result<(), String> {
        self.kill();
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.spawn()?;
        let bytes = self.disk_bytes();
        let compacted = self.compacted_bytes.load(Ordering::Relaxed);
        if bytes > COMPACT_BYTES_MIN && bytes > compacted.saturating_mul(2) {
            self.rewrite_aof()?;
            self.compacted_bytes
                .store(self.disk_bytes(), Ordering::Relaxed);
        }
        Ok(())
    }

    /// Rewrites the AOF to the server's data and waits until the rewrite is done.
    fn rewrite_aof(&self) -> Result<(), String> {
        let failed = |e: redis::RedisError| format!("rewriting the AOF on port {}: {e}", self.port);
        let client = redis::Client::open(self.url.as_str()).map_err(failed)?;
        let mut con = client.get_connection().map_err(failed)?;
        redis::cmd("BGREWRITEAOF")
            .query::<String>(&mut con)
            .map_err(failed)?;
        let started = Instant::now();
        loop {
            let info: String = redis::cmd("INFO")
                .arg("persistence")
                .query(&mut con)
                .map_err(failed)?;
            let busy = ["aof_rewrite_in_progress:1", "aof_rewrite_scheduled:1"];
            if !busy.iter().any(|flag| info.contains(flag)) {
                if info.contains("aof_last_bgrewrite_status:ok") {
                    return Ok(());
                }
                return Err(format!("the AOF rewrite on port {} failed", self.port));
            }
            if started.elapsed() > COMPACT_WAIT_MAX {
                return Err(format!(
                    "the AOF rewrite on port {} took over {} s",
                    self.port,
                    COMPACT_WAIT_MAX.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn spawn(&self) -> Result<(), String> {
        let program = program();
        let dir = self
            .dir
            .to_str()
            .ok_or("temporary directory is not UTF-8")?;
        let log = self.dir.join("redis.log");
        let mut command = Command::new(&program);
        command
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--protected-mode", "yes"])
            .args(["--dir", dir, "--logfile", log.to_str().unwrap_or("")])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            // No automatic background rewrite: a SIGKILL would orphan its child process.
            // `restart` rewrites a grown AOF itself and waits for it; the pool replaces a
            // server whose AOF grew between runs (see `ServerPool::checkout`).
            .args(["--auto-aof-rewrite-percentage", "0"])
            .args(["--save", "", "--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child =
            spawn_from_spawner(command).map_err(|e| format!("cannot run {program}: {e}"))?;
        *self.lock() = Some(child);
        self.wait_ready().inspect_err(|_| self.kill())
    }

    /// Whether the process runs (it may have died with the thread that started it, see
    /// `die_with_parent`).
    pub fn is_running(&self) -> bool {
        self.lock()
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    fn wait_ready(&self) -> Result<(), String> {
        let started = Instant::now();
        let client = redis::Client::open(self.url.as_str()).map_err(|e| e.to_string())?;
        loop {
            if let Some(child) = self.lock().as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "redis-server on port {} exited at start ({status}); see {}",
                        self.port,
                        self.dir.join("redis.log").display()
                    ));
                }
            }
            let answered = client
                .get_connection_with_timeout(Duration::from_millis(200))
                .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con));
            if answered.is_ok() {
                return Ok(());
            }
            if started.elapsed() > START_WAIT_MAX {
                return Err(format!(
                    "redis-server on port {} did not answer within {} s",
                    self.port,
                    START_WAIT_MAX.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_micros(250));
        }
    }

    fn kill(&self) {
        if let Some(mut child) = self.lock().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `command` from one long-lived thread of this process. With `die_with_parent`, the
/// parent-death signal fires when the thread that forked the child ends: a campaign thread
/// ends before the servers it restarted are done with, the spawner only with the process.
fn spawn_from_spawner(command: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("redis-server spawner".to_string())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    die_with_parent(&mut command);
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread");
        Mutex::new(requests)
    });
    let (reply, answer) = mpsc::channel();
    let sent = spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, reply));
    match sent {
        Ok(()) => answer
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread stopped"))),
        Err(mpsc::SendError((mut command, _))) => command.spawn(),
    }
}

/// On Linux, the server gets `SIGKILL` when the thread that started it ends, so that no
/// `redis-server` outlives an interrupted run (`PR_SET_PDEATHSIG`). It runs in a process group
/// of its own: a terminal's Ctrl-C goes to leasehold, which lets the seeds under way finish on
/// their servers, and not to the servers themselves.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and calls only `prctl`,
    // which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// Removes the directories of servers whose process (by the pid in the directory's name) is
/// gone: what an interrupted run left behind.
fn sweep_stale_dirs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("leasehold-redis-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        if !alive && Path::new("/proc/self").exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Where servers keep their files: `$LEASEHOLD_REDIS_DIR`, else `/dev/shm` when it is there
/// (a broker restart is a process crash, `SIGKILL`, which a tmpfs survives; with the files on
/// a disk every acknowledged write also waits for a real `fsync`, a millisecond or more, for
/// no gain in what a run shows), else the temporary directory.
pub fn data_root() -> PathBuf {
    if let Ok(dir) = std::env::var("LEASEHOLD_REDIS_DIR") {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    let writable =
        std::fs::metadata(shm).is_ok_and(|meta| meta.is_dir() && !meta.permissions().readonly());
    if writable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free loopback port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// The size of a pooled server's files above which the pool replaces it (a restart reloads
/// the whole AOF, and the runs' deleted keys stay in it).
pub const AOF_BYTES_MAX: u64 = 1 << 20;

impl leasehold_model::server_pool::PrivateServer for RedisServer {
    fn start() -> Result<RedisServer, String> {
        RedisServer::start()
    }

    fn restarts(&self) -> u64 {
        RedisServer::restarts(self)
    }

    fn reusable(&self) -> bool {
        self.pid().is_some() && self.disk_bytes() <= AOF_BYTES_MAX && self.is_running()
    }
}

/// Private servers lent one at a time to each run ([`leasehold_model::server_pool`]).
pub type ServerPool = leasehold_model::server_pool::ServerPool<RedisServer>;

/// A server lent by a [`ServerPool`]; it goes back to the pool when dropped.
pub type PooledServer = leasehold_model::server_pool::PooledServer<RedisServer>;
