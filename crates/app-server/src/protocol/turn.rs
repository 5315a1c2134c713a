//! Turns: what one is, and `turn/start`, `turn/interrupt` and `review/start`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AskForApproval, SandboxPolicy, ThreadItem, UserInput};

/// A turn: the user's input and everything the agent did about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// The turn id (minted by the engine).
    pub id: String,
    /// Its items, in the order they started (empty in `turn/*` notifications).
    pub items: Vec<ThreadItem>,
    /// Where it stands.
    pub status: TurnStatus,
    /// Why it failed, when it did.
    pub error: Option<TurnError>,
    /// When it started (Unix seconds), when known.
    pub started_at: Option<i64>,
    /// When it ended (Unix seconds), when known.
    pub completed_at: Option<i64>,
    /// How long it took, when known.
    pub duration_ms: Option<i64>,
}

impl Turn {
    /// A turn with no items and no times.
    pub fn new(id: impl Into<String>, status: TurnStatus) -> Self {
        Self {
            id: id.into(),
            items: Vec::new(),
            status,
            error: None,
            started_at: None,
            completed_at: None,
            duration_ms: None,
        }
    }
}

/// Where a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// It finished.
    Completed,
    /// It was stopped (`turn/interrupt`, or a `cancel` answer to an approval).
    Interrupted,
    /// It failed; `error` says why.
    Failed,
    /// Queued or running.
    InProgress,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// The error, with the provider's own message when it sent one.
    pub message: String,
    /// What kind of error it is, as Codex classifies it (null when unclassified).
    pub codex_error_info: Option<CodexErrorInfo>,
    /// More detail, when there is some.
    #[serde(default)]
    pub additional_details: Option<String>,
}

impl TurnError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            codex_error_info: None,
            additional_details: None,
        }
    }
}

/// Codex's classification of an error, which clients act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
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
    #[serde(rename_all = "camelCase")]
    HttpConnectionFailed {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The response stream could not be opened.
    #[serde(rename_all = "camelCase")]
    ResponseStreamConnectionFailed {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The response stream broke off; it is retried, or the turn failed.
    #[serde(rename_all = "camelCase")]
    ResponseStreamDisconnected {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The request kept failing until the retries ran out.
    #[serde(rename_all = "camelCase")]
    ResponseTooManyFailedAttempts {
        /// The last HTTP status.
        http_status_code: Option<u16>,
    },
    /// Anything else.
    Other,
}

/// Params of `turn/start`. The settings apply to this turn and every later one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: String,
    /// The user's input (text only).
    pub input: Vec<UserInput>,
    /// Working directory (relative: to the thread's current one).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Approval policy.
    #[serde(default)]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox policy.
    #[serde(default)]
    pub sandbox_policy: Option<SandboxPolicy>,
    /// Model name.
    #[serde(default)]
    pub model: Option<String>,
    /// A JSON Schema the turn's final message must follow (this turn only): sent to the
    /// model as a strict structured-output format.
    #[serde(default)]
    pub output_schema: Option<Value>,
}

/// Result of `turn/start`: the new turn, `inProgress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartResponse {
    /// The turn.
    pub turn: Turn,
}

/// Params of `turn/interrupt`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The turn to stop (running or queued).
    pub turn_id: String,
}

/// Result of `turn/interrupt`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterruptResponse {}

/// Params of `review/start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewStartParams {
    /// The thread the review runs in.
    pub thread_id: String,
    /// What to review.
    pub target: ReviewTarget,
    /// Where the review runs: in the thread (`inline`, the default) or a new one.
    #[serde(default)]
    pub delivery: Option<ReviewDelivery>,
}

/// What a review looks at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ReviewTarget {
    /// Staged, unstaged and untracked changes.
    UncommittedChanges,
    /// The changes since the merge base with a branch.
    BaseBranch {
        /// The branch.
        branch: String,
    },
    /// One commit.
    Commit {
        /// The commit.
        sha: String,
        /// Its title, for display.
        #[serde(default)]
        title: Option<String>,
    },
    /// Whatever the instructions say.
    Custom {
        /// The reviewer's instructions.
        instructions: String,
    },
}

/// Where a review runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReviewDelivery {
    /// As a turn of the thread itself.
    Inline,
    /// In a thread of its own.
    Detached,
}

/// Result of `review/start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewStartResponse {
    /// The review turn.
    pub turn: Turn,
    /// The thread it runs in (the thread itself when inline).
    pub review_thread_id: String,
}
