//! The MCP servers of this process: one per name and definition, whatever the number of
//! threads using it. A thread holds a [`Lease`] on each of its servers; the server stops
//! when the last lease is released (the thread ended) and a later thread starts it afresh.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::server::McpServer;
use crate::config::McpServerConfig;
use crate::sync::lock;

/// A running (or starting) server and how many leases it has.
struct Entry {
    server: Arc<McpServer>,
    leases: usize,
}

type Key = (String, McpServerConfig);

fn pool() -> &'static Mutex<HashMap<Key, Entry>> {
    static POOL: OnceLock<Mutex<HashMap<Key, Entry>>> = OnceLock::new();
    POOL.get_or_init(Mutex::default)
}

/// One thread's hold on a server.
pub(crate) struct Lease {
    pub(crate) server: Arc<McpServer>,
    /// The lease's id in the server's links (its roots).
    id: u64,
    released: bool,
}

/// The server `name` defined by `config`, shared with every thread that defines it the
/// same way; `roots` are the thread's, for `roots/list`.
pub(crate) async fn acquire(
    name: &str,
    config: &McpServerConfig,
    launcher: Option<PathBuf>,
    roots: Vec<PathBuf>,
) -> Lease {
    let server = {
        let mut pool = lock(pool());
        let entry = pool
            .entry((name.to_string(), config.clone()))
            .or_insert_with(|| Entry {
                server: Arc::new(McpServer::new(name.to_string(), config.clone(), launcher)),
                leases: 0,
            });
        entry.leases += 1;
        entry.server.clone()
    };
    let id = server.links.next_id();
    if server.links.set_roots(id, roots) {
        server.roots_changed().await;
    }
    Lease {
        server,
        id,
        released: false,
    }
}

impl Lease {
    /// Lets go of the server; stops it when this was the last lease.
    pub(crate) async fn release(mut self) {
        self.released = true;
        if let Some(server) = self.let_go() {
            server.stop().await;
        } else if self.server.links.remove_roots(self.id) {
            self.server.roots_changed().await;
        }
    }

    /// Takes the lease out of the pool; the server when it was the last one.
    fn let_go(&self) -> Option<Arc<McpServer>> {
        let mut pool = lock(pool());
        let key = (self.server.name.clone(), self.server.config.clone());
        let entry = pool.get_mut(&key)?;
        if !Arc::ptr_eq(&entry.server, &self.server) {
            return None;
        }
        entry.leases -= 1;
        if entry.leases > 0 {
            return None;
        }
        pool.remove(&key).map(|entry| entry.server)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Dropped without `release` (a thread torn down abruptly): stop it in the background
        // where a runtime still runs; otherwise its process goes when deputy does (the
        // launcher dies with it).
        if let Some(server) = self.let_go()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { server.stop().await });
        }
    }
}
