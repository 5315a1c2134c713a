//! The MCP client: the tools of the MCP servers in `[mcp_servers]`, offered to the model.
//!
//! When a thread starts, its enabled servers are started in parallel, each within its
//! `startup_timeout_sec` (`mcp_startup_update` events, then `mcp_startup_complete`); the
//! thread's first turn waits for them, and interrupting it (or shutting the thread down)
//! stops those still starting (see `submission_loop`). A server that does not start is
//! skipped with a warning, unless it is `required`: then every turn of the thread fails,
//! saying why.
//! Servers are shared by the threads of this process that define them the same way
//! (`pool`), and stopped when the last of those threads ends. Each server's tools are one
//! tool of the thread's registry (`tool`), beside the three resource tools
//! (`resources`). The connection is the official `rmcp` client (`server`, `client`);
//! stdio servers run as contained processes (`process`).
//!
//! This is the engine reaching tools, as `client/` is the engine reaching the model: the
//! front doors never see MCP servers, only the items and events below.

mod approval;
mod client;
mod names;
mod output;
mod pool;
mod process;
mod resources;
mod schema;
mod server;
mod tool;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use deputy_protocol::{
    McpStartupCompleteEvent, McpStartupFailure, McpStartupStatus, McpStartupUpdateEvent,
    ThreadEventMsg, WarningEvent,
};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::event_log::EventLog;
use crate::tools::ThreadTools;

/// The MCP servers one thread uses.
#[derive(Default)]
pub(crate) struct ThreadServers {
    leases: tokio::sync::Mutex<Vec<pool::Lease>>,
}

impl std::fmt::Debug for ThreadServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadServers").finish_non_exhaustive()
    }
}

impl ThreadServers {
    /// Starts the thread's enabled servers (in parallel), reports their startup on `log`
    /// and adds their tools to `tools`. Returns why the thread's turns cannot run: a
    /// required server that did not start. Once `cancel` fires, the servers still starting
    /// are stopped and count as not started.
    pub(crate) async fn start(
        &self,
        config: &Config,
        log: &EventLog,
        tools: &ThreadTools,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let enabled: Vec<(&String, &crate::config::McpServerConfig)> = config
            .mcp_servers
            .iter()
            .filter(|(_, server)| server.enabled)
            .collect();
        if enabled.is_empty() {
            return None;
        }
        let publish = |msg| log.publish(None, "", msg);
        for (name, _) in &enabled {
            publish(ThreadEventMsg::McpStartupUpdate(McpStartupUpdateEvent {
                server: (*name).clone(),
                status: McpStartupStatus::Starting,
            }));
        }
        let mut roots: Vec<PathBuf> = vec![config.cwd.clone()];
        roots.extend(
            config
                .sandbox_workspace_write
                .writable_roots
                .iter()
                .cloned(),
        );
        let started = futures::future::join_all(enabled.iter().map(|(name, server)| {
            let roots = roots.clone();
            async move {
                let lease =
                    pool::acquire(name, server, config.sandbox_launcher.clone(), roots).await;
                // Dropping a start midway drops the process it spawned, which stops it
                // (`process::ServerProcess`); the server stays unstarted for a later call.
                let outcome = tokio::select! {
                    outcome = lease.server.ensure_started() => outcome,
                    () = cancel.cancelled() => Err("its start was interrupted".to_string()),
                };
                // Reported as each finishes, not when the slowest does.
                publish(ThreadEventMsg::McpStartupUpdate(McpStartupUpdateEvent {
                    server: (*name).clone(),
                    status: match &outcome {
                        Ok(_) => McpStartupStatus::Ready,
                        Err(error) => McpStartupStatus::Failed {
                            error: error.clone(),
                        },
                    },
                }));
                (lease, outcome)
            }
        }))
        .await;
        let mut complete = McpStartupCompleteEvent::default();
        let mut servers = BTreeMap::new();
        let mut leases = self.leases.lock().await;
        let mut failure = None;
        for (lease, outcome) in started {
            let name = lease.server.name.clone();
            servers.insert(name.clone(), lease.server.clone());
            match outcome {
                Ok(conn) => {
                    complete.ready.push(name);
                    if let Some(handler) = tool::ServerTools::new(
                        lease.server.clone(),
                        &conn.tools,
                        conn.instructions.as_deref(),
                    ) && let Err(err) = tools.add(Arc::new(handler))
                    {
                        publish(warning(format!(
                            "the tools of MCP server `{}` are not offered: {err}",
                            lease.server.name
                        )));
                    }
                }
                Err(error) => {
                    if lease.server.config.required {
                        failure.get_or_insert_with(|| {
                            format!("the required MCP server `{name}` did not start: {error}")
                        });
                    } else {
                        publish(warning(format!(
                            "MCP server `{name}` did not start, its tools are not offered: {error}"
                        )));
                    }
                    complete.failed.push(McpStartupFailure {
                        server: name,
                        error,
                    });
                }
            }
            leases.push(lease);
        }
        for handler in resources::Resources::all(servers) {
            if let Err(err) = tools.add(Arc::new(handler)) {
                tracing::warn!(%err, "an MCP resource tool is not offered");
            }
        }
        publish(ThreadEventMsg::McpStartupComplete(complete));
        failure
    }

    /// Lets go of the thread's servers (stopping those no other thread uses).
    pub(crate) async fn release(&self) {
        let leases = std::mem::take(&mut *self.leases.lock().await);
        futures::future::join_all(leases.into_iter().map(pool::Lease::release)).await;
    }
}

fn warning(message: String) -> ThreadEventMsg {
    ThreadEventMsg::Warning(WarningEvent { message })
}
