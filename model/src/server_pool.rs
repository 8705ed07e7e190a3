//! Private servers for server-backed backends (`--spawn`): a pool lends one server at a time
//! to each run, so that a broker restart in one run of a campaign never disturbs another. A run
//! takes a free server, or starts one when none is free, and gives it back when its backend is
//! dropped. Each backend crate names its server type; the lending is written once, here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A server process a backend starts, restarts and stops itself.
pub trait PrivateServer: Send + 'static {
    /// Starts a fresh server; the error is one line.
    fn start() -> Result<Self, String>
    where
        Self: Sized;

    /// Broker restarts this server went through.
    fn restarts(&self) -> u64;

    /// Whether a server coming back to the pool may be lent again (a server that died, or
    /// whose files outgrew what a restart should reload, is replaced by a fresh one).
    fn reusable(&self) -> bool {
        true
    }
}

/// Private servers lent one at a time to each run. Clones share the pool.
pub struct ServerPool<S> {
    free: Arc<Mutex<Vec<S>>>,
    started: Arc<AtomicU64>,
    /// Restarts of the servers replaced so far.
    retired: Arc<AtomicU64>,
}

impl<S> Clone for ServerPool<S> {
    fn clone(&self) -> ServerPool<S> {
        ServerPool {
            free: self.free.clone(),
            started: self.started.clone(),
            retired: self.retired.clone(),
        }
    }
}

impl<S> Default for ServerPool<S> {
    fn default() -> ServerPool<S> {
        ServerPool {
            free: Arc::default(),
            started: Arc::default(),
            retired: Arc::default(),
        }
    }
}

impl<S> std::fmt::Debug for ServerPool<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPool")
            .field("started", &self.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<S: PrivateServer> ServerPool<S> {
    /// An empty pool (servers are started on demand).
    pub fn new() -> ServerPool<S> {
        ServerPool::default()
    }

    /// A free server that is [`PrivateServer::reusable`], else a fresh one; the error is one
    /// line.
    pub fn checkout(&self) -> Result<PooledServer<S>, String> {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let server = match free {
            Some(server) if server.reusable() => server,
            outgrown => {
                if let Some(outgrown) = outgrown {
                    self.retired
                        .fetch_add(outgrown.restarts(), Ordering::Relaxed);
                }
                let server = S::start()?;
                self.started.fetch_add(1, Ordering::Relaxed);
                server
            }
        };
        Ok(PooledServer {
            server: Some(server),
            pool: self.clone(),
        })
    }

    /// Servers started so far (at most one per concurrent run, plus those replaced).
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Broker restarts over the pool's servers (the lent ones count once they are back).
    pub fn restarts(&self) -> u64 {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.iter().map(S::restarts).sum::<u64>() + self.retired.load(Ordering::Relaxed)
    }

    /// Stops every free server (a server still lent stops when its run drops it after this).
    pub fn shutdown(&self) {
        let servers = std::mem::take(&mut *self.free.lock().unwrap_or_else(|e| e.into_inner()));
        drop(servers);
    }
}

/// A server lent by a [`ServerPool`]; it goes back to the pool when dropped.
pub struct PooledServer<S> {
    server: Option<S>,
    pool: ServerPool<S>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for PooledServer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PooledServer").field(&self.server).finish()
    }
}

impl<S> std::ops::Deref for PooledServer<S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.server.as_ref().expect("present until dropped")
    }
}

impl<S> Drop for PooledServer<S> {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.pool
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(server);
        }
    }
}
