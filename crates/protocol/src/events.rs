//! What a thread reports back.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{AskForApproval, ExitedReviewModeEvent, ReviewRequest, SandboxPolicy, TokenUsage};

/// An event with the id of the submission that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The causing submission's id (`""` for `session_configured`).
    pub id: String,
    /// What happened.
    pub msg: EventMsg,
}

/// Everything a thread can report. Tags and fields follow Codex's protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventMsg {
    /// The thread exists and is configured; always the first event.
    SessionConfigured(SessionConfiguredEvent),
    /// A turn began.
    #[serde(alias = "turn_started")]
    TaskStarted(TaskStartedEvent),
    /// The user's input for this turn, as recorded.
    UserMessage(UserMessageEvent),
    /// A piece of the model's answer as it streams.
    AgentMessageDelta(DeltaEvent),
    /// A complete message from the model.
    AgentMessage(AgentMessageEvent),
    /// A piece of reasoning as it streams.
    AgentReasoningDelta(DeltaEvent),
    /// A complete reasoning summary.
    AgentReasoning(AgentReasoningEvent),
    /// A command is about to run.
    ExecCommandBegin(ExecCommandBeginEvent),
    /// A chunk of a running command's output.
    ExecCommandOutputDelta(ExecCommandOutputDeltaEvent),
    /// A command finished.
    ExecCommandEnd(ExecCommandEndEvent),
    /// A command needs the user's approval before it runs.
    ExecApprovalRequest(ExecApprovalRequestEvent),
    /// A patch needs the user's approval before it is applied.
    ApplyPatchApprovalRequest(ApplyPatchApprovalRequestEvent),
    /// A patch is about to be applied.
    PatchApplyBegin(PatchApplyBeginEvent),
    /// A patch was applied, or failed to.
    PatchApplyEnd(PatchApplyEndEvent),
    /// The turn's cumulative diff changed.
    TurnDiff(TurnDiffEvent),
    /// The model updated its plan.
    PlanUpdate(UpdatePlanArgs),
    /// Token usage after a model response.
    TokenCount(TokenCountEvent),
    /// The history was replaced by a summary of it (automatically or on request).
    ContextCompacted(ContextCompactedEvent),
    /// The provider's hosted web search began a search.
    WebSearchBegin(WebSearchBeginEvent),
    /// The provider's hosted web search finished a search.
    WebSearchEnd(WebSearchEndEvent),
    /// The model stream failed and is being retried.
    StreamError(StreamErrorEvent),
    /// Something non-fatal the user should know.
    Warning(WarningEvent),
    /// The turn failed.
    Error(ErrorEvent),
    /// The turn was stopped before it finished.
    TurnAborted(TurnAbortedEvent),
    /// The turn finished.
    #[serde(alias = "turn_complete")]
    TaskComplete(TaskCompleteEvent),
    /// A review began; what follows is the reviewer's work.
    EnteredReviewMode(ReviewRequest),
    /// The review ended.
    ExitedReviewMode(ExitedReviewModeEvent),
    /// The thread has stopped.
    ShutdownComplete,
    /// An MCP server's tool is being called.
    McpToolCallBegin(crate::McpToolCallBeginEvent),
    /// An MCP server's tool call ended.
    McpToolCallEnd(crate::McpToolCallEndEvent),
    /// An MCP server is starting, started or failed to.
    McpStartupUpdate(crate::McpStartupUpdateEvent),
    /// Every MCP server has started or failed.
    McpStartupComplete(crate::McpStartupCompleteEvent),
}

impl EventMsg {
    /// Whether this event ends a turn (`task_complete`, `turn_aborted` or `error`).
    pub fn ends_turn(&self) -> bool {
        matches!(
            self,
            Self::TaskComplete(_) | Self::TurnAborted(_) | Self::Error(_)
        )
    }
}

/// Payload of `session_configured`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionConfiguredEvent {
    /// The thread id (a UUIDv7).
    pub session_id: String,
    /// Model name.
    pub model: String,
    /// Provider id from config.
    pub model_provider_id: String,
    /// Approval policy in force.
    pub approval_policy: AskForApproval,
    /// Sandbox policy in force.
    pub sandbox_policy: SandboxPolicy,
    /// Working directory of the session.
    pub cwd: PathBuf,
    /// Unused; kept for Codex compatibility.
    pub history_log_id: u64,
    /// Items of history the thread starts with (non-zero when resumed).
    pub history_entry_count: usize,
    /// The session's rollout file, when it is persisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_path: Option<PathBuf>,
}

/// Payload of `task_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStartedEvent {
    /// The turn's id.
    pub turn_id: String,
    /// When the turn started (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// The model's context window, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_context_window: Option<u64>,
}

/// Payload of `user_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessageEvent {
    /// The text the user sent.
    pub message: String,
}

/// Payload of streaming text deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaEvent {
    /// The new text.
    pub delta: String,
}

