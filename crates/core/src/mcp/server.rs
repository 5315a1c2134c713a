//! One MCP server as this process runs it: connected on first use, shared by every thread
//! whose configuration defines it the same way, restarted once after it dies, stopped by
//! its pool when the last thread lets go.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject, PaginatedRequestParams,
    ReadResourceRequestParams, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::AsyncReadExt;

use super::client::{DeputyClient, Links};
use super::process::{self, StdioSpec};
use crate::config::{McpServerConfig, McpServerTransport};
use crate::sync::lock;

/// How long a server that failed to start may keep its stderr open before its failure is
/// reported without the rest of it.
const STDERR_DRAIN: Duration = Duration::from_secs(2);
/// Bytes of a server's stderr kept to explain why it failed.
const STDERR_TAIL_BYTES: usize = 4096;
/// How long closing a connection may take (a last message, an HTTP session's end).
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// One configured server.
pub(crate) struct McpServer {
    /// Its name in the configuration.
    pub(crate) name: String,
    /// Its definition.
    pub(crate) config: McpServerConfig,
    /// deputy's own binary, which contains the server's process.
    launcher: Option<PathBuf>,
    /// What its connection's handler shares with deputy.
    pub(crate) links: Arc<Links>,
    state: tokio::sync::Mutex<State>,
}

enum State {
    /// Not started yet.
    Idle,
    Running(Arc<Connection>),
    /// It died; the next call restarts it (once: a failed restart makes it unavailable).
    Died(String),
    /// It could not be started: its tools say so.
    Unavailable(String),
}

/// A live connection to the server.
pub(crate) struct Connection {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, DeputyClient>>>,
    peer: Peer<RoleClient>,
    /// Its tools, as it listed them when it started.
    pub(crate) tools: Vec<Tool>,
    /// Its `initialize` instructions.
    pub(crate) instructions: Option<String>,
    /// The end of its stderr (stdio servers).
    stderr_tail: Arc<std::sync::Mutex<String>>,
    /// Its process (stdio servers), stopped with the connection.
    process: tokio::sync::Mutex<Option<process::ServerProcess>>,
}

/// Why a call got no result.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The server could not be reached (not started, died, restart failed).
    Unavailable(String),
    /// The server died during the call; the next call restarts it.
    Died(String),
    /// The server answered with an error.
    Server(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(why) | Self::Died(why) | Self::Server(why) => f.write_str(why),
        }
    }
}

impl McpServer {
    /// A server not started yet.
    pub(crate) fn new(name: String, config: McpServerConfig, launcher: Option<PathBuf>) -> Self {
        Self {
            name,
            config,
            launcher,
            links: Arc::default(),
            state: tokio::sync::Mutex::new(State::Idle),
        }
    }

    /// The running connection, started (within the startup timeout) if it is not yet; a
    /// server that failed to start stays failed.
    pub(crate) async fn ensure_started(&self) -> Result<Arc<Connection>, String> {
        let mut state = self.state.lock().await;
        match &*state {
            State::Running(conn) => Ok(conn.clone()),
            State::Unavailable(why) => Err(why.clone()),
            State::Idle | State::Died(_) => {
                let started = self.connect().await;
                *state = match &started {
                    Ok(conn) => State::Running(conn.clone()),
                    Err(why) => State::Unavailable(why.clone()),
                };
                started
            }
        }
    }

    /// The connection a call uses: the running one; after a death, a new one (the restart).
    async fn connection_for_call(&self) -> Result<Arc<Connection>, CallError> {
        let mut state = self.state.lock().await;
        match &*state {
            State::Running(conn) if !conn.peer.is_transport_closed() => return Ok(conn.clone()),
            State::Running(_) | State::Died(_) | State::Idle => {}
            State::Unavailable(why) => return Err(CallError::Unavailable(why.clone())),
        }
        let died = match &*state {
            State::Running(conn) => {
                conn.stop().await;
                "it exited".to_string()
            }
            State::Died(why) => why.clone(),
            State::Idle | State::Unavailable(_) => "it was not started".to_string(),
        };
        tracing::info!(server = %self.name, "restarting the MCP server");
        match self.connect().await {
            Ok(conn) => {
                *state = State::Running(conn.clone());
                Ok(conn)
            }
            Err(why) => {
                let why = format!("{died}, and restarting it failed: {why}");
                *state = State::Unavailable(why.clone());
                Err(CallError::Unavailable(why))
            }
        }
    }

