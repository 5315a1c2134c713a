//! Items: the things a turn produces, each with an engine-minted id, reported as
//! started, updated and completed.
//!
//! Front doors that speak in items (the app-server, `deputy exec --json`) map these
//! directly; the Codex events of `codex/event` are derived from them in one place
//! ([`crate::codex_events`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{FileChange, ParsedCommand, PlanItem, ReviewOutputEvent, ReviewRequest};

/// One item of a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThreadItem {
    /// The user's input that started the turn.
    UserMessage(UserMessageItem),
    /// A message from the model.
    AgentMessage(AgentMessageItem),
    /// The model's reasoning summary.
    Reasoning(ReasoningItem),
    /// A command the model asked to run. (Boxed, as is every large variant: an item is
    /// as large as its largest variant, and every event in a thread's log holds one.)
    CommandExecution(Box<CommandExecutionItem>),
    /// A patch the model asked to apply.
    FileChange(Box<FileChangeItem>),
    /// The model's plan (`update_plan`), one item per turn, updated in place.
    Plan(Box<PlanUpdateItem>),
    /// A review began: the turn now reports the reviewer's work.
    EnteredReviewMode(Box<EnteredReviewModeItem>),
    /// The review ended, with its findings.
    ExitedReviewMode(Box<ExitedReviewModeItem>),
    /// The history was compacted: summarized by the model and replaced by the summary.
    ContextCompaction(ContextCompactionItem),
    /// A search by the provider's hosted web search (started and completed when the
    /// model's `web_search_call` arrives).
    WebSearch(WebSearchItem),
    /// A call of an MCP server's tool.
    McpToolCall(Box<crate::McpToolCallItem>),
}

crate::tagged::tag_first_deserialize!(ThreadItem, "a thread item: an object with a `type`", {
    "user_message" => UserMessage(UserMessageItem),
    "agent_message" => AgentMessage(AgentMessageItem),
    "reasoning" => Reasoning(ReasoningItem),
    "command_execution" => CommandExecution(Box<CommandExecutionItem>),
    "file_change" => FileChange(Box<FileChangeItem>),
    "plan" => Plan(Box<PlanUpdateItem>),
    "entered_review_mode" => EnteredReviewMode(Box<EnteredReviewModeItem>),
    "exited_review_mode" => ExitedReviewMode(Box<ExitedReviewModeItem>),
    "context_compaction" => ContextCompaction(ContextCompactionItem),
    "web_search" => WebSearch(WebSearchItem),
    "mcp_tool_call" => McpToolCall(Box<crate::McpToolCallItem>),
});

impl ThreadItem {
    /// The item's id.
    pub fn id(&self) -> &str {
        match self {
            Self::UserMessage(item) => &item.id,
            Self::AgentMessage(item) => &item.id,
            Self::Reasoning(item) => &item.id,
            Self::CommandExecution(item) => &item.id,
            Self::FileChange(item) => &item.id,
            Self::Plan(item) => &item.id,
            Self::EnteredReviewMode(item) => &item.id,
            Self::ExitedReviewMode(item) => &item.id,
            Self::ContextCompaction(item) => &item.id,
            Self::WebSearch(item) => &item.id,
            Self::McpToolCall(item) => &item.id,
        }
    }
}

/// The user's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessageItem {
    /// Item id.
    pub id: String,
    /// The text the user sent.
    pub text: String,
}

/// A message from the model; `text` is complete once the item completes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMessageItem {
    /// Item id.
    pub id: String,
    /// The message so far.
    pub text: String,
}

/// The model's reasoning summary; `text` is complete once the item completes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningItem {
    /// Item id.
    pub id: String,
    /// The reasoning so far.
    pub text: String,
}

/// Where a command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandExecutionStatus {
    /// Asked for, waiting for approval, or running.
    InProgress,
    /// Ran and exited 0.
    Completed,
    /// Ran and failed (non-zero exit, timeout, could not start, interrupted).
    Failed,
    /// Not run: the user or the policy said no.
    Declined,
}

