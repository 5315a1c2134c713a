//! The network doors' shared flags and their wiring: `deputy mcp-server --listen
//! HOST:PORT` (Streamable HTTP) and `deputy app-server --listen ws://IP:PORT`.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use deputy_core::config::ConfigLayers;
use deputy_jsonrpc::access::Access;

use crate::signals::TerminationSignals;

/// Who may connect to a listening server.
#[derive(Debug, Args)]
pub(crate) struct AccessArgs {
    /// Require `Authorization: Bearer <token>` with the token read from this environment
    /// variable (needed for any address that is not loopback).
    #[arg(long, value_name = "VAR")]
    auth_token_env: Option<String>,
    /// Also accept browser requests from this origin (repeatable), e.g.
    /// `https://app.example.com` or `http://localhost:*`; loopback origins always are.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
}

impl AccessArgs {
    /// The rules for a server bound to `addr`.
    pub(crate) fn access(&self, addr: SocketAddr) -> anyhow::Result<Access> {
        let token = self
            .auth_token_env
            .as_deref()
            .map(Access::token_from_env)
            .transpose()?;
        Ok(Access::new(addr, token, &self.allow_origins)?)
    }
}

/// `--listen HOST:PORT` of `deputy mcp-server`: an IP address or `localhost`, with a port
/// (0 picks a free one); `http://` in front is allowed.
pub(crate) fn parse_http_listen(value: &str) -> Result<SocketAddr, String> {
    let rest = value.strip_prefix("http://").unwrap_or(value);
    let rest = rest
        .strip_suffix("/mcp")
        .unwrap_or(rest)
        .trim_end_matches('/');
    if let Ok(addr) = rest.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = rest.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    Err(format!(
        "`{value}` is not an address to listen on; expected HOST:PORT, e.g. 127.0.0.1:8080"
    ))
}

/// Says where the server listens, on stderr (a closed stderr must not stop it).
fn announce(door: &str, url: String) {
    let _ = writeln!(std::io::stderr(), "deputy {door}: listening on {url}");
}

/// `deputy mcp-server --listen`.
pub(crate) async fn run_mcp_http(
    addr: SocketAddr,
    access: &AccessArgs,
    idle_session_secs: u64,
    layers: ConfigLayers,
    launcher: Option<PathBuf>,
) -> anyhow::Result<i32> {
    let signals = TerminationSignals::install()?;
    let options = deputy_mcp_server::HttpOptions {
        addr,
        access: access.access(addr)?,
        idle_session: Duration::from_secs(idle_session_secs.max(1)),
    };
    let ready = |bound: SocketAddr| {
        announce(
            "mcp-server",
            format!("http://{bound}{}", deputy_mcp_server::MCP_PATH),
        );
    };
    deputy_mcp_server::run_http_server(options, layers, launcher, ready, signals.received())
        .await
        .context("deputy mcp-server --listen")
}

/// `deputy app-server --listen ws://IP:PORT`.
pub(crate) async fn run_app_server_ws(
    addr: SocketAddr,
    access: &AccessArgs,
    layers: ConfigLayers,
    launcher: Option<PathBuf>,
) -> anyhow::Result<i32> {
    let signals = TerminationSignals::install()?;
    let access = access.access(addr)?;
    let ready = |bound: SocketAddr| announce("app-server", format!("ws://{bound}"));
    Ok(deputy_app_server::run_websocket_server(
        addr,
        access,
        layers,
        launcher,
        ready,
        signals.received(),
    )
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_are_host_and_port() {
        for (value, expected) in [
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("http://127.0.0.1:0/mcp", "127.0.0.1:0"),
            ("localhost:9", "127.0.0.1:9"),
            ("[::1]:80", "[::1]:80"),
            ("0.0.0.0:1", "0.0.0.0:1"),
        ] {
            assert_eq!(
                parse_http_listen(value).map(|a| a.to_string()),
                Ok(expected.to_string()),
                "{value}"
            );
        }
        for bad in ["8080", "example.com:80", "127.0.0.1", "ws://127.0.0.1:1"] {
            assert!(parse_http_listen(bad).is_err(), "{bad}");
        }
    }
}
