//! The MCP lifecycle as the adapter enforces it, so that rmcp only ever sees a
//! well-ordered session.
//!
//! rmcp's `serve` fails — ending the connection — when the first message opens no
//! lifecycle, and it answers a second `initialize` as if it were the first. A session
//! opens one of two ways: with `initialize` (up to 2025-11-25), or — from 2026-07-28,
//! which has no handshake — with a request whose `_meta` carries the client's protocol
//! version and capabilities. Before either: `ping` and `server/discover` pass (both
//! are allowed at any time, and rmcp answers them), any other request gets -32600, and
//! notifications and responses are dropped. After it: a repeated `initialize` gets
//! -32600 "initialize called more than once", as Codex answers it.

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, ProtocolVersion, RequestId,
};

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
/// Why `initialize` is refused once requests opened the session without it.
pub(crate) const INITIALIZED_LATE: &str =
    "the session was opened without initialize (protocol 2026-07-28): initialize is not used";

/// Tracks whether, and how, the session has been opened.
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    opened: Option<Opened>,
}

/// How the session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// With `initialize`.
    Initialize,
    /// By a request carrying its own protocol version and capabilities.
    Inline,
}

impl Handshake {
    /// Decides whether `message` may reach rmcp, recording a request that opens the session.
    pub(crate) fn admit(&mut self, message: &ClientJsonRpcMessage) -> Admission {
        match message {
            JsonRpcMessage::Request(request) => match (&request.request, self.opened) {
                (ClientRequest::InitializeRequest(_), Some(Opened::Initialize)) => {
                    Admission::Refuse(request.id.clone(), INITIALIZED_TWICE)
                }
                (ClientRequest::InitializeRequest(_), Some(Opened::Inline)) => {
                    Admission::Refuse(request.id.clone(), INITIALIZED_LATE)
                }
                (ClientRequest::InitializeRequest(_), None) => {
                    self.opened = Some(Opened::Initialize);
                    Admission::Pass
                }
                (ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_), _) => {
                    Admission::Pass
                }
                (_, Some(_)) => Admission::Pass,
                (other, None) if opens_inline(other) => {
                    self.opened = Some(Opened::Inline);
                    Admission::Pass
                }
                (_, None) => Admission::Refuse(request.id.clone(), NOT_INITIALIZED),
            },
            _ if self.opened.is_some() => Admission::Pass,
            _ => {
                tracing::warn!("dropping a message sent before `initialize`");
                Admission::Drop
            }
        }
    }

    /// The id of `message` when it is a `tools/list` whose answer is the catalogue as it
    /// stands: the session was opened with `initialize` (so the negotiated version is one
    /// that has it) and the request names no protocol context of its own, so rmcp would
    /// answer with every tool and no `resultType`.
    pub(crate) fn plain_tools_list<'a>(
        &self,
        message: &'a ClientJsonRpcMessage,
    ) -> Option<&'a RequestId> {
        match message {
            JsonRpcMessage::Request(request)
                if self.opened == Some(Opened::Initialize)
                    && matches!(request.request, ClientRequest::ListToolsRequest(_))
                    && request.request.get_meta().is_empty() =>
            {
                Some(&request.id)
            }
            _ => None,
        }
    }
}

/// Whether `request` carries the per-request context that opens a session without
/// `initialize` (rmcp then checks the version it names).
fn opens_inline(request: &ClientRequest) -> bool {
    request
        .get_meta()
        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty()
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

    #[test]
    fn a_request_with_its_own_protocol_context_opens_the_session_without_initialize() {
        let mut handshake = Handshake::default();
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let discover = message(
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        );
        let bare = message(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let inline = message(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}),
        );
        assert_eq!(handshake.admit(&discover), Admission::Pass);
        assert_eq!(
            handshake.admit(&bare),
            Admission::Refuse(RequestId::Number(2), NOT_INITIALIZED),
            "discovery opens nothing"
        );
        assert_eq!(handshake.admit(&inline), Admission::Pass);
        assert_eq!(handshake.admit(&bare), Admission::Pass);
        assert_eq!(
            handshake.admit(&initialize(4)),
            Admission::Refuse(RequestId::Number(4), INITIALIZED_LATE)
        );
    }
}
