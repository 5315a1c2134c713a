//! deputy's app-server front door: `deputy app-server` speaks Codex's app-server v2
//! protocol (JSON-RPC without the `"jsonrpc"` field, one message per line on stdio) over
//! the same engine, threads and sessions as `deputy mcp-server` and `deputy exec`.
//!
//! - [`protocol`]: every method, notification and server request, each name defined
//!   once with its params and result types; [`schema`] exports their JSON Schema.
//! - `server`: the handshake and the dispatch of requests to the engine.
//! - `follower`: one task per thread in use, reporting its events through the one
//!   translation (`translate`) and asking its approval questions through the driver's
//!   `ApprovalRouter`.
//! - [`serve_connection`]: one client on any message transport (stdio lines, or one
//!   WebSocket connection of [`run_websocket_server`]) over threads the listener owns;
//!   `outgoing`: the typed face of its bounded output queue; [`ListenAddress`]: where
//!   to serve (`--listen`).
//!
//! Architecture invariant: no agent logic here — this crate translates requests into
//! engine calls and engine events into notifications and server requests.

// Code here runs on the async runtime: no blocking std calls (see clippy.toml); test
// code may block (its fixtures are files).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod approver;
mod follower;
mod listen;
mod outgoing;
pub mod protocol;
#[cfg(test)]
mod random_input;
pub mod schema;
mod server;
mod shapes;
mod translate;
mod websocket;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use deputy_core::ThreadManager;
use deputy_core::config::{ConfigError, ConfigLayers};
use deputy_core::rollout::SessionSource;
use deputy_jsonrpc::transport::{FrameReader, Limits, MessageTransport};
use deputy_jsonrpc::{Frame, QueueBounds, oversize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::outgoing::Outgoing;
use crate::protocol::{IncomingMessage, JsonRpcError, Rejection, error_codes};
use crate::server::{Inbound, Server};

pub use listen::{ListenAddress, ListenError};
pub use schema::{SchemaError, write_json_schema};
pub use websocket::run_websocket_server;

/// How many client requests may wait for the dispatcher; beyond that the server answers
/// -32001 "Server overloaded; retry later."
const INBOUND_QUEUE: usize = 64;

/// How long thread followers get to report their threads' ends once the client left.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What one connection may hold: messages of up to 8 MiB in; up to 1,024 messages and
/// 16 MiB waiting to go out, whose back-pressure makes a thread's subscription lag and
/// catch up from the event log.
pub const LIMITS: Limits = Limits {
    max_message_bytes: 8 * 1024 * 1024,
    queue: QueueBounds {
        messages: 1024,
        bytes: 16 * 1024 * 1024,
    },
};

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// config.toml (or a `-c` override) does not load.
    #[error("loading configuration: {0}")]
    Config(#[from] ConfigError),
    /// The listening socket could not be opened.
    #[error("{0}")]
    Listen(String),
}

/// Serves the app-server protocol on stdin/stdout until the client closes stdin (then
/// returns 0) or `stop` resolves with a signal number (then returns `128 + signal`);
/// either way every turn is stopped and its commands killed first.
pub async fn run_stdio_server(
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    stop: impl Future<Output = i32>,
) -> Result<i32, ServeError> {
    // Fail early on a broken config.toml, with its file/line message.
    layers.load()?;
    let manager = Arc::new(ThreadManager::new(
        sandbox_launcher,
        SessionSource::AppServer,
    ));
    let transport = MessageTransport::stdio(LIMITS);
    Ok(serve_until(manager, Arc::new(layers), transport, stop).await)
}

/// Serves one connection until it ends (0) or `stop` resolves with a signal number
/// (`128 + signal`), then shuts every thread of `manager` down: the stdio server, whose
/// one client owns the process.
pub async fn serve_until(
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    transport: MessageTransport,
    stop: impl Future<Output = i32>,
) -> i32 {
    let closing = CancellationToken::new();
    let connection = serve_connection(manager.clone(), layers, transport, closing.clone());
    let mut connection = std::pin::pin!(connection);
    let signal = tokio::select! {
        () = &mut connection => None,
        signal = stop => Some(signal),
    };
    // The client left, or deputy was told to stop: stop every thread (killing the
    // commands), then let the connection report it and write out what it has.
    manager.shutdown_all().await;
    if signal.is_some() {
        closing.cancel();
        connection.await;
    }
    signal.map_or(0, |signal| 128 + signal)
}

/// Serves the app-server protocol to one client on `transport`, over `manager`'s
/// threads, which the listener owns: requests in arrival order until the client's input
/// ends or `closing` is cancelled; then the turns this client started are interrupted,
/// their ends reported, and what is queued written out.
pub async fn serve_connection(
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    transport: MessageTransport,
    closing: CancellationToken,
) {
    let MessageTransport {
        input,
        output,
        writer,
    } = transport;
    let outgoing = Outgoing::new(output);
    let (inbound_tx, mut inbound) = mpsc::channel(INBOUND_QUEUE);
    let reader = tokio::spawn(read_input(input, outgoing.clone(), inbound_tx));
    let (loaded_tx, mut loaded) = mpsc::unbounded_channel();
    let mut server = Server::new(manager, layers, outgoing, loaded_tx);
    // Requests in arrival order; threads being loaded report in between (see
    // `server/loading.rs`). Once the client is gone, loads under way still finish.
    let mut input_open = true;
    while input_open || server.loading() {
        tokio::select! {
            message = inbound.recv(), if input_open => match message {
                Some(message) => server.handle(message).await,
                None => input_open = false,
            },
            Some(done) = loaded.recv() => server.loaded(done).await,
            () = closing.cancelled(), if input_open => input_open = false,
        }
    }
    // Not waiting for a client that may still be writing.
    reader.abort();
    server.finish(SHUTDOWN_GRACE).await;
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
}

/// Reads the client's messages: answers to server requests are routed at once, requests
/// and notifications queued for the dispatcher, and frames that are not messages answered
/// with an error.
async fn read_input(mut input: FrameReader, outgoing: Outgoing, inbound: mpsc::Sender<Inbound>) {
    loop {
        let message = match input.next().await {
            Ok(Some(Frame::Whole(bytes))) => IncomingMessage::parse(&bytes),
            Ok(Some(Frame::Oversize(over))) => match oversize::read_edges(&over) {
                // An answer to one of our questions that nobody can read: the question
                // goes unanswered, and its timeout decides.
                oversize::OversizeKind::Response => continue,
                // Refused as a whole, without the id its edges may show (as the app-server
                // has always answered it).
                oversize::OversizeKind::Request(_) => Err(Rejection {
                    id: None,
                    error: JsonRpcError::invalid_request(format!(
                        "Invalid request: the message is {} bytes; the limit is {}",
                        over.len, LIMITS.max_message_bytes
                    )),
                }),
            },
            Ok(None) => break,
            Err(err) => {
                tracing::warn!("reading the client's messages failed: {err}");
                break;
            }
        };
        let queued = match message {
            Ok(IncomingMessage::Response { id, outcome }) => {
                if !outgoing.resolve(&id, outcome) {
                    tracing::debug!(%id, "an answer nobody waits for (late or unknown)");
                }
                continue;
            }
            Ok(IncomingMessage::Request { id, method, params }) => {
                inbound.try_send(Inbound::Request { id, method, params })
            }
            Ok(IncomingMessage::Notification { method }) => {
                inbound.try_send(Inbound::Notification { method })
            }
            Err(Rejection { id, error }) => {
                tracing::warn!("{}", error.message);
                inbound.try_send(Inbound::Reject { id, error })
            }
        };
        match queued {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(Inbound::Request { id, .. })) => {
                let overloaded = JsonRpcError::new(
                    error_codes::SERVER_OVERLOADED,
                    "Server overloaded; retry later.",
                );
                outgoing.error(Some(id), overloaded).await;
            }
            Err(mpsc::error::TrySendError::Full(Inbound::Reject { id, error })) => {
                outgoing.error(id, error).await;
            }
            Err(mpsc::error::TrySendError::Full(Inbound::Notification { method })) => {
                tracing::warn!(method, "dropped a notification: too many messages waiting");
            }
            Err(mpsc::error::TrySendError::Closed(_)) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_beyond_the_queue_are_answered_server_overloaded() {
        let (queue, mut written) = deputy_jsonrpc::OutputQueue::new(LIMITS.queue);
        let outgoing = Outgoing::new(queue);
        // A dispatcher that takes nothing: two requests fit, the third does not.
        let (inbound, _undispatched) = mpsc::channel(2);
        let input: String = (0..3)
            .map(|i| format!("{{\"id\":{i},\"method\":\"thread/list\"}}\n"))
            .collect();
        let frames = deputy_jsonrpc::transport::line_frames(std::io::Cursor::new(input), 1024);
        read_input(frames, outgoing, inbound).await;
        let answer = written.recv().await.unwrap();
        assert_eq!(
            answer.text,
            r#"{"id":2,"error":{"code":-32001,"message":"Server overloaded; retry later."}}"#
        );
        assert!(written.recv().await.is_none(), "one answer only");
    }
}
