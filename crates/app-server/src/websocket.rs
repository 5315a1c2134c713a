//! `deputy app-server --listen ws://IP:PORT`: the same protocol over WebSocket, one
//! JSON-RPC message per text frame, as Codex's app-server offers it. Every connection
//! is a client of its own ([`serve_connection`]) over the threads of one
//! [`ThreadManager`], which this listener owns; who may connect is [`Access`]'s
//! decision (loopback, or the bearer token; browsers only from allowed origins).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use deputy_core::ThreadManager;
use deputy_core::config::ConfigLayers;
use deputy_core::rollout::SessionSource;
use deputy_jsonrpc::access::Access;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{LIMITS, ServeError, serve_connection};

/// Serves WebSocket clients on `addr` until `stop` resolves with a signal number, then
/// stops every thread (killing commands), lets each connection report it, and returns
/// `128 + signal`. `ready` is told the bound address (port 0 picks a free one).
pub async fn run_websocket_server(
    addr: SocketAddr,
    access: Access,
    layers: ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
    ready: impl FnOnce(SocketAddr),
    stop: impl Future<Output = i32>,
) -> Result<i32, ServeError> {
    // Fail early on a broken config.toml, with its file/line message.
    layers.load()?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|err| ServeError::Listen(format!("cannot listen on {addr}: {err}")))?;
    let bound = listener
        .local_addr()
        .map_err(|err| ServeError::Listen(format!("cannot listen on {addr}: {err}")))?;
    ready(bound);
    let manager = Arc::new(ThreadManager::new(
        sandbox_launcher,
        SessionSource::AppServer,
    ));
    let layers = Arc::new(layers);
    let access = Arc::new(access);
    let closing = CancellationToken::new();
    let mut connections = JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    let signal = loop {
        tokio::select! {
            signal = &mut stop => break signal,
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!("accepting a connection failed: {err}");
                        continue;
                    }
                };
                let (manager, layers, access, closing) =
                    (manager.clone(), layers.clone(), access.clone(), closing.clone());
                connections.spawn(async move {
                    // The handshake is the client's to finish; the server goes on meanwhile.
                    match deputy_jsonrpc::websocket::accept(socket, &access, LIMITS).await {
                        Ok(transport) => serve_connection(manager, layers, transport, closing).await,
                        Err(err) => tracing::debug!(%peer, "refused a connection: {err}"),
                    }
                });
            }
            // Reaps finished connections so that the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    };
    manager.shutdown_all().await;
    closing.cancel();
    while connections.join_next().await.is_some() {}
    Ok(128 + signal)
}
