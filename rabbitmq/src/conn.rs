//! Where the server is (an `amqp://` URL), connecting to it, and how a URL is shown.
//!
//! The engines' `Backend` methods cannot fail for I/O reasons, and a run whose server stopped
//! answering cannot be trusted, so a server error in the middle of a run is a panic whose
//! message starts with `backend rabbitmq` (the command line turns it into one line and exit
//! status 2). Every error the user can cause (no server, a wrong URL) is found when the
//! backend is built and returned as one line.

use amqprs::connection::{Connection, OpenConnectionArguments};
use std::time::Duration;

/// How long a connection attempt may take.
pub const CONNECT_WAIT_MAX: Duration = Duration::from_secs(5);

/// `url` as it may be printed or saved: its password shown as `***`
/// ([`leasehold_model::factory::redacted_url`]).
pub use leasehold_model::factory::redacted_url as redacted;

/// The parts of an `amqp://user:password@host:port/vhost` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or address.
    pub host: String,
    /// TCP port (5672 when the URL names none).
    pub port: u16,
    /// User name (`guest` when the URL names none).
    pub user: String,
    /// Password (`guest` when the URL names none).
    pub password: String,
    /// Virtual host, percent-decoded (`/` when the URL names none).
    pub vhost: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}:{}{}", self.user, self.host, self.port, self.vhost)
    }
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a bad percent escape in '{text}'"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{text}' is not UTF-8 once decoded"))
}

/// Parses an `amqp://` URL; the error is one line naming the URL (password hidden).
pub fn parse(url: &str) -> Result<Endpoint, String> {
    let bad = |why: &str| format!("bad RabbitMQ URL {}: {why}", redacted(url));
    let rest = url
        .strip_prefix("amqp://")
        .ok_or_else(|| bad("it must start with amqp://"))?;
    let (authority, path) = match rest.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (rest, None),
    };
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let (user, password) = match userinfo {
        Some(info) => match info.split_once(':') {
            Some((u, p)) => (
                percent_decode(u).map_err(|e| bad(&e))?,
                percent_decode(p).map_err(|e| bad(&e))?,
            ),
            None => (percent_decode(info).map_err(|e| bad(&e))?, String::new()),
        },
        None => ("guest".to_string(), "guest".to_string()),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h.to_string(),
            p.parse::<u16>()
                .map_err(|_| bad(&format!("port '{p}' is not a number")))?,
        ),
        None => (hostport.to_string(), 5672),
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let vhost = match path {
        None | Some("") => "/".to_string(),
        Some(p) => percent_decode(p.split('?').next().unwrap_or_default()).map_err(|e| bad(&e))?,
    };
    Ok(Endpoint {
        host,
        port,
        user,
        password,
        vhost,
    })
}

/// Opens a connection to `endpoint` (within [`CONNECT_WAIT_MAX`]); the error is one line
/// naming the server by `shown` (a redacted URL).
pub async fn open(endpoint: &Endpoint, shown: &str, name: &str) -> Result<Connection, String> {
    let mut args = OpenConnectionArguments::new(
        &endpoint.host,
        endpoint.port,
        &endpoint.user,
        &endpoint.password,
    );
    args.virtual_host(&endpoint.vhost)
        .connection_name(name)
        .heartbeat(0);
    match tokio::time::timeout(CONNECT_WAIT_MAX, Connection::open(&args)).await {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(e)) => Err(format!(
            "no RabbitMQ server answers at {shown}: {}",
            e.to_string().lines().next().unwrap_or_default()
        )),
        Err(_) => Err(format!(
            "no RabbitMQ server answers at {shown} within {} s",
            CONNECT_WAIT_MAX.as_secs()
        )),
    }
}

/// Whether a RabbitMQ server answers at `url` (a connection opened and closed); the error is
/// one line, the password hidden.
pub fn ping(url: &str) -> Result<(), String> {
    let endpoint = parse(url)?;
    let shown = redacted(url);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no async runtime: {e}"))?;
    rt.block_on(async {
        let connection = open(&endpoint, &shown, "leasehold-ping").await?;
        let _ = connection.close().await;
        Ok(())
    })
}
