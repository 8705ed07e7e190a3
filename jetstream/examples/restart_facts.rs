//! Observes what a nats-server keeps of a consumer across a restart (docs/jetstream.md, "Restart
//! facts", F17–F20): `cargo run -p leasehold-jetstream --features facts --example restart_facts`. It starts
//! its own `nats-server -js` (from the `PATH`) on a free loopback port and a temporary store,
//! and stops it in the ways the experiments name. With the arguments `f20 [ROUNDS]`, F20 only
//! (60 stops of each timing unless ROUNDS says).

use futures_util::StreamExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

type R<T> = Result<T, String>;

struct Server {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    config: Option<String>,
}

impl Server {
    fn start(config: Option<&str>) -> R<Server> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut server = Server {
            dir,
            port,
            child: None,
            config: config.map(str::to_string),
        };
        server.launch()?;
        Ok(server)
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn launch(&mut self) -> R<()> {
        let mut command = Command::new("nats-server");
        command.args([
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-sd",
        ]);
        command.arg(self.dir.path().join("store"));
        if let Some(config) = &self.config {
            let file = self.dir.path().join("nats.conf");
            std::fs::write(&file, config).map_err(|e| e.to_string())?;
            command.arg("-c").arg(file);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("nats-server: {e}"))?;
        self.child = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                return Err("nats-server did not start".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Stops the server with `signal` (a `kill` name: TERM, INT, USR2, ...) and starts it on
    /// the same store; the time the stop took.
    fn restart(&mut self, signal: &str) -> R<Duration> {
        let mut child = self.child.take().ok_or("not running")?;
        let started = Instant::now();
        Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .map_err(|e| e.to_string())?;
        loop {
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                break;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("SIG{signal}: not stopped within 60 s"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let took = started.elapsed();
        self.launch()?;
        Ok(took)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Js {
    client: async_nats::Client,
    stream: String,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Info {
    ack_pending: u64,
    redelivered: u64,
    floor: (u64, u64),
    delivered: (u64, u64),
}

impl Js {
    async fn connect(url: &str, stream: &str) -> R<Js> {
        let started = Instant::now();
        loop {
            match async_nats::connect(url).await {
                Ok(client) => {
                    return Ok(Js {
                        client,
                        stream: stream.to_string(),
                    })
                }
                Err(e) if started.elapsed() > Duration::from_secs(10) => return Err(e.to_string()),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    async fn api(&self, what: &str, body: serde_json::Value) -> R<serde_json::Value> {
        let answer = self
            .client
            .request(format!("$JS.API.{what}"), body.to_string().into())
            .await
            .map_err(|e| e.to_string())?;
        let value: serde_json::Value =
            serde_json::from_slice(&answer.payload).map_err(|e| e.to_string())?;
        if let Some(error) = value.get("error") {
            return Err(format!("{what}: {error}"));
        }
        Ok(value)
    }

    async fn create(&self) -> R<()> {
        self.create_with(1).await
    }

    /// The stream and `consumers` durable consumers `g0`, `g1`, ….
    async fn create_with(&self, consumers: usize) -> R<()> {
        let s = &self.stream;
        self.api(
            &format!("STREAM.CREATE.{s}"),
            serde_json::json!({"name": s, "subjects": [format!("{s}.e")], "storage": "file"}),
        )
        .await?;
        for k in 0..consumers {
            self.api(
                &format!("CONSUMER.DURABLE.CREATE.{s}.g{k}"),
                serde_json::json!({"stream_name": s, "config": {
                    "durable_name": format!("g{k}"), "ack_policy": "explicit",
                    "deliver_policy": "all", "ack_wait": 3_600_000_000_000u64,
                    "max_ack_pending": -1}}),
            )
            .await?;
        }
        Ok(())
    }

    async fn publish(&self, n: usize) -> R<()> {
        let js = async_nats::jetstream::new(self.client.clone());
        for i in 0..n {
            js.publish(format!("{}.e", self.stream), format!("E{i}").into())
                .await
                .map_err(|e| e.to_string())?
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// A `no_wait` pull of up to `n`: the reply subjects.
    async fn pull(&self, n: usize) -> R<Vec<String>> {
        self.pull_from("g0", n).await
    }

    /// A `no_wait` pull of up to `n` from `consumer`: the reply subjects.
    async fn pull_from(&self, consumer: &str, n: usize) -> R<Vec<String>> {
        let inbox = self.client.new_inbox();
        let mut sub = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| e.to_string())?;
        self.client
            .publish_with_reply(
                format!("$JS.API.CONSUMER.MSG.NEXT.{}.{consumer}", self.stream),
                inbox,
                serde_json::json!({"batch": n, "no_wait": true})
                    .to_string()
                    .into(),
            )
            .await
            .map_err(|e| e.to_string())?;
        let mut replies = Vec::new();
        while replies.len() < n {
            let m = tokio::time::timeout(Duration::from_secs(5), sub.next())
                .await
                .map_err(|_| "pull: no answer")?
                .ok_or("pull: ended")?;
            if m.status.is_some() {
                break;
            }
            replies.push(m.reply.ok_or("no reply subject")?.to_string());
        }
        Ok(replies)
    }

    async fn send(&self, reply: &str, body: &str) -> R<()> {
        self.client
            .request(reply.to_string(), body.to_string().into())
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    async fn info(&self) -> R<Info> {
        let v = self
            .api(
                &format!("CONSUMER.INFO.{}.g0", self.stream),
                serde_json::json!({}),
            )
            .await?;
        let n = |a: &str, b: &str| v[a][b].as_u64().unwrap_or(0);
        Ok(Info {
            ack_pending: v["num_ack_pending"].as_u64().unwrap_or(0),
            redelivered: v["num_redelivered"].as_u64().unwrap_or(0),
            floor: (n("ack_floor", "consumer_seq"), n("ack_floor", "stream_seq")),
            delivered: (n("delivered", "consumer_seq"), n("delivered", "stream_seq")),
        })
    }
}

/// The delivery count and stream sequence of a reply subject.
fn dc_seq(reply: &str) -> (u64, u64) {
    let t: Vec<&str> = reply.split('.').collect();
    let n = t.len();
    (t[n - 5].parse().unwrap_or(0), t[n - 4].parse().unwrap_or(0))
}

/// How the experiment stops the server and what it does first.
#[derive(Clone, Copy, Debug)]
struct How {
    signal: &'static str,
    wait_before: Duration,
    /// `+WPI` on every redelivery right after the pull.
    wpi_after_redelivery: bool,
    /// A lame-duck configuration (short duration) for SIGUSR2.
    ldm: bool,
}

/// F17: messages 1..4 delivered; ack 1; `-NAK` on 3, redelivered; ack 2, ack 4; restart.
/// F18: 1..4 delivered, `-NAK` on 3, redelivered; restart; then ack 1, ack 2, `-NAK` 4, pull.
async fn experiment(how: How, after_restart_ops: bool) -> R<(Info, Info, Info, String)> {
    let config = how
        .ldm
        .then_some("lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n");
    let mut server = Server::start(config)?;
    let js = Js::connect(&server.url(), "rf").await?;
    js.create().await?;
    js.publish(4).await?;
    let first = js.pull(4).await?;
    if !after_restart_ops {
        js.send(&first[0], "+ACK").await?;
    }
    js.send(&first[2], "-NAK").await?;
    let again = js.pull(1).await?;
    if how.wpi_after_redelivery {
        for reply in &again {
            if dc_seq(reply).0 > 1 {
                js.send(reply, "+WPI").await?;
            }
        }
    }
    if !after_restart_ops {
        js.send(&first[1], "+ACK").await?;
        js.send(&first[3], "+ACK").await?;
    }
    let before = js.info().await?;
    tokio::time::sleep(how.wait_before).await;
    let took = server.restart(how.signal)?;
    let js = Js::connect(&server.url(), "rf").await?;
    let mut after = js.info().await;
    for _ in 0..100 {
        if after.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        after = js.info().await;
    }
    let after = after?;
    let mut note = format!("stop took {} ms", took.as_millis());
    let mut later = after;
    if after_restart_ops {
        js.send(&first[0], "+ACK").await?;
        js.send(&first[1], "+ACK").await?;
        js.send(&first[3], "-NAK").await?;
        let pulled = js.pull(4).await?;
        later = js.info().await?;
        note += &format!(
            "; after the restart: +ACK 1, +ACK 2, -NAK 4, a pull got (count, seq) {:?}",
            pulled.iter().map(|r| dc_seq(r)).collect::<Vec<_>>()
        );
    }
    Ok((before, after, later, note))
}

/// F19: message 1 delivered three times (`-NAK` and a pull twice, `+WPI` on each
/// redelivery), then `-NAK {"delay": AckWait}` sent to delivery 2's reply subject (stale), and,
/// when `repeat`, the same to delivery 3's; restart; `-NAK` on delivery 3 and a pull: the
/// delivery count it gets.
async fn stale_delayed_nak(repeat: bool) -> R<(Info, Info, Vec<(u64, u64)>)> {
    let mut server = Server::start(None)?;
    let js = Js::connect(&server.url(), "rn").await?;
    js.create().await?;
    js.publish(1).await?;
    let mut replies = js.pull(1).await?;
    for _ in 0..2 {
        js.send(replies.last().ok_or("no delivery")?, "-NAK")
            .await?;
        let again = js.pull(1).await?;
        js.send(again.first().ok_or("no redelivery")?, "+WPI")
            .await?;
        replies.extend(again);
    }
    let delay = r#"-NAK {"delay": 3600000000000}"#;
    js.send(&replies[1], delay).await?;
    if repeat {
        js.send(&replies[2], delay).await?;
    }
    let before = js.info().await?;
    server.restart("TERM")?;
    let js = Js::connect(&server.url(), "rn").await?;
    let mut after = js.info().await;
    while after.is_err() {
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = js.info().await;
    }
    js.send(&replies[2], "-NAK").await?;
    let pulled = js.pull(1).await?;
    Ok((before, after?, pulled.iter().map(|r| dc_seq(r)).collect()))
}

/// When the consumer's state file was last written, and how long ago.
fn written(odat: &std::path::Path) -> Option<(std::time::SystemTime, Duration)> {
    let modified = std::fs::metadata(odat).ok()?.modified().ok()?;
    Some((modified, modified.elapsed().unwrap_or(Duration::ZERO)))
}

/// How the F20 experiment times the stop after a burst of changes.
#[derive(Clone, Copy, Debug)]
enum StopAt {
    /// When the state file's last write is one write period (100 ms) less this many
    /// milliseconds old: about when the write that follows it, if one is due, starts (a
    /// `SIGTERM` takes a few milliseconds to reach the consumer stores).
    BeforeTheNextWrite(u64),
    /// When nothing was sent for 150 ms and the state file was not written for 150 ms.
    Idle,
}

/// F20: a stream with two consumers; `rounds` times, one message is published and each
/// consumer gets a burst of changes (a pull, `+WPI` on the delivery, its `+ACK`); then a
/// `SIGTERM` stop timed as `stop_at` and a start on the same store. How many stops left a
/// consumer's `o.dat` empty (looked at between the stop and the start), and the times `g0`'s
/// state file was written after the burst's last request in the first round (polled every
/// 0.5 ms for 400 ms).
async fn emptied_by_a_stop(rounds: usize, stop_at: StopAt) -> R<(usize, Vec<u128>)> {
    const CONSUMERS: usize = 2;
    let mut server = Server::start(None)?;
    let mut js = Js::connect(&server.url(), "re").await?;
    js.create_with(CONSUMERS).await?;
    let odats: Vec<std::path::PathBuf> = (0..CONSUMERS)
        .map(|k| {
            server
                .dir
                .path()
                .join(format!("store/jetstream/$G/streams/re/obs/g{k}/o.dat"))
        })
        .collect();
    let (mut emptied, mut first_round) = (0, Vec::new());
    for round in 0..rounds {
        js.publish(1).await?;
        for k in 0..CONSUMERS {
            let replies = js.pull_from(&format!("g{k}"), 64).await?;
            for reply in &replies {
                js.send(reply, "+WPI").await?;
                js.send(reply, "+ACK").await?;
            }
        }
        let burst_end = Instant::now();
        if round == 0 {
            let mut last = written(&odats[0]).map(|w| w.0);
            while burst_end.elapsed() < Duration::from_millis(400) {
                let now = written(&odats[0]).map(|w| w.0);
                if now != last {
                    first_round.push(burst_end.elapsed().as_millis());
                    last = now;
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        let (change_quiet, file_quiet) = match stop_at {
            StopAt::BeforeTheNextWrite(ms) => (150, 100 - ms),
            StopAt::Idle => (150, 150),
        };
        while burst_end.elapsed() < Duration::from_millis(change_quiet)
            || !odats
                .iter()
                .all(|f| written(f).is_none_or(|w| w.1 >= Duration::from_millis(file_quiet)))
        {
            std::thread::sleep(Duration::from_micros(500));
        }
        let mut child = server.child.take().ok_or("not running")?;
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .map_err(|e| e.to_string())?;
        child.wait().map_err(|e| e.to_string())?;
        let empty = odats
            .iter()
            .any(|f| std::fs::metadata(f).is_ok_and(|m| m.len() == 0));
        server.launch()?;
        js = Js::connect(&server.url(), "re").await?;
        if empty {
            emptied += 1;
            // Start over: an emptied consumer would deliver everything again.
            let _ = js
                .api(
                    &format!("STREAM.DELETE.{}", js.stream),
                    serde_json::json!({}),
                )
                .await;
            js.create_with(CONSUMERS).await?;
        }
        let mut answered = js.info().await;
        while answered.is_err() {
            tokio::time::sleep(Duration::from_millis(10)).await;
            answered = js.info().await;
        }
    }
    Ok((emptied, first_round))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> R<()> {
    if std::env::args().nth(1).as_deref() != Some("f20") {
        f17_to_f19().await?;
    }
    println!("== F20: a SIGTERM stop after a burst of changes");
    let rounds: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(60);
    let before: Vec<StopAt> = (0..=8).step_by(2).map(StopAt::BeforeTheNextWrite).collect();
    for stop_at in before.into_iter().chain([StopAt::Idle]) {
        let (emptied, first_round) = emptied_by_a_stop(rounds, stop_at).await?;
        println!(
            "stop {stop_at:?}: o.dat written {first_round:?} ms after the burst (first round); \
             left empty by {emptied} of {rounds} stops"
        );
    }
    Ok(())
}

/// F17, F18 and F19.
async fn f17_to_f19() -> R<()> {
    let term = How {
        signal: "TERM",
        wait_before: Duration::ZERO,
        wpi_after_redelivery: false,
        ldm: false,
    };
    let hows = [
        ("SIGTERM at once", term),
        (
            "SIGTERM after 2 s",
            How {
                wait_before: Duration::from_secs(2),
                ..term
            },
        ),
        (
            "SIGINT",
            How {
                signal: "INT",
                ..term
            },
        ),
        (
            "SIGQUIT",
            How {
                signal: "QUIT",
                ..term
            },
        ),
        (
            "lame duck (SIGUSR2, lame_duck_duration 30 s, the minimum)",
            How {
                signal: "USR2",
                ldm: true,
                ..term
            },
        ),
        (
            "SIGTERM, +WPI after the redelivery",
            How {
                wpi_after_redelivery: true,
                ..term
            },
        ),
    ];
    for after_ops in [false, true] {
        println!(
            "== {}",
            if after_ops {
                "F18: 1..4 delivered, -NAK 3, 3 redelivered; restart; then +ACK 1, +ACK 2, -NAK 4, pull"
            } else {
                "F17: 1..4 delivered, +ACK 1, -NAK 3, 3 redelivered, +ACK 2, +ACK 4; restart"
            }
        );
        for (label, how) in hows {
            if after_ops && (how.ldm || how.signal != "TERM") {
                continue;
            }
            match experiment(how, after_ops).await {
                Ok((before, after, later, note)) => {
                    println!("{label}: before {before:?}");
                    println!("{label}: after  {after:?} ({note})");
                    if after_ops {
                        println!("{label}: later  {later:?}");
                    }
                }
                Err(e) => println!("{label}: {e}"),
            }
        }
    }
    println!("== F19: a stale delayed -NAK, then a restart");
    for repeat in [false, true] {
        let (before, after, pulled) = stale_delayed_nak(repeat).await?;
        println!(
            "stale -NAK {{delay}} on delivery 2{}: before {before:?}, after {after:?}; -NAK and a \
             pull after the restart got (count, seq) {pulled:?}",
            if repeat {
                ", repeated on delivery 3"
            } else {
                ""
            }
        );
    }
    Ok(())
}