/// Payload of `agent_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentMessageEvent {
    /// The complete message.
    pub message: String,
}

/// Payload of `agent_reasoning`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReasoningEvent {
    /// The reasoning text.
    pub text: String,
}

/// How a command was understood, for display and approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ParsedCommand {
    /// Reads one file.
    Read {
        /// The command text.
        cmd: String,
        /// The file's name.
        name: String,
        /// The file's path as written.
        path: PathBuf,
    },
    /// Lists files.
    ListFiles {
        /// The command text.
        cmd: String,
        /// The directory listed, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Searches file contents or names.
    Search {
        /// The command text.
        cmd: String,
        /// The pattern, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        /// Where it searches, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Anything else.
    Unknown {
        /// The command text.
        cmd: String,
    },
}

/// Payload of `exec_command_begin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecCommandBeginEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The argv about to run.
    pub command: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// How the command was understood.
    pub parsed_cmd: Vec<ParsedCommand>,
    /// The unified-exec session it runs in, when it may outlive its call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
}

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecOutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Payload of `exec_command_output_delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecCommandOutputDeltaEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// Which stream.
    pub stream: ExecOutputStream,
    /// Raw bytes, base64 on the wire.
    #[serde(with = "base64_bytes")]
    pub chunk: Vec<u8>,
}

/// Payload of `exec_command_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecCommandEndEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The argv that ran.
    pub command: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Captured standard output (capped).
    pub stdout: String,
    /// Captured standard error (capped).
    pub stderr: String,
    /// Both streams interleaved as they arrived (capped).
    pub aggregated_output: String,
    /// Exit code (-1 when killed by a signal or never started).
    pub exit_code: i32,
    /// Wall time.
    pub duration: Duration,
    /// The text the model was given.
    pub formatted_output: String,
    /// How it ended: `completed` (exit 0), `failed`, or `declined` (never ran).
    #[serde(default = "ExecCommandStatus::completed")]
    pub status: ExecCommandStatus,
    /// The unified-exec session it ran in, when it could outlive its call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
}

/// How a command ended, in `exec_command_end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecCommandStatus {
    /// It ran and exited 0.
    Completed,
    /// It ran and failed, or could not start.
    Failed,
    /// It was not run: the user or the policy said no.
    Declined,
}

impl ExecCommandStatus {
    fn completed() -> Self {
        Self::Completed
    }
}

/// Payload of `exec_approval_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecApprovalRequestEvent {
    /// The model's tool call id; answer with `Op::Answer { id: call_id }`.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The argv that would run.
    pub command: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Why approval is needed (the model's justification, or a sandbox failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How the command was understood.
    pub parsed_cmd: Vec<ParsedCommand>,
}

/// One file's change in a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FileChange {
    /// A new file.
    Add {
        /// Its content.
        content: String,
    },
    /// A removed file.
    Delete {
        /// Its content before removal.
        content: String,
    },
    /// A changed (and possibly moved) file.
    Update {
        /// The change as a unified diff.
        unified_diff: String,
        /// Where the file moves to, if it moves.
        move_path: Option<PathBuf>,
    },
}

/// Payload of `apply_patch_approval_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyPatchApprovalRequestEvent {
    /// The model's tool call id; answer with `Op::Answer { id: call_id }`.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// Path → change.
    pub changes: BTreeMap<PathBuf, FileChange>,
    /// Why approval is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A directory the user could make writable for the rest of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_root: Option<PathBuf>,
}

/// Payload of `patch_apply_begin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchApplyBeginEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// Whether it is applied without asking.
    pub auto_approved: bool,
    /// Path → change.
    pub changes: BTreeMap<PathBuf, FileChange>,
}

/// Payload of `patch_apply_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchApplyEndEvent {
    /// The model's tool call id.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// Summary of what was applied.
    pub stdout: String,
    /// Why it failed, if it did.
    pub stderr: String,
    /// Whether every change landed.
    pub success: bool,
    /// How it ended: `completed`, `failed`, or `declined` (never applied).
    #[serde(default = "PatchApplyEndStatus::completed")]
    pub status: PatchApplyEndStatus,
}

/// How a patch ended, in `patch_apply_end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchApplyEndStatus {
    /// Every change landed.
    Completed,
    /// It could not be applied; nothing changed.
    Failed,
    /// It was not applied: the user or the policy said no.
    Declined,
}

impl PatchApplyEndStatus {
    fn completed() -> Self {
        Self::Completed
    }
}

/// Payload of `turn_diff`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnDiffEvent {
    /// Unified diff of every file the turn changed, from the turn's start.
    pub unified_diff: String,
}

/// Status of one plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One plan step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanItem {
    /// What the step does.
    pub step: String,
    /// Where it stands.
    pub status: StepStatus,
}

/// Arguments of the `update_plan` tool and payload of `plan_update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UpdatePlanArgs {
    /// Why the plan changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The whole plan.
    pub plan: Vec<PlanItem>,
}

