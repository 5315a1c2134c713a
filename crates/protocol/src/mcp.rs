//! What the engine reports about the MCP servers a thread uses: their startup, and each
//! call of one of their tools (an item of the turn), with Codex's event shapes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where an MCP tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpToolCallStatus {
    /// Asked for, waiting for approval, or running.
    InProgress,
    /// The server answered (its result may still say the tool failed: `is_error`).
    Completed,
    /// No answer: declined, the server unavailable, a timeout, an interruption.
    Failed,
}

/// A call of an MCP server's tool by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolCallItem {
    /// Item id.
    pub id: String,
    /// The model's tool call id.
    pub call_id: String,
    /// The server, as named in the configuration.
    pub server: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// The arguments the model passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// Where it stands.
    pub status: McpToolCallStatus,
    /// Whether the request was sent to the server (false while waiting for approval).
    #[serde(default)]
    pub started: bool,
    /// The server's result, once it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<McpToolCallResult>,
    /// Why there is no result (declined, unavailable, timed out…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the call, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
}

impl McpToolCallItem {
    /// A call as the model asked for it: in progress, not sent yet.
    pub fn asked(
        id: String,
        call_id: String,
        server: String,
        tool: String,
        arguments: Option<serde_json::Value>,
    ) -> Self {
        Self {
            id,
            call_id,
            server,
            tool,
            arguments,
            status: McpToolCallStatus::InProgress,
            started: false,
            result: None,
            error: None,
            duration: None,
        }
    }

    /// The call as Codex's events name it.
    pub fn invocation(&self) -> McpInvocation {
        McpInvocation {
            server: self.server.clone(),
            tool: self.tool.clone(),
            arguments: self.arguments.clone(),
        }
    }
}

/// An MCP server's answer to `tools/call`, as MCP spells it (`content` blocks as the
/// server sent them, `structuredContent`, `isError`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallResult {
    /// The content blocks: text, image, audio, resource links, embedded resources.
    pub content: Vec<serde_json::Value>,
    /// The tool's structured result, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<serde_json::Value>,
    /// Whether the tool reports that it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

/// Which tool of which server, with what arguments (Codex's `McpInvocation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpInvocation {
    /// The server, as named in the configuration.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
}

/// Codex's `mcp_tool_call_begin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolCallBeginEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// What is called.
    pub invocation: McpInvocation,
}

/// Codex's `mcp_tool_call_end`: `result` is `{"Ok": <CallToolResult>}` or `{"Err": "why"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolCallEndEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// What was called.
    pub invocation: McpInvocation,
    /// How long the call took.
    pub duration: Duration,
    /// The server's result, or why there is none.
    pub result: Result<McpToolCallResult, String>,
}

/// How one server's startup stands (`state` tagged, as Codex's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpStartupStatus {
    /// Being started.
    Starting,
    /// Started: its tools are offered.
    Ready,
    /// Could not be started.
    Failed {
        /// Why.
        error: String,
    },
    /// Startup was given up (the thread stopped first).
    Cancelled,
}

/// One server's startup changed state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStartupUpdateEvent {
    /// The server, as named in the configuration.
    pub server: String,
    /// Its new state.
    pub status: McpStartupStatus,
}

/// A server that could not be started, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStartupFailure {
    /// The server.
    pub server: String,
    /// Why.
    pub error: String,
}

/// Every configured server of the thread has started or failed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct McpStartupCompleteEvent {
    /// The servers whose tools are offered.
    pub ready: Vec<String>,
    /// The servers that could not be started.
    pub failed: Vec<McpStartupFailure>,
    /// The servers whose startup was given up.
    pub cancelled: Vec<String>,
}