    /// Notes that `conn` died (if it is still the current connection).
    async fn mark_died(&self, conn: &Arc<Connection>, why: &str) {
        let mut state = self.state.lock().await;
        if matches!(&*state, State::Running(current) if Arc::ptr_eq(current, conn)) {
            conn.stop().await;
            *state = State::Died(why.to_string());
        }
    }

    /// Calls `tool` with `arguments`; a server that died is restarted first.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, CallError> {
        let conn = self.connection_for_call().await?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        // Dropping this future (a timeout, a stopped turn) sends `notifications/cancelled`.
        match conn.peer.call_tool_once(params).await {
            Ok(CallToolResponse::Complete(result)) => Ok(result),
            Ok(_) => Err(CallError::Server(
                "the server answered in a form deputy does not support (a task or a \
                 request for more input)"
                    .into(),
            )),
            Err(err) => Err(self.failure(&conn, err).await),
        }
    }

    /// `resources/list` (one page).
    pub(crate) async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<rmcp::model::ListResourcesResult, CallError> {
        let conn = self.connection_for_call().await?;
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        match conn.peer.list_resources(Some(params)).await {
            Ok(result) => Ok(result),
            Err(err) => Err(self.failure(&conn, err).await),
        }
    }

    /// `resources/templates/list` (one page).
    pub(crate) async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, CallError> {
        let conn = self.connection_for_call().await?;
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        match conn.peer.list_resource_templates(Some(params)).await {
            Ok(result) => Ok(result),
            Err(err) => Err(self.failure(&conn, err).await),
        }
    }

    /// `resources/read`.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<rmcp::model::ReadResourceResult, CallError> {
        let conn = self.connection_for_call().await?;
        match conn
            .peer
            .read_resource(ReadResourceRequestParams::new(uri.to_string()))
            .await
        {
            Ok(result) => Ok(result),
            Err(err) => Err(self.failure(&conn, err).await),
        }
    }

    /// What a failed request means: the server's error, or its death.
    async fn failure(&self, conn: &Arc<Connection>, err: ServiceError) -> CallError {
        match err {
            ServiceError::McpError(error) => CallError::Server(error.message.to_string()),
            err @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                // Give its output a moment to arrive: it usually says why.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let why = with_stderr(format!("it exited during the call ({err})"), conn);
                self.mark_died(conn, &why).await;
                CallError::Died(why)
            }
            other => CallError::Server(other.to_string()),
        }
    }

    /// Tells the server its roots changed (when it is running).
    pub(crate) async fn roots_changed(&self) {
        let conn = match &*self.state.lock().await {
            State::Running(conn) => conn.clone(),
            _ => return,
        };
        let _ = conn.peer.notify_roots_list_changed().await;
    }

    /// Stops the server (its process, for a stdio one).
    pub(crate) async fn stop(&self) {
        let mut state = self.state.lock().await;
        if let State::Running(conn) = &*state {
            conn.stop().await;
        }
        *state = State::Unavailable("the server was stopped".into());
    }

    /// Starts the process or opens the session, and reads the server's tools, within the
    /// startup timeout.
    async fn connect(&self) -> Result<Arc<Connection>, String> {
        let timeout = self.config.startup_timeout;
        let stderr_tail = Arc::new(std::sync::Mutex::new(String::new()));
        let client = DeputyClient {
            links: self.links.clone(),
        };
        let mut stderr_reader = None;
        let (service, mut process) = match &self.config.transport {
            McpServerTransport::Stdio {
                command,
                args,
                env,
                env_vars,
                cwd,
            } => {
                let spec = StdioSpec {
                    command,
                    args,
                    env,
                    env_vars,
                    cwd: cwd.as_deref(),
                };
                let started = process::spawn(&spec, self.launcher.as_deref())?;
                stderr_reader = started.stderr.map(|stderr| {
                    tokio::spawn(keep_stderr(self.name.clone(), stderr, stderr_tail.clone()))
                });
                let serving = client.serve((started.stdout, started.stdin));
                (
                    tokio::time::timeout(timeout, serving).await,
                    Some(started.process),
                )
            }
            McpServerTransport::StreamableHttp {
                url,
                bearer_token_env_var,
                http_headers,
                env_http_headers,
            } => {
                let transport = http_transport(
                    url,
                    bearer_token_env_var.as_deref(),
                    http_headers,
                    env_http_headers,
                )?;
                (
                    tokio::time::timeout(timeout, client.serve(transport)).await,
                    None,
                )
            }
        };
        let service = match service {
            Ok(Ok(service)) => service,
            failed => {
                let why = match failed {
                    Ok(Err(err)) => format!("it did not initialize: {err}"),
                    _ => format!(
                        "it did not start within {} s (startup_timeout_sec)",
                        secs(timeout)
                    ),
                };
                if let Some(process) = &mut process {
                    process.stop().await;
                }
                // A server (or its launcher) that failed at once says why on stderr, which
                // may still be unread when `initialize` found the pipe broken: read it to
                // its end, which the stop above brings, unless something it left behind
                // holds it open.
                if let Some(reader) = stderr_reader {
                    let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
                }
                return Err(with_tail(why, &stderr_tail));
            }
        };
        let peer = service.peer().clone();
        let info = service.peer_info();
        let conn = Connection {
            service: tokio::sync::Mutex::new(Some(service)),
            peer: peer.clone(),
            tools: Vec::new(),
            instructions: info.as_ref().and_then(|i| i.instructions.clone()),
            stderr_tail,
            process: tokio::sync::Mutex::new(process),
        };
        let has_tools = info.as_ref().is_none_or(|i| i.capabilities.tools.is_some());
        let tools = if has_tools {
            match tokio::time::timeout(timeout, peer.list_all_tools()).await {
                Ok(Ok(tools)) => tools,
                Ok(Err(err)) => {
                    conn.stop().await;
                    return Err(with_stderr(
                        format!("it did not list its tools: {err}"),
                        &conn,
                    ));
                }
                Err(_) => {
                    conn.stop().await;
                    return Err(format!(
                        "it did not list its tools within {} s (startup_timeout_sec)",
                        secs(timeout)
                    ));
                }
            }
        } else {
            Vec::new()
        };
        Ok(Arc::new(Connection { tools, ..conn }))
    }
}

