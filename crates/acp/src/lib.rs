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

mod agent;
mod approver;
mod history;
mod input;
mod modes;
mod prompt;
mod sessions;
mod translate;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, InitializeRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, ConnectTo, Stdio, on_receive_notification, on_receive_request};
use deputy_core::ThreadManager;
use deputy_core::config::{ConfigError, ConfigLayers};
use deputy_core::rollout::SessionSource;

use crate::agent::AcpAgent;

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
    Ok(serve(Stdio::new(), layers, sandbox_launcher, stop).await)
}

/// Serves ACP over `transport` until it ends (0) or `stop` resolves with a signal
/// number (`128 + signal`).
pub async fn serve(
    transport: impl ConnectTo<Agent>,
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    stop: impl Future<Output = i32>,
) -> i32 {
    let manager = Arc::new(ThreadManager::new(sandbox_launcher, SessionSource::Acp));
    let agent = Arc::new(AcpAgent::new(manager.clone(), layers));
    let connection = connection(agent, transport);
    let signal = tokio::select! {
        ended = connection => {
            if let Err(err) = ended {
                tracing::warn!("the ACP connection ended with an error: {err}");
            }
            None
        }
        signal = stop => Some(signal),
    };
    // The client left, or deputy was told to stop: stop every thread, killing commands.
    manager.shutdown_all().await;
    signal.map_or(0, |signal| 128 + signal)
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
