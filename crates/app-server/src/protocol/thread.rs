//! Threads: what one is, and the `thread/*` methods.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ApprovalsReviewer, AskForApproval, PermissionProfile, ReasoningEffort, SandboxMode,
    SandboxPolicy, ServiceTier, SessionSource, Turn,
};

/// A thread: one conversation, its settings and (when asked for) its turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// The thread id (a UUIDv7).
    pub id: String,
    /// The thread it was forked from (always null: forking is not offered).
    pub forked_from_id: Option<String>,
    /// The start of the first user message, on one line.
    pub preview: String,
    /// Whether it is kept off disk (always false: every thread is saved).
    pub ephemeral: bool,
    /// The provider id it runs with.
    pub model_provider: String,
    /// When it was created (Unix seconds).
    pub created_at: i64,
    /// When it was last written (Unix seconds).
    pub updated_at: i64,
    /// Whether it is loaded, and busy.
    pub status: ThreadStatus,
    /// Its rollout file.
    pub path: Option<PathBuf>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// The deputy version that created it.
    pub cli_version: String,
    /// Which front door started it.
    pub source: SessionSource,
    /// A sub-agent's nickname (always null).
    pub agent_nickname: Option<String>,
    /// A sub-agent's role (always null).
    pub agent_role: Option<String>,
    /// Git metadata (always null: not recorded).
    pub git_info: Option<GitInfo>,
    /// A user-given title (always null: naming is not offered).
    pub name: Option<String>,
    /// Its turns, oldest first: filled by `thread/resume` and `thread/read`, empty elsewhere.
    pub turns: Vec<Turn>,
}

/// Git metadata of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitInfo {
    /// The commit.
    pub sha: Option<String>,
    /// The branch.
    pub branch: Option<String>,
    /// The `origin` remote's URL.
    pub origin_url: Option<String>,
}

/// Whether a thread is loaded, and what it is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadStatus {
    /// Only on disk.
    NotLoaded,
    /// Loaded, no turn running.
    Idle,
    /// Loaded but broken.
    SystemError,
    /// A turn is running or queued.
    #[serde(rename_all = "camelCase")]
    Active {
        /// What it waits on.
        active_flags: Vec<ThreadActiveFlag>,
    },
}

/// What an active thread waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadActiveFlag {
    /// An approval request is open.
    WaitingOnApproval,
    /// The model asked the user something.
    WaitingOnUserInput,
}

/// Params of `thread/start`; every setting is optional (config.toml decides the rest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// The thread's settings.
    #[serde(flatten)]
    pub settings: ThreadSettings,
}

/// Settings a client gives when it starts or resumes a thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSettings {
    /// Model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Provider id (a `[model_providers.*]` key).
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Working directory (relative: to the server's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Approval policy.
    #[serde(default)]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox mode.
    #[serde(default)]
    pub sandbox: Option<SandboxMode>,
    /// Config overrides: dotted config.toml keys to JSON values, as `-c` takes them.
    #[serde(default)]
    pub config: Option<BTreeMap<String, Value>>,
    /// Replaces deputy's built-in instructions.
    #[serde(default)]
    pub base_instructions: Option<String>,
    /// Sent to the model as a developer message at the start of the thread.
    #[serde(default)]
    pub developer_instructions: Option<String>,
}

/// Result of `thread/start`: the thread and the settings it runs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartResponse {
    /// The thread.
    pub thread: Thread,
    /// Model name.
    pub model: String,
    /// Provider id.
    pub model_provider: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Approval policy.
    pub approval_policy: AskForApproval,
    /// Who answers approval requests (always the client's user).
    pub approvals_reviewer: ApprovalsReviewer,
    /// Sandbox policy.
    pub sandbox: SandboxPolicy,
    /// The same permissions in the newer spelling.
    pub permission_profile: Option<PermissionProfile>,
    /// The reasoning effort asked of the model (null: the provider's default).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The provider's processing tier (null: its default).
    pub service_tier: Option<ServiceTier>,
    /// The AGENTS.md files the thread's instructions come from, in the order read.
    pub instruction_sources: Vec<PathBuf>,
}

/// Params of `thread/resume`: the thread, and settings that replace its saved ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread id.
    pub thread_id: String,
    /// Settings that replace the thread's saved ones.
    #[serde(flatten)]
    pub settings: ThreadSettings,
}

/// Result of `thread/resume`: as `thread/start`'s, with the thread's turns.
pub type ThreadResumeResponse = ThreadStartResponse;

/// Params of `thread/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListParams {
    /// Where the previous page ended (its `nextCursor`).
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most threads per page (default 25).
    #[serde(default)]
    pub limit: Option<u32>,
    /// List archived threads instead of live ones.
    #[serde(default)]
    pub archived: Option<bool>,
    /// Only threads whose working directory is this one.
    #[serde(default)]
    pub cwd: Option<String>,
    /// What to sort by: creation (the default) or last update.
    #[serde(default)]
    pub sort_key: Option<ThreadSortKey>,
    /// Newest first (`desc`, the default) or oldest first (`asc`).
    #[serde(default)]
    pub sort_direction: Option<SortDirection>,
}

/// What `thread/list` sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSortKey {
    /// When the thread was created.
    CreatedAt,
    /// When it was last written.
    UpdatedAt,
}

/// Which way a list runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortDirection {
    /// Oldest first.
    Asc,
    /// Newest first.
    #[default]
    Desc,
}

/// Result of `thread/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListResponse {
    /// The threads, in the order asked for, without turns.
    pub data: Vec<Thread>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<String>,
}

/// Params of `thread/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadParams {
    /// The thread id.
    pub thread_id: String,
    /// Whether to include the turns and their items (default true).
    #[serde(default = "yes")]
    pub include_turns: bool,
}

fn yes() -> bool {
    true
}

/// Result of `thread/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResponse {
    /// The thread.
    pub thread: Thread,
}

/// Params of `thread/archive`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadArchiveParams {
    /// The thread id.
    pub thread_id: String,
}

/// Result of `thread/archive`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadArchiveResponse {}

/// Params of `thread/compact/start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCompactStartParams {
    /// The thread id.
    pub thread_id: String,
}

/// Result of `thread/compact/start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadCompactStartResponse {}
