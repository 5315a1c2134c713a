//! The app-server protocol: every method, notification and server request, each name
//! defined once and tied to its params and result types, which are plain serde data
//! in Codex's app-server v2 shapes (camelCase fields, enums as Codex spells them).
//!
//! The lists below generate, for each message kind, a marker type implementing
//! [`ClientMethod`], [`ServerNotificationMethod`] or [`ServerRequestMethod`]; an enum of
//! the typed payloads ([`ClientRequest`], [`ServerNotification`], [`ServerRequest`]);
//! and the JSON Schema description [`crate::schema`] exports. Adding a method here is
//! a compile error in the server until it is handled.
//!
//! Data only: no I/O, no async runtime.

mod common;
mod item;
mod notification;
mod permissions;
mod requests;
mod thread;
mod turn;

pub use common::*;
pub use deputy_jsonrpc::{
    IncomingMessage, JsonRpcError, OutgoingCall, Rejection, RequestId, error_codes,
};
pub use item::*;
pub use notification::*;
pub use permissions::*;
pub use requests::*;
pub use thread::*;
pub use turn::*;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A request the client sends, with its params and result types.
pub trait ClientMethod {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// Its `params`.
    type Params: Serialize + DeserializeOwned + JsonSchema;
    /// Its `result`.
    type Response: Serialize + DeserializeOwned + JsonSchema;
}

/// A notification the server sends, with its params type.
pub trait ServerNotificationMethod {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// Its `params`.
    type Params: Serialize + DeserializeOwned + JsonSchema;
}

/// A request the server sends to the client, with its params and the answer it expects.
pub trait ServerRequestMethod {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// Its `params`.
    type Params: Serialize + DeserializeOwned + JsonSchema;
    /// The `result` the client answers with.
    type Response: Serialize + DeserializeOwned + JsonSchema;
}

/// Why a client request could not be typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestParseError {
    /// No method has this name.
    #[error("method not found: {0}")]
    UnknownMethod(String),
    /// The params do not fit the method's params type.
    #[error("invalid params for {method}: {message}")]
    InvalidParams {
        /// The method.
        method: &'static str,
        /// What does not fit, as serde says it.
        message: String,
    },
}

/// One method as the schema export describes it.
pub(crate) struct MethodSchema {
    pub(crate) method: &'static str,
    pub(crate) params: Schema,
    pub(crate) result: Option<Schema>,
}

/// Params to type: absent or `null` mean "no params", read as an empty object so that
/// methods whose params are all optional accept them.
fn params_or_empty(params: Option<Value>) -> Value {
    params
        .filter(|p| !p.is_null())
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
}

macro_rules! client_requests {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident => $method:literal ($params:ty) -> $response:ty;
    )*) => {
        /// Marker types of the client's requests, one per method.
        pub mod methods {
            #[allow(unused_imports, reason = "the marker docs link to these")]
            use super::*;
            $(
                $(#[doc = $doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $name;

                impl super::ClientMethod for $name {
                    const METHOD: &'static str = $method;
                    type Params = $params;
                    type Response = $response;
                }
            )*
        }

        /// A request from the client, its params typed.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ClientRequest {
            $(
                $(#[doc = $doc])*
                $name($params),
            )*
        }

        impl ClientRequest {
            /// Every client method name, in the order defined.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// Types the `params` of a request for `method`.
            pub fn parse(method: &str, params: Option<Value>) -> Result<Self, RequestParseError> {
                let params = params_or_empty(params);
                match method {
                    $(
                        $method => serde_json::from_value(params).map(Self::$name).map_err(|e| {
                            RequestParseError::InvalidParams {
                                method: $method,
                                message: e.to_string(),
                            }
                        }),
                    )*
                    other => Err(RequestParseError::UnknownMethod(other.to_string())),
                }
            }

            /// The request's method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Self::$name(_) => $method,)*
                }
            }
        }

        pub(crate) fn describe_client_requests(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$(
                MethodSchema {
                    method: $method,
                    params: generator.subschema_for::<$params>(),
                    result: Some(generator.subschema_for::<$response>()),
                },
            )*]
        }

        pub(crate) fn client_request_roots() -> Vec<(String, Schema)> {
            vec![$(
                (<$params as JsonSchema>::schema_name().into_owned(), SchemaGenerator::default().into_root_schema_for::<$params>()),
                (<$response as JsonSchema>::schema_name().into_owned(), SchemaGenerator::default().into_root_schema_for::<$response>()),
            )*]
        }
    };
}

