//! deputy's MCP front door: `deputy mcp-server` speaks MCP over stdio (or Streamable
//! HTTP with `--listen`) and offers the tools `codex` (start a session, run its first turn) and
//! `codex-reply` (run the next turn), wire-compatible with Codex's server,
//! `review` (review a change in a git repository), and the conversation tools
//! (create, send, stream with catch-up, list).
//!
//! Architecture invariant: no agent logic here — this crate translates
//! `tools/call` into engine ops and engine events into `codex/event`
//! notifications, elicitations and progress.

// Code here runs on the async runtime: no blocking std calls (see clippy.toml); test
// code may block (its fixtures are files).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod compat;
mod framed;
mod http;
mod log_tags;
mod mrtr;
mod progress;
#[cfg(test)]
mod random_input;
mod review_tool;
mod server;
mod tool_catalogue;
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
use deputy_jsonrpc::QueueBounds;
use deputy_jsonrpc::transport::{Limits, MessageTransport};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

pub use http::{HttpOptions, MCP_PATH, run_http_server};
pub use server::DeputyServer;

/// How long in-flight calls get to deliver their last messages after the client left.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What one connection may hold: messages of up to 16 MiB in — generous for real use:
/// a million-token context window is about 4 MiB of text, so even a prompt that fills
/// the largest model's context four times over fits, and it is rmcp's own limit for
/// stdio and SSE — and up to 32 messages waiting to go out.
pub const LIMITS: Limits = Limits {
    max_message_bytes: 16 * 1024 * 1024,
    queue: QueueBounds {
        messages: 32,
        bytes: usize::MAX,
    },
};

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
    let transport = MessageTransport::stdio(LIMITS);
    let closing = CancellationToken::new();
    let connection = serve_connection(
        manager.clone(),
        Arc::new(layers),
        transport,
        closing.clone(),
    );
    let mut connection = std::pin::pin!(connection);
    let mut stop = std::pin::pin!(stop);
    let signal = tokio::select! {
        served = &mut connection => {
            served?;
            None
        }
        signal = &mut stop => Some(signal),
    };
    manager.shutdown_all().await;
    if let Some(signal) = signal {
        // Told to stop: the commands are dead and the sessions closed; the client is
        // not waited for.
        closing.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
        return Ok(128 + signal);
    }
    Ok(0)
}

/// Serves MCP to one client on `transport`, over `manager`'s threads (which the
/// listener owns), until the client's input ends or `closing` is cancelled; in-flight
/// calls are then cancelled (their turns interrupted) and get a moment to finish.
pub async fn serve_connection(
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    transport: MessageTransport,
    closing: CancellationToken,
) -> anyhow::Result<()> {
    let framed = framed::start(transport, LIMITS.max_message_bytes);
    let input_closed = framed.input_closed.clone();
    let server = DeputyServer::new(manager, layers, input_closed.clone());
    // The adapter lets only `ping`, discovery and what opens a session through
    // before the session exists, so the handshake fails only when the client leaves first.
    let served = tokio::select! {
        served = server.serve(framed.transport.into_compat()) => served,
        () = closing.cancelled() => return Ok(()),
    };
    let running = match served {
        Ok(running) => running,
        Err(err) if input_closed.is_cancelled() => {
            tracing::debug!("the client left before initializing: {err}");
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, framed.output_done).await;
            return Ok(());
        }
        Err(err) => return Err(err).context("MCP handshake failed"),
    };
    let cancel = running.cancellation_token();
    let service = tokio::spawn(running.waiting());
    tokio::select! {
        () = input_closed.cancelled() => {}
        () = closing.cancelled() => {}
    }
    // rmcp cancels what is still running once its input ends; when the listener
    // closes the connection instead, it is told to.
    cancel.cancel();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, service).await;
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, framed.output_done).await;
    Ok(())
}
