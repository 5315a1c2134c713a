//! JSON-RPC 2.0 envelopes, written with or without the `"jsonrpc"` field (Codex's
//! app-server leaves it out; ACP and MCP write it) and read either way.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: a string or an integer, echoed as it came.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Integer(i64),
    /// A string id.
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Integer(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcError {
    /// The error code (JSON-RPC's, or -32001 for an overloaded server).
    pub code: i64,
    /// What went wrong, for a person.
    pub message: String,
    /// More about it, when there is more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The error codes the server answers with.
pub mod error_codes {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a request the server can take: malformed, too large, not initialized,
    /// or about a thread or turn that does not exist.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No method has this name.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed to do what was asked.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The method exists but is not available in this version.
    pub const NOT_AVAILABLE: i64 = -32000;
    /// Too many requests are waiting; retry later.
    pub const SERVER_OVERLOADED: i64 = -32001;
}

impl JsonRpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32600 with `message`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_REQUEST, message)
    }

    /// -32602 with `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_PARAMS, message)
    }

    /// -32603 with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(error_codes::INTERNAL_ERROR, message)
    }
}

/// Whether written messages carry `"jsonrpc": "2.0"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Plain JSON-RPC 2.0: every message names its version.
    JsonRpc2,
    /// Codex's app-server: the same envelopes without the `"jsonrpc"` field.
    WithoutVersion,
}

impl Dialect {
    /// The `jsonrpc` member to write: `Some("2.0")` or nothing.
    pub fn version(self) -> Option<&'static str> {
        match self {
            Self::JsonRpc2 => Some("2.0"),
            Self::WithoutVersion => None,
        }
    }
}

/// A request or notification the server writes (`id` absent for a notification).
#[derive(Debug, Serialize)]
pub struct OutgoingCall<'a, P: Serialize> {
    /// `"2.0"`, or absent in the [`Dialect::WithoutVersion`] dialect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jsonrpc: Option<&'static str>,
    /// The request's id; none for a notification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a RequestId>,
    /// The method.
    pub method: &'a str,
    /// The params.
    pub params: &'a P,
}

/// The server's answer to a client request.
#[derive(Debug, Serialize)]
pub struct OutgoingResponse<'a, R: Serialize> {
    /// `"2.0"`, or absent in the [`Dialect::WithoutVersion`] dialect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jsonrpc: Option<&'static str>,
    /// The request's id.
    pub id: &'a RequestId,
    /// The result.
    pub result: &'a R,
}

/// The server's error answer; `id` is null when the request could not be read.
#[derive(Debug, Serialize)]
pub struct OutgoingError<'a> {
    /// `"2.0"`, or absent in the [`Dialect::WithoutVersion`] dialect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jsonrpc: Option<&'static str>,
    /// The request's id, if it could be read.
    pub id: Option<&'a RequestId>,
    /// What went wrong.
    pub error: &'a JsonRpcError,
}

/// A message the client sent, as far as its envelope goes.
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingMessage {
    /// A request: answer it.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// The params, untyped yet.
        params: Option<Value>,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
    },
    /// The answer to one of the server's requests (`Err` when the client answered with an error).
    Response {
        /// The server request's id.
        id: RequestId,
        /// The result, or the client's error.
        outcome: Result<Value, JsonRpcError>,
    },
}

/// Why a line is not a message the server can take, with the error to answer it with.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request's id, when one could be read.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: JsonRpcError,
}

impl IncomingMessage {
    /// Reads one line. `"jsonrpc"` may be present or not; batches are not supported.
    #[allow(
        clippy::result_large_err,
        reason = "serde_json's `preserve_order` (required by the ACP crates) makes JSON values larger; this error is built once per bad input, not on a hot path"
    )]
    pub fn parse(line: &[u8]) -> Result<Self, Rejection> {
        let value: Value = serde_json::from_slice(line).map_err(|err| Rejection {
            id: None,
            error: JsonRpcError::new(error_codes::PARSE_ERROR, format!("Parse error: {err}")),
        })?;
        Self::from_value(value)
    }

    #[allow(
        clippy::result_large_err,
        reason = "serde_json's `preserve_order` (required by the ACP crates) makes JSON values larger; this error is built once per bad input, not on a hot path"
    )]
    fn from_value(value: Value) -> Result<Self, Rejection> {
        let invalid = |id: Option<RequestId>, why: &str| Rejection {
            id,
            error: JsonRpcError::invalid_request(format!("Invalid request: {why}")),
        };
        let Value::Object(mut object) = value else {
            return Err(invalid(
                None,
                if value.is_array() {
                    "batches are not supported; send one message per line"
                } else {
                    "a message must be a JSON object"
                },
            ));
        };
        let id = match object.remove("id") {
            None | Some(Value::Null) => None,
            Some(raw) => match serde_json::from_value::<RequestId>(raw) {
                Ok(id) => Some(id),
                Err(_) => return Err(invalid(None, "`id` must be a string or an integer")),
            },
        };
        if let Some(method) = object.remove("method") {
            let Value::String(method) = method else {
                return Err(invalid(id, "`method` must be a string"));
            };
            return Ok(match id {
                Some(id) => Self::Request {
                    id,
                    method,
                    params: object.remove("params"),
                },
                None => Self::Notification { method },
            });
        }
        let Some(id) = id else {
            return Err(invalid(
                None,
                "neither a request, a notification nor a response",
            ));
        };
        if let Some(result) = object.remove("result") {
            return Ok(Self::Response {
                id,
                outcome: Ok(result),
            });
        }
        match object
            .remove("error")
            .map(serde_json::from_value::<JsonRpcError>)
        {
            Some(Ok(error)) => Ok(Self::Response {
                id,
                outcome: Err(error),
            }),
            Some(Err(_)) => Err(invalid(Some(id), "`error` must be {code, message}")),
            None => Err(invalid(Some(id), "a response needs `result` or `error`")),
        }
    }
}