macro_rules! server_notifications {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident => $method:literal ($params:ty);
    )*) => {
        /// Marker types of the server's notifications, one per method.
        pub mod notifications {
            #[allow(unused_imports, reason = "the marker docs link to these")]
            use super::*;
            $(
                $(#[doc = $doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $name;

                impl super::ServerNotificationMethod for $name {
                    const METHOD: &'static str = $method;
                    type Params = $params;
                }
            )*
        }

        /// A notification from the server, its params typed.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ServerNotification {
            $(
                $(#[doc = $doc])*
                $name($params),
            )*
        }

        impl ServerNotification {
            /// Every notification method name, in the order defined.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// The notification's method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Self::$name(_) => $method,)*
                }
            }

            /// The notification as one line of JSON (no newline), fields in declared order.
            pub fn to_json(&self) -> serde_json::Result<String> {
                match self {
                    $(Self::$name(params) => serde_json::to_string(&OutgoingCall {
                        jsonrpc: None,
                        id: None,
                        method: $method,
                        params,
                    }),)*
                }
            }
        }

        pub(crate) fn describe_server_notifications(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$(
                MethodSchema {
                    method: $method,
                    params: generator.subschema_for::<$params>(),
                    result: None,
                },
            )*]
        }

        pub(crate) fn server_notification_roots() -> Vec<(String, Schema)> {
            vec![$(
                (<$params as JsonSchema>::schema_name().into_owned(), SchemaGenerator::default().into_root_schema_for::<$params>()),
            )*]
        }
    };
}

macro_rules! server_requests {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident => $method:literal ($params:ty) -> $response:ty;
    )*) => {
        /// Marker types of the server's requests to the client, one per method.
        pub mod server_requests {
            #[allow(unused_imports, reason = "the marker docs link to these")]
            use super::*;
            $(
                $(#[doc = $doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $name;

                impl super::ServerRequestMethod for $name {
                    const METHOD: &'static str = $method;
                    type Params = $params;
                    type Response = $response;
                }
            )*
        }

        /// A request from the server to the client, its params typed.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ServerRequest {
            $(
                $(#[doc = $doc])*
                $name($params),
            )*
        }

        impl ServerRequest {
            /// Every server request method name, in the order defined.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// The request's method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Self::$name(_) => $method,)*
                }
            }

            /// The request, sent as `id`, as one line of JSON (no newline).
            pub fn to_json(&self, id: &RequestId) -> serde_json::Result<String> {
                match self {
                    $(Self::$name(params) => serde_json::to_string(&OutgoingCall {
                        jsonrpc: None,
                        id: Some(id),
                        method: $method,
                        params,
                    }),)*
                }
            }
        }

        pub(crate) fn describe_server_requests(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$(
                MethodSchema {
                    method: $method,
                    params: generator.subschema_for::<$params>(),
                    result: Some(generator.subschema_for::<$response>()),
                },
            )*]
        }

        pub(crate) fn server_request_roots() -> Vec<(String, Schema)> {
            vec![$(
                (<$params as JsonSchema>::schema_name().into_owned(), SchemaGenerator::default().into_root_schema_for::<$params>()),
                (<$response as JsonSchema>::schema_name().into_owned(), SchemaGenerator::default().into_root_schema_for::<$response>()),
            )*]
        }
    };
}

client_requests! {
    /// The handshake: who the client is; answered with who the server is.
    Initialize => "initialize" (InitializeParams) -> InitializeResponse;
    /// Starts a thread with optional settings; `thread/started` follows the response.
    ThreadStart => "thread/start" (ThreadStartParams) -> ThreadStartResponse;
    /// Loads a saved thread (or joins a loaded one) and follows its events.
    ThreadResume => "thread/resume" (ThreadResumeParams) -> ThreadResumeResponse;
    /// Saved threads by creation, newest first unless asked otherwise, a page at a time.
    ThreadList => "thread/list" (ThreadListParams) -> ThreadListResponse;
    /// One thread, with its turns and their items rebuilt from its event log.
    ThreadRead => "thread/read" (ThreadReadParams) -> ThreadReadResponse;
    /// Moves a thread's rollout to `archived_sessions/`: it leaves `thread/list`.
    ThreadArchive => "thread/archive" (ThreadArchiveParams) -> ThreadArchiveResponse;
    /// Compacts a thread's history now, as a turn of its own with one `contextCompaction` item.
    ThreadCompactStart => "thread/compact/start" (ThreadCompactStartParams) -> ThreadCompactStartResponse;
    /// Starts a turn (queued behind a running one); its settings persist for later turns.
    TurnStart => "turn/start" (TurnStartParams) -> TurnStartResponse;
    /// Stops a running or queued turn; it ends with `turn/completed` `interrupted`.
    TurnInterrupt => "turn/interrupt" (TurnInterruptParams) -> TurnInterruptResponse;
    /// Reviews changes as a turn of the thread (inline), framed by review-mode items.
    ReviewStart => "review/start" (ReviewStartParams) -> ReviewStartResponse;
    /// The models the configuration names.
    ModelList => "model/list" (ModelListParams) -> ModelListResponse;
}

