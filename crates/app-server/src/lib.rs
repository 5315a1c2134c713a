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
//! - `transport`, `outgoing`: bounded framing and queues; [`ListenAddress`]: where to
//!   serve (`--listen`).
//!
//! Architecture invariant: no agent logic here — this crate translates requests into
//! engine calls and engine events into notifications and server requests.

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
mod transport;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use deputy_core::ThreadManager;
use deputy_core::config::{ConfigError, ConfigLayers};
use deputy_core::rollout::SessionSource;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;

use crate::outgoing::{OUTGOING_BYTES, OUTGOING_QUEUE, Outgoing};
use crate::protocol::{IncomingMessage, JsonRpcError, Rejection, error_codes};
use crate::server::{Inbound, Server};
use crate::transport::{Line, LineReader, MAX_LINE_BYTES};

pub use listen::{ListenAddress, ListenError};
pub use schema::{SchemaError, write_json_schema};

/// How many client requests may wait for the dispatcher; beyond that the server answers
/// -32001 "Server overloaded; retry later."
const INBOUND_QUEUE: usize = 64;

/// How long thread followers get to report their threads' ends once the client left.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// config.toml (or a `-c` override) does not load.
    #[error("loading configuration: {0}")]
    Config(#[from] ConfigError),
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
    Ok(serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        layers,
        sandbox_launcher,
        stop,
    )
    .await)
}

/// Serves the app-server protocol on any reader and writer until the input ends (0) or
/// `stop` resolves with a signal number (`128 + signal`).
pub async fn serve(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    stop: impl Future<Output = i32>,
) -> i32 {
    let manager = Arc::new(ThreadManager::new(
        sandbox_launcher,
        SessionSource::AppServer,
    ));
    let (outgoing, queue) = Outgoing::new(OUTGOING_QUEUE, OUTGOING_BYTES);
    let writer = tokio::spawn(transport::write_messages(output, queue));
    let (inbound_tx, mut inbound) = mpsc::channel(INBOUND_QUEUE);
    let reader = tokio::spawn(read_input(input, outgoing.clone(), inbound_tx));
    let (loaded_tx, mut loaded) = mpsc::unbounded_channel();
    let mut server = Server::new(manager.clone(), layers, outgoing, loaded_tx);
    let dispatch = async {
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
            }
        }
    };
    let signal = tokio::select! {
        () = dispatch => None,
        signal = stop => Some(signal),
    };
    // The client left, or deputy was told to stop: stop every thread (killing the
    // commands), let the followers report it.
    manager.shutdown_all().await;
    server.finish(SHUTDOWN_GRACE).await;
    match signal {
        None => {
            let _ = reader.await;
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
            0
        }
        Some(signal) => {
            // Not waiting for a client that may still be writing.
            reader.abort();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
            128 + signal
        }
    }
}

/// Reads the client's messages: answers to server requests are routed at once, requests
/// and notifications queued for the dispatcher, and lines that are not messages answered
/// with an error.
async fn read_input(
    input: impl AsyncRead + Unpin,
    outgoing: Outgoing,
    inbound: mpsc::Sender<Inbound>,
) {
    let mut lines = LineReader::new(BufReader::new(input), MAX_LINE_BYTES);
    loop {
        let message = match lines.next_line().await {
            Ok(Some(Line::Message(bytes))) => IncomingMessage::parse(&bytes),
            Ok(Some(Line::TooLong(len))) => Err(Rejection {
                id: None,
                error: JsonRpcError::invalid_request(format!(
                    "Invalid request: the message is {len} bytes; the limit is {MAX_LINE_BYTES}"
                )),
            }),
            Ok(None) => break,
            Err(err) => {
                tracing::warn!("reading stdin failed: {err}");
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
        let (outgoing, mut written) = Outgoing::new(16, 1 << 20);
        // A dispatcher that takes nothing: two requests fit, the third does not.
        let (inbound, _undispatched) = mpsc::channel(2);
        let input: String = (0..3)
            .map(|i| format!("{{\"id\":{i},\"method\":\"thread/list\"}}\n"))
            .collect();
        read_input(input.as_bytes(), outgoing, inbound).await;
        let answer = written.recv().await.unwrap();
        assert_eq!(
            answer.line,
            r#"{"id":2,"error":{"code":-32001,"message":"Server overloaded; retry later."}}"#
        );
        assert!(written.recv().await.is_none(), "one answer only");
    }
}
