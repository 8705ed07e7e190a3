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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a starting server may take to answer `PING`.
const START_WAIT_MAX: Duration = Duration::from_secs(20);

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
}

impl RedisServer {
    /// Starts a server on a free loopback port with a fresh temporary directory. Errors (one
    /// line) when `redis-server` cannot be run or does not answer.
    pub fn start() -> Result<RedisServer, String> {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let mut last_error = String::new();
        for _ in 0..5 {
            let n = STARTED.fetch_add(1, Ordering::Relaxed);
            let port = free_port()?;
            let dir = std::env::temp_dir()
                .join(format!("leasehold-redis-{}-{n}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let server = RedisServer {
                port,
                url: format!("redis://127.0.0.1:{port}/"),
                dir,
                child: Mutex::new(None),
                restarts: AtomicU64::new(0),
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
    pub fn restart(&self) -> Result<(), String> {
        self.kill();
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.spawn()
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
        let child = Command::new(&program)
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--protected-mode", "yes"])
            .args(["--dir", dir, "--logfile", log.to_str().unwrap_or("")])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            // Runs delete their keys: rewriting the AOF often keeps restarts fast in long
            // campaigns (a restart reloads the whole AOF).
            .args(["--auto-aof-rewrite-min-size", "2mb"])
            .args(["--save", "", "--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        *self.lock() = Some(child);
        self.wait_ready().inspect_err(|_| self.kill())
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

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free loopback port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Private servers lent to one backend at a time and taken back when it is dropped.
#[derive(Clone, Debug, Default)]
pub struct ServerPool {
    free: Arc<Mutex<Vec<RedisServer>>>,
}

impl ServerPool {
    /// An empty pool (servers are started on demand).
    pub fn new() -> ServerPool {
        ServerPool::default()
    }

    /// A free server, started if none is free.
    pub fn checkout(&self) -> Result<PooledServer, String> {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let server = match free {
            Some(server) => server,
            None => RedisServer::start()?,
        };
        Ok(PooledServer {
            server: Some(server),
            pool: self.clone(),
        })
    }

    /// Restarts over the free servers (all of them once every backend is dropped).
    pub fn restarts(&self) -> u64 {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.iter().map(RedisServer::restarts).sum()
    }

    /// Stops every free server (servers still lent stop when they come back and the pool is
    /// dropped).
    pub fn shutdown(&self) {
        let servers = std::mem::take(&mut *self.free.lock().unwrap_or_else(|e| e.into_inner()));
        drop(servers);
    }
}

/// A server lent by a [`ServerPool`]; it goes back to the pool when dropped.
#[derive(Debug)]
pub struct PooledServer {
    server: Option<RedisServer>,
    pool: ServerPool,
}

impl std::ops::Deref for PooledServer {
    type Target = RedisServer;
    fn deref(&self) -> &RedisServer {
        self.server.as_ref().expect("present until dropped")
    }
}

impl Drop for PooledServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            if server.pid().is_some() {
                self.pool
                    .free
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(server);
            }
        }
    }
}