server_notifications! {
    /// A thread was started by `thread/start`.
    ThreadStarted => "thread/started" (ThreadStartedNotification);
    /// A thread's status changed: a turn started or ended, an approval is awaited or answered.
    ThreadStatusChanged => "thread/status/changed" (ThreadStatusChangedNotification);
    /// A thread was archived.
    ThreadArchived => "thread/archived" (ThreadArchivedNotification);
    /// A thread stopped (shut down or unloaded); resuming it loads it again.
    ThreadClosed => "thread/closed" (ThreadClosedNotification);
    /// A turn began.
    TurnStarted => "turn/started" (TurnStartedNotification);
    /// A turn ended: completed, interrupted or failed. The last message of a turn.
    TurnCompleted => "turn/completed" (TurnCompletedNotification);
    /// An item began.
    ItemStarted => "item/started" (ItemStartedNotification);
    /// An item is finished; this is its final form.
    ItemCompleted => "item/completed" (ItemCompletedNotification);
    /// A piece of an agent message as it streams.
    AgentMessageDelta => "item/agentMessage/delta" (AgentMessageDeltaNotification);
    /// A piece of a reasoning summary as it streams.
    ReasoningSummaryTextDelta => "item/reasoning/summaryTextDelta" (ReasoningSummaryTextDeltaNotification);
    /// A piece of a running command's output.
    CommandExecutionOutputDelta => "item/commandExecution/outputDelta" (CommandExecutionOutputDeltaNotification);
    /// The turn's cumulative diff changed.
    TurnDiffUpdated => "turn/diff/updated" (TurnDiffUpdatedNotification);
    /// The model's plan for the turn changed.
    TurnPlanUpdated => "turn/plan/updated" (TurnPlanUpdatedNotification);
    /// Token usage after a model response.
    ThreadTokenUsageUpdated => "thread/tokenUsage/updated" (ThreadTokenUsageUpdatedNotification);
    /// Something went wrong: the model stream (retried) or the turn (it fails).
    Error => "error" (ErrorNotification);
    /// Something non-fatal the user should know.
    Warning => "warning" (WarningNotification);
    /// A server request was answered, timed out or withdrawn.
    ServerRequestResolved => "serverRequest/resolved" (ServerRequestResolvedNotification);
    /// An MCP server of a thread is starting, started or failed to.
    McpServerStatusUpdated => "mcpServer/startupStatus/updated" (McpServerStatusUpdatedNotification);
}

server_requests! {
    /// Asks the client whether a command item may run.
    CommandExecutionRequestApproval => "item/commandExecution/requestApproval"
        (CommandExecutionRequestApprovalParams) -> CommandExecutionRequestApprovalResponse;
    /// Asks the client whether a file change item may be applied.
    FileChangeRequestApproval => "item/fileChange/requestApproval"
        (FileChangeRequestApprovalParams) -> FileChangeRequestApprovalResponse;
    /// Asks the client a form about an MCP server: whether one of its tools may be called.
    McpServerElicitationRequest => "mcpServer/elicitation/request"
        (McpServerElicitationRequestParams) -> McpServerElicitationRequestResponse;
    /// Asks the client the model's own questions to the user (`request_user_input`).
    ToolRequestUserInput => "item/tool/requestUserInput"
        (ToolRequestUserInputParams) -> ToolRequestUserInputResponse;
}

/// The client's notifications (no params).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientNotification {
    /// The client has read the `initialize` response.
    Initialized,
}

impl ClientNotification {
    const INITIALIZED: &'static str = "initialized";

    /// Every client notification method name.
    pub const METHODS: &'static [&'static str] = &[Self::INITIALIZED];

    /// The notification `method` names, if it is one.
    pub fn parse(method: &str) -> Option<Self> {
        match method {
            Self::INITIALIZED => Some(Self::Initialized),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
