//! deputy's editor front door: `deputy acp` is an Agent Client Protocol (version 1) agent
//! on stdio, built on the official `agent-client-protocol` crate, over the same engine,
//! threads and sessions as the other front doors. An ACP session is a deputy thread.
//!
//! - `agent`: the answers to the client's requests (handshake, authentication, sessions,
//!   prompts, cancellation, modes, the model choice); `sessions`: the connection's
//!   sessions and their running prompts.
//! - `prompt`: one prompt through the driver; `input`: what a prompt's content blocks
//!   and slash commands ask for; `history`: `session/load`'s replay.
//! - `translate`: **the one mapping** of engine events to `session/update`s;
//!   `approver`: approvals as `session/request_permission`; `modes`: approval presets
//!   as session modes, and the model option.
//!
//! Architecture invariant: no agent logic here — this crate translates requests into
//! engine calls and engine events into session updates; stdout carries protocol
//! messages only.

// Code here runs on the async runtime: no blocking std calls (see clippy.toml); test
// code may block (its fixtures are files).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod agent;
mod approver;
mod client_servers;
mod history;
mod input;
mod modes;
mod prompt;
mod sessions;
mod translate;

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, InitializeRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, ConnectTo, Lines, on_receive_notification, on_receive_request};
use deputy_core::ThreadManager;
use deputy_core::config::{ConfigError, ConfigLayers};
use deputy_core::rollout::SessionSource;
use deputy_jsonrpc::outgoing::Outgoing;
use deputy_jsonrpc::transport::{FrameReader, Limits, MessageTransport};
use deputy_jsonrpc::{Dialect, Frame, JsonRpcError, OutputQueue, QueueBounds, RequestId, oversize};
use futures::{Sink, Stream};
use tokio_util::sync::CancellationToken;

use crate::agent::AcpAgent;

/// What one connection may hold: messages of up to 16 MiB in (an editor may send a
/// whole file as a resource), up to 1,024 messages and 16 MiB waiting to go out.
pub const LIMITS: Limits = Limits {
    max_message_bytes: 16 * 1024 * 1024,
    queue: QueueBounds {
        messages: 1024,
        bytes: 16 * 1024 * 1024,
    },
};

/// Why the agent could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// config.toml (or a `-c` override) does not load.
    #[error("loading configuration: {0}")]
    Config(#[from] ConfigError),
}

/// Serves ACP on stdin/stdout until the client closes stdin (then returns 0) or `stop`
/// resolves with a signal number (then returns `128 + signal`); either way every turn
/// is stopped and its commands killed first.
pub async fn run_stdio_agent(
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    stop: impl Future<Output = i32>,
) -> Result<i32, ServeError> {
    // Fail early on a broken config.toml, with its file/line message.
    layers.load()?;
    let manager = Arc::new(ThreadManager::new(sandbox_launcher, SessionSource::Acp));
    let transport = MessageTransport::stdio(LIMITS);
    let closing = CancellationToken::new();
    let connection = serve_connection(
        manager.clone(),
        Arc::new(layers),
        transport,
        closing.clone(),
    );
    let mut connection = std::pin::pin!(connection);
    let signal = tokio::select! {
        () = &mut connection => None,
        signal = stop => Some(signal),
    };
    // The client left, or deputy was told to stop: stop every thread, killing commands.
    manager.shutdown_all().await;
    if signal.is_some() {
        closing.cancel();
        connection.await;
    }
    Ok(signal.map_or(0, |signal| 128 + signal))
}

/// Serves ACP to one client on `transport`, over `manager`'s threads (which the listener
/// owns), until the client's input ends or `closing` is cancelled; then writes out what
/// is queued.
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
    let agent = Arc::new(AcpAgent::new(manager, (*layers).clone()));
    let lines = Lines::new(
        outgoing_lines(output.clone()),
        incoming_lines(input, Outgoing::new(output, Dialect::JsonRpc2), closing),
    );
    if let Err(err) = connection(agent, lines).await {
        tracing::warn!("the ACP connection ended with an error: {err}");
    }
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
}

/// How long what is queued for the client gets to go out once the connection ended.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// The SDK's messages into the connection's output queue.
fn outgoing_lines(output: OutputQueue) -> impl Sink<String, Error = io::Error> + Send + 'static {
    futures::sink::unfold(output, async |output, line: String| {
        output
            .send(line)
            .await
            .map_err(|closed| io::Error::new(io::ErrorKind::BrokenPipe, closed))?;
        Ok(output)
    })
}

/// The client's messages for the SDK. A message over the limit, or one that is not
/// UTF-8, is answered here and never reaches it; the stream ends with the input or once
/// `closing` is cancelled.
fn incoming_lines(
    input: FrameReader,
    answers: Outgoing,
    closing: CancellationToken,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::unfold(
        (input, answers, closing),
        async |(mut input, answers, closing)| loop {
            let frame = tokio::select! {
                () = closing.cancelled() => return None,
                frame = input.next() => frame,
            };
            let refusal = match frame {
                Ok(Some(Frame::Whole(bytes))) => match String::from_utf8(bytes) {
                    Ok(line) => return Some((Ok(line), (input, answers, closing))),
                    Err(err) => (
                        None,
                        JsonRpcError::new(
                            deputy_jsonrpc::error_codes::PARSE_ERROR,
                            format!("Parse error: the line is not UTF-8 ({})", err.utf8_error()),
                        ),
                    ),
                },
                Ok(Some(Frame::Oversize(over))) => match oversize::read_edges(&over) {
                    oversize::OversizeKind::Response => continue,
                    oversize::OversizeKind::Request(id) => (
                        id.and_then(|id| serde_json::from_str::<RequestId>(id.get()).ok()),
                        JsonRpcError::invalid_request(format!(
                            "Invalid request: {}",
                            oversize::too_large(over.len, LIMITS.max_message_bytes)
                        )),
                    ),
                },
                Ok(None) => return None,
                Err(err) => return Some((Err(err), (input, answers, closing))),
            };
            let (id, error) = refusal;
            tracing::warn!("{}", error.message);
            answers.error(id, error).await;
        },
    )
}

/// The connection: each client method handed to the agent.
async fn connection(
    agent: Arc<AcpAgent>,
    transport: impl ConnectTo<Agent>,
) -> Result<(), agent_client_protocol::Error> {
    // Each handler owns a handle on the agent.
    let a = || agent.clone();
    Agent
        .v1()
        .name("deputy")
        .on_receive_request(
            {
                let agent = a();
                async move |request: InitializeRequest, responder, _cx| {
                    agent.initialize(request, responder)
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = a();
                async move |request: AuthenticateRequest, responder, _cx| {
                    agent.authenticate(request, responder)
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = a();
                async move |request: NewSessionRequest, responder, cx| {
                    agent.new_session(request, responder, cx).await
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = a();
                async move |request: LoadSessionRequest, responder, cx| {
                    agent.load_session(request, responder, cx)
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = a();
                async move |request: PromptRequest, responder, cx| {
                    agent.prompt(request, responder, cx)
                }
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            {
                let agent = a();
                async move |notification: CancelNotification, _cx| agent.cancel(&notification)
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            {
                let agent = a();
                async move |request: SetSessionModeRequest, responder, cx| {
                    agent.set_mode(request, responder, cx)
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let agent = a();
                async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                    agent.set_config_option(request, responder)
                }
            },
            on_receive_request!(),
        )
        .connect_to(transport)
        .await
}