/// Usage totals carried by `token_count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenUsageInfo {
    /// Sum over the thread.
    pub total_token_usage: TokenUsage,
    /// The last model response.
    pub last_token_usage: TokenUsage,
    /// The model's context window, when known.
    pub model_context_window: Option<u64>,
}

/// Payload of `token_count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenCountEvent {
    /// Usage, when the provider reported it.
    pub info: Option<TokenUsageInfo>,
    /// Always null: deputy does not track provider rate limits.
    pub rate_limits: Option<serde_json::Value>,
}

/// Payload of `web_search_begin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearchBeginEvent {
    /// The search's id (the provider's `web_search_call` item id).
    pub call_id: String,
}

/// Payload of `web_search_end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearchEndEvent {
    /// The search's id (the provider's `web_search_call` item id).
    pub call_id: String,
    /// What was searched for (empty when the provider did not say).
    pub query: String,
}

/// Payload of `context_compacted` (empty, as in Codex).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextCompactedEvent {}

/// Payload of `stream_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamErrorEvent {
    /// What went wrong and that it is being retried.
    pub message: String,
    /// What kind of failure is being retried, as Codex classifies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_error_info: Option<CodexErrorInfo>,
}

/// Payload of `warning`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarningEvent {
    /// The warning.
    pub message: String,
}

/// Payload of `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// The error, with the provider's own message when it sent one.
    pub message: String,
    /// What kind of error it is, as Codex classifies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_error_info: Option<CodexErrorInfo>,
    /// When it ends a turn (`turn_failed`): when the turn ended (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// When it ends a turn: how long the turn ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
}

impl ErrorEvent {
    /// An error saying `message`, unclassified, ending no turn.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            codex_error_info: None,
            completed_at: None,
            duration_ms: None,
        }
    }
}

/// Codex's classification of an error (`codex_error_info`), which clients act on
/// (e.g. compact on `context_window_exceeded`, back off on too many failed attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodexErrorInfo {
    /// The conversation does not fit the model's context window.
    ContextWindowExceeded,
    /// The account's usage limit is reached.
    UsageLimitExceeded,
    /// The provider is overloaded.
    ServerOverloaded,
    /// The provider failed internally (HTTP 500).
    InternalServerError,
    /// The credentials were refused.
    Unauthorized,
    /// The request was refused as invalid.
    BadRequest,
    /// The sandbox failed.
    SandboxError,
    /// The model server could not be reached.
    HttpConnectionFailed {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The response stream could not be opened.
    ResponseStreamConnectionFailed {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The response stream broke off before the response was complete.
    ResponseStreamDisconnected {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The request kept failing until the retries ran out.
    ResponseTooManyFailedAttempts {
        /// The last HTTP status.
        http_status_code: Option<u16>,
    },
    /// Anything else.
    Other,
}

/// Why a turn stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnAbortReason {
    /// Interrupted by the client.
    Interrupted,
    /// The user answered an approval with `abort`.
    Aborted,
}

/// Payload of `turn_aborted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnAbortedEvent {
    /// The turn's id.
    pub turn_id: String,
    /// Why.
    pub reason: TurnAbortReason,
    /// When it stopped (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// How long it ran, in milliseconds (absent when it stopped before it started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
}

/// Payload of `task_complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCompleteEvent {
    /// The turn's id.
    pub turn_id: String,
    /// The model's last message of the turn.
    pub last_agent_message: Option<String>,
    /// When it finished (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// How long it ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
}

pub(crate) mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn output_delta_serializes_chunk_as_base64() {
        let msg = EventMsg::ExecCommandOutputDelta(ExecCommandOutputDeltaEvent {
            call_id: "c1".into(),
            stream: ExecOutputStream::Stdout,
            chunk: b"hi\n".to_vec(),
        });
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            json!({"type":"exec_command_output_delta","call_id":"c1","stream":"stdout","chunk":"aGkK"})
        );
    }

    #[test]
    fn task_complete_uses_codex_tag_and_fields() {
        let msg = EventMsg::TaskComplete(TaskCompleteEvent {
            turn_id: "1".into(),
            last_agent_message: Some("done".into()),
            completed_at: Some(1_790_000_001),
            duration_ms: Some(1500),
        });
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            json!({"type":"task_complete","turn_id":"1","last_agent_message":"done",
                   "completed_at":1_790_000_001,"duration_ms":1500})
        );
    }

    #[test]
    fn update_change_keeps_null_move_path() {
        let change = FileChange::Update {
            unified_diff: "@@ -1 +1 @@\n-a\n+b\n".into(),
            move_path: None,
        };
        assert_eq!(
            serde_json::to_value(&change).unwrap(),
            json!({"type":"update","unified_diff":"@@ -1 +1 @@\n-a\n+b\n","move_path":null})
        );
    }
}
