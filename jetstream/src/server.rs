//! [`NatsServer`]: a private `nats-server -js` this process starts (a temporary store folder,
//! a free loopback port), restarts for a broker restart (a clean stop — `SIGTERM`, the server
//! writes its stores — then a start on the same store and port), and stops when dropped.
//! [`ServerPool`] lends one server at a time to each run, so that a broker restart in one run
//! never disturbs another run of the same campaign.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a started server may take to answer.
const START_WAIT_MAX: Duration = Duration::from_secs(10);

/// A private server; see the module documentation.
#[derive(Debug)]
pub struct NatsServer {
    dir: PathBuf,
    port: u16,
    url: String,
    child: Mutex<Option<Child>>,
    restarts: AtomicU64,
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("a free port: {e}"))
}

fn tempdir() -> Result<PathBuf, String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("leasehold-nats-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

impl NatsServer {
    /// Starts a fresh server; the error is one line.
    pub fn start() -> Result<NatsServer, String> {
        NatsServer::start_on(free_port()?)
    }

    /// Starts a fresh server on `port` of the loopback interface; the error is one line.
    pub fn start_on(port: u16) -> Result<NatsServer, String> {
        let dir = tempdir()?;
        let server = NatsServer {
            url: format!("nats://127.0.0.1:{port}"),
            dir,
            port,
            child: Mutex::new(None),
            restarts: AtomicU64::new(0),
        };
        server.launch()?;
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

    fn launch(&self) -> Result<(), String> {
        let log = std::fs::File::create(self.dir.join("nats.log"))
            .map_err(|e| format!("nats-server log: {e}"))?;
        let child = Command::new("nats-server")
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(self.store_dir())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("nats-server: cannot run: {e} (install nats-server)"))?;
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if started.elapsed() > START_WAIT_MAX {
                return Err(format!(
                    "nats-server did not answer on port {} within {} s",
                    self.port,
                    START_WAIT_MAX.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    fn stop(&self) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = child {
            // SIGTERM: the server stops cleanly and writes its stores.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let started = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if started.elapsed() > START_WAIT_MAX => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
    }

    /// A broker restart: a clean stop, then a start on the same store and port.
    pub fn restart(&self) -> Result<(), String> {
        self.restart_with(|_| Ok(()))
    }

    /// A broker restart that runs `stopped` on the store folder between the stop and the
    /// start (the server is not running then).
    pub fn restart_with(
        &self,
        stopped: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<(), String> {
        self.stop();
        stopped(&self.store_dir())?;
        self.launch()?;
        self.restarts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The server's store folder (`-sd`).
    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl leasehold_model::server_pool::PrivateServer for NatsServer {
    fn start() -> Result<NatsServer, String> {
        NatsServer::start()
    }

    fn restarts(&self) -> u64 {
        NatsServer::restarts(self)
    }
}

/// Private servers lent one at a time to each run ([`leasehold_model::server_pool`]).
pub type ServerPool = leasehold_model::server_pool::ServerPool<NatsServer>;

/// A server lent by a [`ServerPool`]; it goes back to the pool when dropped.
pub type PooledServer = leasehold_model::server_pool::PooledServer<NatsServer>;
