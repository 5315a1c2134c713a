//! The server's approval requests and the answers it takes.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CommandAction;

/// Params of `item/commandExecution/requestApproval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command item (as in its `item/started`).
    pub item_id: String,
    /// Why approval is needed (the model's justification, a sandbox failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The command as a shell would read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// What the command does, as far as it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_actions: Option<Vec<CommandAction>>,
    /// The answers the server takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_decisions: Option<Vec<ApprovalDecision>>,
}

/// The answer to `item/commandExecution/requestApproval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalResponse {
    /// The decision; an answer that cannot be read counts as `decline`.
    pub decision: ApprovalDecision,
}

/// Params of `item/fileChange/requestApproval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The file change item (as in its `item/started`).
    pub item_id: String,
    /// Why approval is needed (e.g. it writes outside the writable roots).
    pub reason: Option<String>,
    /// A directory that would become writable for the rest of the session.
    pub grant_root: Option<PathBuf>,
}

/// The answer to `item/fileChange/requestApproval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalResponse {
    /// The decision; an answer that cannot be read counts as `decline`.
    pub decision: ApprovalDecision,
}

/// A user's decision about a command or a file change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run it (apply it) this once.
    Accept,
    /// Run it, and the same command (the same files) again this session without asking.
    AcceptForSession,
    /// Do not; the turn goes on.
    Decline,
    /// Do not; the turn stops (`turn/completed` `interrupted`).
    Cancel,
}

impl ApprovalDecision {
    /// Every decision, in the order a client would offer them.
    pub const ALL: [Self; 4] = [
        Self::Accept,
        Self::AcceptForSession,
        Self::Decline,
        Self::Cancel,
    ];
}

/// Params of `mcpServer/elicitation/request` in form mode: a form for the user about an
/// MCP server — here, whether one of its tools may be called (`_meta.codex_approval_kind`
/// is `mcp_tool_call`, as Codex sends it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestParams {
    /// The thread.
    pub thread_id: String,
    /// The turn it arose in.
    pub turn_id: Option<String>,
    /// The MCP server, as named in the configuration.
    pub server_name: String,
    /// Always `form` (written inline in the schema: it tells the form variant from the URL one).
    #[schemars(schema_with = "form_mode_schema")]
    pub mode: McpElicitationMode,
    /// The question.
    pub message: String,
    /// The form's fields (none for a yes-or-no question: the action is the answer).
    pub requested_schema: McpElicitationSchema,
    /// What the question is about (`codex_approval_kind`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

fn form_mode_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Always `form`.",
        "type": "string",
        "enum": ["form"],
    })
}

/// How an elicitation asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpElicitationMode {
    /// A form the client shows.
    Form,
}

/// An elicitation's form: an object schema whose properties are the fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpElicitationSchema {
    /// The JSON Schema dialect the server declared, if it did.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema_uri: Option<String>,
    /// Always `object`.
    #[serde(rename = "type")]
    pub kind: McpElicitationObjectType,
    /// The fields, by name.
    pub properties: std::collections::BTreeMap<String, serde_json::Value>,
    /// The fields the form needs, when the server named any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

/// The form schema's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpElicitationObjectType {
    /// A JSON object.
    Object,
}

/// The answer to `mcpServer/elicitation/request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestResponse {
    /// What the user did with the form.
    pub action: McpServerElicitationAction,
    /// The form's values, when accepted.
    #[serde(default)]
    pub content: Option<serde_json::Value>,
}

/// What the user did with an elicitation's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerElicitationAction {
    /// Went ahead (for a tool call: allowed it once).
    Accept,
    /// Said no; the turn goes on.
    Decline,
    /// Dismissed it; the turn stops.
    Cancel,
}

/// Params of `item/tool/requestUserInput`: the model's questions to the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    /// The thread.
    pub thread_id: String,
    /// The turn asking.
    pub turn_id: String,
    /// Names this question set (the tool call's item).
    pub item_id: String,
    /// The questions, in order.
    pub questions: Vec<ToolRequestUserInputQuestion>,
}

/// One question of `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputQuestion {
    /// Names the question in the answers.
    pub id: String,
    /// A short title.
    pub header: String,
    /// The question.
    pub question: String,
    /// Whether the user may answer in words besides picking an option (always, here).
    pub is_other: bool,
    /// Whether the answer should be hidden as typed (never, here).
    pub is_secret: bool,
    /// The choices; `null` for a free answer.
    pub options: Option<Vec<ToolRequestUserInputOption>>,
}

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputOption {
    /// The choice.
    pub label: String,
    /// What picking it means.
    pub description: String,
}

/// The answer to `item/tool/requestUserInput`: per question id, what the user answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputResponse {
    /// Question id → its answer; a question left out was not answered.
    pub answers: std::collections::BTreeMap<String, ToolRequestUserInputAnswer>,
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputAnswer {
    /// The labels picked, or the user's words.
    pub answers: Vec<String>,
}
