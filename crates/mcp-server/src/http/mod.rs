//! `deputy mcp-server --listen ADDR`: MCP over Streamable HTTP at `/mcp`, on rmcp's
//! server transport (sessions, SSE, resumption, the stateless 2026-07-28 path), behind a
//! guard that applies deputy's rules before rmcp sees a request: who may connect
//! ([`Access`]: loopback or the bearer token, browsers only from allowed origins) and
//! how large a body may be (the stdio limit; a larger one is answered with a JSON-RPC
//! error under its id, found at either end as on stdio).
//!
//! The listener owns the [`ThreadManager`]: every session, and every stateless request,
//! is a [`DeputyServer`] over the same threads, so any client can reach any thread.
//! Nothing here is built until `--listen` is given: the stdio server never pays for it.

mod guard;
mod log_events;
mod sessions;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deputy_core::ThreadManager;
use deputy_core::config::ConfigLayers;
use deputy_core::rollout::SessionSource;
use deputy_jsonrpc::access::Access;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::log_tags::LogTags;
use crate::mrtr::Mrtr;
use crate::server::DeputyServer;
use crate::{LIMITS, SHUTDOWN_GRACE};
use guard::Guard;
use log_events::LogEvents;
use sessions::CompatSessions;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How a listening MCP server is set up.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (port 0: any free port).
    pub addr: SocketAddr,
    /// Who may connect.
    pub access: Access,
    /// How long a session may go without a message either way before it is closed.
    pub idle_session: Duration,
}

/// Serves MCP over Streamable HTTP until `stop` resolves with a signal number, then
/// stops every thread (killing commands), closes every session and returns
/// `128 + signal`. `ready` is told the bound address once connections are accepted.
pub async fn run_http_server(
    options: HttpOptions,
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    ready: impl FnOnce(SocketAddr),
    stop: impl Future<Output = i32>,
) -> anyhow::Result<i32> {
    // Fail early on a broken config.toml, with its file/line message.
    layers.load().context("loading configuration")?;
    let listener = TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let bound = listener
        .local_addr()
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let manager = Arc::new(ThreadManager::new(sandbox_launcher, SessionSource::Mcp));
    let layers = Arc::new(layers);
    let shutdown = CancellationToken::new();
    let app = router(&options, bound, manager.clone(), layers, shutdown.clone());
    ready(bound);
    let serving = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .into_future();
    let mut serving = std::pin::pin!(serving);
    let signal = tokio::select! {
        served = &mut serving => {
            served.context("serving HTTP")?;
            None
        }
        signal = stop => Some(signal),
    };
    manager.shutdown_all().await;
    shutdown.cancel();
    // Open streams are closed by rmcp once told; a client that keeps its connection
    // is not waited for longer than this.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, serving).await;
    Ok(signal.map_or(0, |signal| 128 + signal))
}

/// The HTTP application: the guard, then rmcp's Streamable HTTP service at `/mcp`.
fn router(
    options: &HttpOptions,
    bound: SocketAddr,
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    shutdown: CancellationToken,
) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(LIMITS.max_message_bytes)
        .with_allowed_origins(options.access.allowed_origins())
        .enforce_origin_validation();
    // On loopback, rmcp also checks `Host` against loopback names (DNS rebinding);
    // elsewhere clients name the server as they reach it, and the token guards it.
    if !bound.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let client_gone = shutdown.child_token();
    let paused = Arc::new(Mrtr::new(layers.deputy_home.clone()));
    let tags = Arc::new(LogTags::default());
    let events = Arc::new(LogEvents::new(
        manager.clone(),
        tags.clone(),
        options.idle_session,
    ));
    let service = StreamableHttpService::new(
        move || {
            Ok(
                DeputyServer::new(manager.clone(), layers.clone(), client_gone.clone())
                    .sharing_paused_calls(paused.clone())
                    .tagging_events(tags.clone())
                    .with_spec_unknown_tool_errors(),
            )
        },
        Arc::new(CompatSessions::new(options.idle_session, events)),
        config,
    );
    let guard = Arc::new(Guard::new(options.access.clone(), LIMITS.max_message_bytes));
    axum::Router::new()
        .route_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}
