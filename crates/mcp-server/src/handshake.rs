//! The MCP lifecycle as the relay enforces it, so that rmcp only ever sees a
//! well-ordered session.
//!
//! rmcp's `serve` fails — ending the process — when the first message is not
//! `initialize` or `ping`, and it answers a second `initialize` as if it were the
//! first. Here, before `initialize`: `ping` passes (the MCP lifecycle allows it at
//! any time, and rmcp answers it), any other request gets -32600, and notifications
//! and responses are dropped. After it: a repeated `initialize` gets -32600
//! "initialize called more than once", as Codex answers it.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId};

/// What the lifecycle allows for one message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Hand it to rmcp.
    Pass,
    /// Answer this request with -32600 and this reason.
    Refuse(RequestId, &'static str),
    /// Drop it (a notification or response before the session exists); logged.
    Drop,
}

/// Why a request before `initialize` is refused.
pub(crate) const NOT_INITIALIZED: &str = "the session is not initialized: send `initialize` first";
/// Why a second `initialize` is refused (Codex's wording).
pub(crate) const INITIALIZED_TWICE: &str = "initialize called more than once";

/// Tracks whether the session has been initialized.
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    initialized: bool,
}

impl Handshake {
    /// Decides whether `message` may reach rmcp, recording an `initialize` that does.
    pub(crate) fn admit(&mut self, message: &ClientJsonRpcMessage) -> Admission {
        match message {
            JsonRpcMessage::Request(request) => match &request.request {
                ClientRequest::InitializeRequest(_) if self.initialized => {
                    Admission::Refuse(request.id.clone(), INITIALIZED_TWICE)
                }
                ClientRequest::InitializeRequest(_) => {
                    self.initialized = true;
                    Admission::Pass
                }
                ClientRequest::PingRequest(_) => Admission::Pass,
                _ if self.initialized => Admission::Pass,
                _ => Admission::Refuse(request.id.clone(), NOT_INITIALIZED),
            },
            _ if self.initialized => Admission::Pass,
            _ => {
                tracing::warn!("dropping a message sent before `initialize`");
                Admission::Drop
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(value: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    fn initialize(id: i64) -> ClientJsonRpcMessage {
        message(
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            }}),
        )
    }

    #[test]
    fn before_initialize_only_ping_passes() {
        let mut handshake = Handshake::default();
        let ping = message(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        let list = message(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let initialized = message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let response = message(json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert_eq!(handshake.admit(&ping), Admission::Pass);
        assert_eq!(
            handshake.admit(&list),
            Admission::Refuse(RequestId::Number(2), NOT_INITIALIZED)
        );
        assert_eq!(handshake.admit(&initialized), Admission::Drop);
        assert_eq!(handshake.admit(&response), Admission::Drop);

        assert_eq!(handshake.admit(&initialize(3)), Admission::Pass);
        for later in [ping, list, initialized, response] {
            assert_eq!(handshake.admit(&later), Admission::Pass);
        }
    }

    #[test]
    fn a_second_initialize_is_refused() {
        let mut handshake = Handshake::default();
        assert_eq!(handshake.admit(&initialize(1)), Admission::Pass);
        assert_eq!(
            handshake.admit(&initialize(2)),
            Admission::Refuse(RequestId::Number(2), INITIALIZED_TWICE)
        );
    }
}
