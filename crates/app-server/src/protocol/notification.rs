//! Params of the server's notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{RequestId, Thread, ThreadItem, ThreadStatus, Turn, TurnError};

/// Params of `thread/started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedNotification {
    /// The new thread.
    pub thread: Thread,
}

/// Params of `thread/status/changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new status.
    pub status: ThreadStatus,
}

/// Params of `thread/archived`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadArchivedNotification {
    /// The thread.
    pub thread_id: String,
}

/// Params of `thread/closed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadClosedNotification {
    /// The thread.
    pub thread_id: String,
}

/// Params of `turn/started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn, `inProgress`.
    pub turn: Turn,
}

/// Params of `turn/completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn: `completed`, `interrupted`, or `failed` with its error.
    pub turn: Turn,
}

/// Params of `item/started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemStartedNotification {
    /// The item as it starts.
    pub item: ThreadItem,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
}

/// Params of `item/completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemCompletedNotification {
    /// The item in its final form.
    pub item: ThreadItem,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
}

/// Params of `item/agentMessage/delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The agent message item.
    pub item_id: String,
    /// The new text.
    pub delta: String,
}

/// Params of `item/reasoning/summaryTextDelta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The reasoning item.
    pub item_id: String,
    /// The new text.
    pub delta: String,
    /// Which summary part it belongs to (deputy keeps one: 0).
    pub summary_index: i64,
}

/// Params of `item/commandExecution/outputDelta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionOutputDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command item.
    pub item_id: String,
    /// The new output (invalid UTF-8 replaced).
    pub delta: String,
}

/// Params of `turn/diff/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnDiffUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The unified diff of every file the turn changed.
    pub diff: String,
}

/// Params of `turn/plan/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// Why the plan changed, as the model said.
    pub explanation: Option<String>,
    /// The whole plan.
    pub plan: Vec<TurnPlanStep>,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanStep {
    /// What the step does.
    pub step: String,
    /// Where it stands.
    pub status: TurnPlanStepStatus,
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnPlanStepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// Params of `thread/tokenUsage/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsageUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The usage.
    pub token_usage: ThreadTokenUsage,
}

/// A thread's token usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// Summed over the thread.
    pub total: TokenUsageBreakdown,
    /// The last model response.
    pub last: TokenUsageBreakdown,
    /// The model's context window, when known.
    pub model_context_window: Option<i64>,
}

/// Token counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// Input plus output.
    pub total_tokens: i64,
    /// Tokens in the requests.
    pub input_tokens: i64,
    /// Request tokens served from the provider's cache.
    pub cached_input_tokens: i64,
    /// Tokens the model produced.
    pub output_tokens: i64,
    /// Output tokens spent on reasoning.
    pub reasoning_output_tokens: i64,
}

/// Params of `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// What went wrong.
    pub error: TurnError,
    /// Whether the request is being retried (true: the turn goes on).
    pub will_retry: bool,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
}

/// Params of `warning`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarningNotification {
    /// The thread, when the warning is about one.
    pub thread_id: Option<String>,
    /// The turn, when the warning is about one.
    pub turn_id: Option<String>,
    /// The warning.
    pub message: String,
}

/// Params of `serverRequest/resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolvedNotification {
    /// The thread.
    pub thread_id: String,
    /// The server request that no longer needs an answer.
    pub request_id: RequestId,
}

/// Params of `mcpServer/startupStatus/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatusUpdatedNotification {
    /// The server, as named in the configuration.
    pub name: String,
    /// Its startup state.
    pub status: McpServerStartupState,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// Where an MCP server's startup stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerStartupState {
    /// Being started.
    Starting,
    /// Started: its tools are offered.
    Ready,
    /// Could not be started.
    Failed,
    /// Startup was given up.
    Cancelled,
}
