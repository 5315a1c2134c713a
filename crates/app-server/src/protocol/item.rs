//! Items: the things a turn produces, each with a stable id.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::UserInput;

/// One item of a turn, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// The user's input.
    #[serde(rename_all = "camelCase")]
    UserMessage {
        /// Item id.
        id: String,
        /// What the user sent.
        content: Vec<UserInput>,
    },
    /// A message from the model.
    #[serde(rename_all = "camelCase")]
    AgentMessage {
        /// Item id.
        id: String,
        /// The whole message.
        text: String,
    },
    /// The model's plan (`update_plan`), rendered as text: one line per step.
    #[serde(rename_all = "camelCase")]
    Plan {
        /// Item id.
        id: String,
        /// The plan.
        text: String,
    },
    /// The model's reasoning summary.
    #[serde(rename_all = "camelCase")]
    Reasoning {
        /// Item id.
        id: String,
        /// The summary, in parts.
        summary: Vec<String>,
        /// The raw reasoning, in parts (never sent by deputy: empty).
        content: Vec<String>,
    },
    /// A command the model asked to run.
    #[serde(rename_all = "camelCase")]
    CommandExecution {
        /// Item id.
        id: String,
        /// The command as a shell would read it.
        command: String,
        /// Its working directory.
        cwd: PathBuf,
        /// Its process's id in a terminal session (always null).
        process_id: Option<String>,
        /// Who ran it.
        source: CommandExecutionSource,
        /// Where it stands.
        status: CommandExecutionStatus,
        /// What the command does, as far as it could be read.
        command_actions: Vec<CommandAction>,
        /// Both output streams as they arrived; null while running or when it printed nothing.
        aggregated_output: Option<String>,
        /// Its exit code, once it ran.
        exit_code: Option<i32>,
        /// How long it ran.
        duration_ms: Option<i64>,
    },
    /// A patch the model asked to apply.
    #[serde(rename_all = "camelCase")]
    FileChange {
        /// Item id.
        id: String,
        /// The change to each file.
        changes: Vec<FileUpdateChange>,
        /// Where it stands.
        status: PatchApplyStatus,
    },
    /// A review began (from `review/start`).
    #[serde(rename_all = "camelCase")]
    EnteredReviewMode {
        /// Item id.
        id: String,
        /// What is reviewed.
        review: String,
    },
    /// A review ended.
    #[serde(rename_all = "camelCase")]
    ExitedReviewMode {
        /// Item id.
        id: String,
        /// The findings, rendered as text.
        review: String,
    },
    /// The history was compacted.
    #[serde(rename_all = "camelCase")]
    ContextCompaction {
        /// Item id.
        id: String,
    },
    /// A search by the provider's hosted web search.
    #[serde(rename_all = "camelCase")]
    WebSearch {
        /// Item id.
        id: String,
        /// What was searched for.
        query: String,
        /// What the search did, when known.
        action: Option<WebSearchAction>,
    },
    /// A call of an MCP server's tool.
    #[serde(rename_all = "camelCase")]
    McpToolCall {
        /// Item id.
        id: String,
        /// The server, as named in the configuration.
        server: String,
        /// The tool.
        tool: String,
        /// Where it stands.
        status: McpToolCallStatus,
        /// The arguments the model passed (null for none).
        arguments: serde_json::Value,
        /// The server's result, once it answered.
        result: Option<McpToolCallResult>,
        /// Why there is no result.
        error: Option<McpToolCallError>,
        /// How long the call took.
        duration_ms: Option<i64>,
    },
}

/// Where an MCP tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpToolCallStatus {
    /// Waiting for approval, or running.
    InProgress,
    /// The server answered.
    Completed,
    /// No answer: declined, unavailable, timed out, stopped.
    Failed,
}

/// An MCP server's answer to a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallResult {
    /// Its content blocks, as MCP writes them.
    pub content: Vec<serde_json::Value>,
    /// Its structured result, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<serde_json::Value>,
}

/// Why an MCP tool call has no result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallError {
    /// What happened.
    pub message: String,
}

/// What a web search did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum WebSearchAction {
    /// Searched for `query`.
    #[serde(rename_all = "camelCase")]
    Search {
        /// The query.
        query: Option<String>,
    },
}

/// Who ran a command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionSource {
    /// The model.
    #[default]
    Agent,
    /// The user, through the client.
    UserShell,
}

/// Where a command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionStatus {
    /// Waiting for approval, or running.
    InProgress,
    /// Ran and exited 0.
    Completed,
    /// Ran and failed, could not start, or was stopped.
    Failed,
    /// Not run: the user or the policy said no.
    Declined,
}

/// What a command does, as far as it could be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CommandAction {
    /// Reads one file.
    Read {
        /// The command text.
        command: String,
        /// The file's name.
        name: String,
        /// The file's path.
        path: PathBuf,
    },
    /// Lists files.
    ListFiles {
        /// The command text.
        command: String,
        /// The directory listed, when given.
        path: Option<String>,
    },
    /// Searches.
    Search {
        /// The command text.
        command: String,
        /// The pattern, when given.
        query: Option<String>,
        /// Where it searches, when given.
        path: Option<String>,
    },
    /// Anything else.
    Unknown {
        /// The command text.
        command: String,
    },
}

/// One file's change in a file change item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileUpdateChange {
    /// The file (absolute).
    pub path: String,
    /// Added, deleted or updated (and maybe moved).
    pub kind: PatchChangeKind,
    /// The new content (add), the old content (delete) or the unified diff (update).
    pub diff: String,
}

/// How a file changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// A new file.
    Add,
    /// A removed file.
    Delete,
    /// A changed file.
    Update {
        /// Where it moves to, if it moves.
        move_path: Option<PathBuf>,
    },
}

/// Where a file change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PatchApplyStatus {
    /// Waiting for approval, or being applied.
    InProgress,
    /// Every change landed.
    Completed,
    /// Nothing changed: it could not be applied, or was stopped.
    Failed,
    /// Not applied: the user or the policy said no.
    Declined,
}
