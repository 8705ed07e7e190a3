//! How a test finds a nats-server: `LEASEHOLD_NATS_URL` (`.ci/run` starts one), else a private
//! `nats-server -js` on a free loopback port in a temporary folder, stopped when dropped. With
//! neither, a test is ignored at build time (`cfg(leasehold_no_nats)`), and fails under
//! `CI=true`.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server for one test; a private one is killed when this is dropped.
pub struct Server {
    pub url: String,
    child: Option<Child>,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

/// The server named by `LEASEHOLD_NATS_URL`, or a private one.
///
/// # Panics
/// When neither can be had (the build probe ignores these tests then, except under `CI=true`).
pub fn server() -> Server {
    if let Ok(url) = std::env::var("LEASEHOLD_NATS_URL") {
        if !url.is_empty() {
            return Server {
                url,
                child: None,
                _dir: None,
            };
        }
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let port = free_port();
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("no LEASEHOLD_NATS_URL and nats-server does not start: {e}"));
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nats-server did not answer on port {port} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Server {
        url: format!("nats://127.0.0.1:{port}"),
        child: Some(child),
        _dir: Some(dir),
    }
}