impl Connection {
    /// Closes the connection, then stops the process (stdin closed, a moment to exit, then
    /// SIGTERM, then SIGKILL; a launcher kills the rest of the tree).
    async fn stop(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(CLOSE_GRACE).await;
        }
        let process = self.process.lock().await.take();
        if let Some(mut process) = process {
            process.stop().await;
        }
    }
}

/// `why`, with the end of the server's stderr when it said something.
fn with_stderr(why: String, conn: &Connection) -> String {
    with_tail(why, &conn.stderr_tail)
}

fn with_tail(why: String, tail: &std::sync::Mutex<String>) -> String {
    let tail = lock(tail);
    let tail = tail.trim();
    if tail.is_empty() {
        why
    } else {
        format!("{why}; its stderr ends with: {tail}")
    }
}

fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

/// Logs a server's stderr and keeps its end.
async fn keep_stderr(
    name: String,
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<std::sync::Mutex<String>>,
) {
    let mut buf = vec![0u8; 4096];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let text = String::from_utf8_lossy(&buf[..n]);
                tracing::debug!(server = %name, "stderr: {}", text.trim_end());
                let mut tail = lock(&tail);
                tail.push_str(&text);
                if tail.len() > STDERR_TAIL_BYTES {
                    let mut cut = tail.len() - STDERR_TAIL_BYTES;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
            }
        }
    }
}

/// The Streamable HTTP transport to `url`, with the configured headers and token.
fn http_transport(
    url: &str,
    bearer_token_env_var: Option<&str>,
    http_headers: &std::collections::BTreeMap<String, String>,
    env_http_headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut headers = HashMap::new();
    let mut add = |name: &str, value: &str| -> Result<(), String> {
        let name = HeaderName::try_from(name)
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let value = HeaderValue::try_from(value)
            .map_err(|_| format!("the value of header `{name}` is not valid in HTTP"))?;
        headers.insert(name, value);
        Ok(())
    };
    for (name, value) in http_headers {
        add(name, value)?;
    }
    for (name, var) in env_http_headers {
        match std::env::var(var) {
            Ok(value) => add(name, &value)?,
            Err(_) => {
                tracing::warn!(header = %name, var = %var, "environment variable not set; header not sent")
            }
        }
    }
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers);
    if let Some(var) = bearer_token_env_var {
        let token = std::env::var(var).map_err(|_| {
            format!("environment variable `{var}` (its bearer_token_env_var) is not set")
        })?;
        config = config.auth_header(token);
    }
    crate::client::install_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot set up HTTP: {e}"))?;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}
