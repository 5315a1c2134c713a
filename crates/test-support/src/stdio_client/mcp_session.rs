//! The MCP handshake, so tests start from an initialized session in one line.

use std::time::Duration;

use serde_json::{Value, json};

use super::StdioClient;

/// How long the server may take to answer `initialize`, start-up included.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// The MCP handshake over a [`StdioClient`].
#[derive(Debug, Clone, Copy)]
pub struct McpSession;

impl McpSession {
    /// The protocol version the tests' client announces.
    pub const PROTOCOL_VERSION: &'static str = "2025-06-18";

    /// Sends `initialize` with `capabilities`, then `notifications/initialized`, and returns
    /// the `initialize` result.
    ///
    /// # Panics
    /// When the server answers with an error or not at all; the message carries the
    /// diagnostics of [`McpSession::try_initialize`].
    pub fn initialize(client: &StdioClient, capabilities: Value) -> Value {
        match Self::try_initialize(client, capabilities) {
            Ok(result) => result,
            Err(err) => panic!("MCP initialize failed: {err}"),
        }
    }

    /// Like [`McpSession::initialize`], returning failures as text with diagnostics.
    pub fn try_initialize(client: &StdioClient, capabilities: Value) -> Result<Value, String> {
        let id = client.request(
            "initialize",
            json!({
                "protocolVersion": Self::PROTOCOL_VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": "deputy-tests", "version": "0"},
            }),
        );
        let response = client.wait_response(id, INITIALIZE_TIMEOUT)?;
        let Some(result) = response.get("result") else {
            return Err(format!("initialize was answered with an error: {response}"));
        };
        let result = result.clone();
        client.notify("notifications/initialized", Value::Null);
        Ok(result)
    }
}
