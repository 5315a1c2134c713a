//! deputy's MCP front door: `deputy mcp-server` speaks MCP over stdio and
//! offers the tools `codex` (start a session, run its first turn) and
//! `codex-reply` (run the next turn), wire-compatible with Codex's server,
//! `review` (review a change in a git repository), and the conversation tools
//! (create, send, stream with catch-up, list).
//!
//! Architecture invariant: no agent logic here — this crate translates
//! `tools/call` into engine ops and engine events into `codex/event`
//! notifications, elicitations and progress.

mod handshake;
mod inbound;
mod line_reader;
mod output;
mod oversize;
mod progress;
#[cfg(test)]
mod random_input;
mod request_ids;
mod review_tool;
mod server;
mod stdio;
mod tool_catalogue;
mod transport;
mod turn_runner;
mod user_input;
mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deputy_core::ThreadManager;
use deputy_core::config::ConfigLayers;
use deputy_core::rollout::SessionSource;
use rmcp::ServiceExt;

pub use server::DeputyServer;

/// How long in-flight calls get to deliver their last messages after the client left.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Serves MCP on stdin/stdout until the client closes stdin or `stop` resolves (with a
/// terminating signal's number), then stops every turn (killing its commands) and
/// returns the exit code: 0, or `128 + signal`.
pub async fn run_stdio_server(
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    stop: impl std::future::Future<Output = i32>,
) -> anyhow::Result<i32> {
    // Fail early on a broken config.toml, with its file/line message.
    layers.load().context("loading configuration")?;
    let manager = Arc::new(ThreadManager::new(sandbox_launcher, SessionSource::Mcp));
    let relay = stdio::start(tokio::io::stdin(), tokio::io::stdout());
    let input_closed = relay.input_closed.clone();
    let server = DeputyServer::new(manager.clone(), layers, input_closed.clone());
    // The relay lets only `ping` and `initialize` through before the session
    // exists, so the handshake fails only when the client leaves first.
    let mut stop = std::pin::pin!(stop);
    let served = tokio::select! {
        served = server.serve(relay.transport) => served,
        signal = &mut stop => {
            manager.shutdown_all().await;
            return Ok(128 + signal);
        }
    };
    let running = match served {
        Ok(running) => running,
        Err(err) if input_closed.is_cancelled() => {
            tracing::debug!("the client left before initializing: {err}");
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, relay.output_done).await;
            return Ok(0);
        }
        Err(err) => return Err(err).context("MCP handshake failed"),
    };
    let service = tokio::spawn(async move { running.waiting().await });
    let signal = tokio::select! {
        () = input_closed.cancelled() => None,
        signal = &mut stop => Some(signal),
    };
    manager.shutdown_all().await;
    if let Some(signal) = signal {
        // Told to stop: the commands are dead and the sessions closed; the client is
        // not waited for.
        return Ok(128 + signal);
    }
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, service).await;
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, relay.output_done).await;
    Ok(0)
}