/// A command the model asked to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandExecutionItem {
    /// Item id.
    pub id: String,
    /// The model's tool call id.
    pub call_id: String,
    /// The argv.
    pub command: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// How the command was understood.
    pub parsed_cmd: Vec<ParsedCommand>,
    /// Where it stands.
    pub status: CommandExecutionStatus,
    /// Whether the process has been started (false while waiting for approval).
    #[serde(default)]
    pub started: bool,
    /// Exit code, once it ran (-1 when it never started or was killed without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Captured standard output (capped).
    #[serde(default)]
    pub stdout: String,
    /// Captured standard error (capped).
    #[serde(default)]
    pub stderr: String,
    /// Both streams interleaved as they arrived (capped).
    #[serde(default)]
    pub aggregated_output: String,
    /// Wall time, once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
    /// The text the model was given.
    #[serde(default)]
    pub formatted_output: String,
    /// The unified-exec session the command runs in, when it may outlive its call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
}

impl CommandExecutionItem {
    /// A command as the model asked for it: in progress, not started, nothing run yet.
    pub fn asked(
        id: String,
        call_id: String,
        command: Vec<String>,
        cwd: PathBuf,
        parsed_cmd: Vec<ParsedCommand>,
    ) -> Self {
        Self {
            id,
            call_id,
            command,
            cwd,
            parsed_cmd,
            status: CommandExecutionStatus::InProgress,
            started: false,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            aggregated_output: String::new(),
            duration: None,
            formatted_output: String::new(),
            process_id: None,
        }
    }
}

/// Where a patch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchApplyStatus {
    /// Asked for, waiting for approval, or being applied.
    InProgress,
    /// Every change landed.
    Completed,
    /// Nothing changed: it could not be applied.
    Failed,
    /// Not applied: the user or the policy said no.
    Declined,
}

/// A patch the model asked to apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileChangeItem {
    /// Item id.
    pub id: String,
    /// The model's tool call id.
    pub call_id: String,
    /// Path → change.
    pub changes: BTreeMap<PathBuf, FileChange>,
    /// Where it stands.
    pub status: PatchApplyStatus,
    /// Whether applying has begun (false while waiting for approval).
    #[serde(default)]
    pub started: bool,
    /// Whether it was applied without asking.
    #[serde(default)]
    pub auto_approved: bool,
    /// Summary of what was applied.
    #[serde(default)]
    pub stdout: String,
    /// Why it failed, if it did.
    #[serde(default)]
    pub stderr: String,
}

/// The model's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanUpdateItem {
    /// Item id.
    pub id: String,
    /// Why the plan changed, as the model last said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The whole plan, as last updated.
    pub plan: Vec<PlanItem>,
}

/// A review began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnteredReviewModeItem {
    /// Item id.
    pub id: String,
    /// What is reviewed, for the user.
    pub review: String,
    /// The whole request.
    pub request: ReviewRequest,
}

/// A review ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitedReviewModeItem {
    /// Item id.
    pub id: String,
    /// The findings rendered as text (what enters the thread's history).
    pub review: String,
    /// The findings; `None` when the review was interrupted.
    pub output: Option<ReviewOutputEvent>,
}

/// A compaction of the thread's history (automatic, or asked for with `Op::Compact`).
/// Started when the summary is requested, completed once the history was replaced
/// (`completed`) or when compacting failed or was interrupted (`failed`: the history
/// is unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextCompactionItem {
    /// Item id.
    pub id: String,
    /// Where it stands.
    pub status: ContextCompactionStatus,
}

/// A search the provider's hosted web search made for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearchItem {
    /// Item id (the provider's `web_search_call` id).
    pub id: String,
    /// What was searched for (empty when the provider did not say).
    pub query: String,
}

/// Where a compaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextCompactionStatus {
    /// The summary is being written.
    InProgress,
    /// The history was replaced by the summary.
    Completed,
    /// No summary came (an error, or the turn was stopped); the history is as it was.
    Failed,
}
