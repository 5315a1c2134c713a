//! Sessions on disk: one append-only JSONL "rollout" file per thread.
//!
//! Each line is `{"timestamp":"…Z","type":…,"payload":…}` with `type` one of
//! `session_meta` (the first line: who, where, with which settings),
//! `response_item` (an item as it entered the model history), `turn_context`
//! (the settings a turn started with), `event` (an entry of the thread's event
//! log, with its `seq`: everything but streaming deltas, large outputs cut to
//! head and tail, a command's output kept once; see [`event_line`]) and
//! `compacted` (the history was replaced by a summary: the history from there on
//! is its `replacement_history`, so a resumed thread loads the compacted history,
//! not the whole past). Files written before the event log hold `event_msg` lines
//! (a few Codex events), which are still read.
//!
//! The file lives at `sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl`,
//! dated by the thread id's own UUIDv7 timestamp, so a thread's file is found
//! from its id alone. A [`RolloutRecorder`] owns the file for the thread's life
//! (with an exclusive `flock`), and [`load_rollout`] rebuilds a thread's history
//! from it, tolerating a torn last line left by a killed process.
//!
//! Archiving a thread ([`archive_rollout`]) moves its file, unchanged, to
//! `archived_sessions/` beside `sessions/`: listings and resuming by id no longer
//! see it, and nothing is lost.

mod archive;
mod dir_sync;
mod event_index;
mod event_line;
mod head;
mod ids;
mod list;
mod paths;
mod reader;
mod recorder;
mod repair;
mod writer;

use std::path::PathBuf;

use deputy_protocol::{
    AskForApproval, EventMsg, ResponseItem, SandboxMode, SandboxPolicy, ThreadEvent, ThreadEventMsg,
};
use serde::{Deserialize, Serialize};

use crate::config::{Config, SandboxWorkspaceWrite};

pub use archive::{archive_rollout, archived_sessions_dir};
pub use event_line::{PERSISTED_FIELD_BYTES, encode_event_line};
pub use ids::{ThreadIdError, parse_thread_id, resolve_thread_id};
pub use list::{
    CreationQuery, SessionPage, SessionSummary, list_by_creation, list_sessions,
    list_sessions_by_creation, one_line_preview, session_head, session_summary,
};
pub use paths::{find_rollout, rollout_path, sessions_dir};
pub use reader::{
    EventReplay, ResumedSession, RolloutContents, load_rollout, read_events, read_rollout,
};
pub use recorder::RolloutRecorder;
pub use repair::{Repaired, repair_thread, threads_needing_repair};

/// Why a rollout could not be created, opened or read.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// Another process holds the rollout's lock: the thread is live there.
    #[error("thread is open in another process")]
    Locked,
    /// No rollout exists for this thread id.
    #[error("Session not found for thread_id: {0}")]
    NotFound(String),
    /// The file exists but cannot be used as a session.
    #[error("rollout {path} is unusable: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing the file failed.
    #[error("rollout {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl RolloutError {
    fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// Which front door started a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionSource {
    /// `deputy mcp-server`.
    #[default]
    Mcp,
    /// `deputy exec`.
    Exec,
    /// A review's reviewer, a child of another thread (`parent_thread_id`).
    Review,
    /// `deputy app-server`.
    #[serde(rename = "app_server")]
    AppServer,
    /// `deputy acp`.
    Acp,
}

/// Payload of the `session_meta` line: enough to rebuild the thread's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The thread id (a UUIDv7).
    pub id: String,
    /// When the thread started (RFC 3339, UTC).
    pub timestamp: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Model name.
    pub model: String,
    /// Provider id from config.
    pub model_provider: String,
    /// Approval policy.
    pub approval_policy: AskForApproval,
    /// Sandbox mode.
    pub sandbox_mode: SandboxMode,
    /// `[sandbox_workspace_write]` settings.
    #[serde(default)]
    pub sandbox_workspace_write: SandboxWorkspaceWrite,
    /// The caller's replacement for the built-in instructions, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// The caller's developer instructions, if any (already in the history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// The caller's prompt for compaction summaries, if any (it outlives a restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_prompt: Option<String>,
    /// Whether `update_plan` is offered to the model.
    #[serde(default = "yes")]
    pub include_plan_tool: bool,
    /// The deputy version that wrote the file.
    pub cli_version: String,
    /// Which front door started the session.
    #[serde(default)]
    pub source: SessionSource,
    /// The thread this one works for (a review's reviewer), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_thread_id: Option<String>,
}

fn yes() -> bool {
    true
}

impl SessionMeta {
    /// The metadata of a new thread `id` started with `config` from `source`.
    pub fn new(id: &str, config: &Config, source: SessionSource) -> Self {
        Self {
            id: id.to_string(),
            timestamp: paths::id_time(id).map_or_else(now_timestamp, format_timestamp),
            cwd: config.cwd.clone(),
            model: config.model.clone(),
            model_provider: config.model_provider_id.clone(),
            approval_policy: config.approval_policy,
            sandbox_mode: config.sandbox_mode,
            sandbox_workspace_write: config.sandbox_workspace_write.clone(),
            base_instructions: config.base_instructions.clone(),
            developer_instructions: config.developer_instructions.clone(),
            compact_prompt: config.compact_prompt.clone(),
            include_plan_tool: config.include_plan_tool,
            cli_version: env!("CARGO_PKG_VERSION").to_string(),
            source,
            parent_thread_id: None,
        }
    }
}

/// Payload of a `turn_context` line: the settings a turn ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnContextRecord {
    /// The turn's id.
    pub turn_id: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Model name.
    pub model: String,
    /// Approval policy.
    pub approval_policy: AskForApproval,
    /// Sandbox policy.
    pub sandbox_policy: SandboxPolicy,
}

impl TurnContextRecord {
    /// The context of turn `turn_id` of a thread configured by `config`.
    pub fn new(turn_id: &str, config: &Config) -> Self {
        Self {
            turn_id: turn_id.to_string(),
            cwd: config.cwd.clone(),
            model: config.model.clone(),
            approval_policy: config.approval_policy,
            sandbox_policy: config.sandbox_policy(),
        }
    }
}

/// Payload of a `compacted` line: the history was compacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactedRecord {
    /// The summary message the compacted history ends with.
    pub message: String,
    /// The whole history after compaction; later `response_item` lines extend it.
    pub replacement_history: Vec<ResponseItem>,
}

/// One line of a rollout, without its timestamp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum RolloutItem {
    /// The session's metadata; the first line.
    SessionMeta(SessionMeta),
    /// An item that entered the model history.
    ResponseItem(ResponseItem),
    /// The settings a turn started with.
    TurnContext(TurnContextRecord),
    /// An entry of the thread's event log (see [`is_persisted_event`]).
    Event(ThreadEvent),
    /// A Codex event, as files written before the event log kept them; read, never written.
    EventMsg(EventMsg),
    /// The history was replaced by a compacted one.
    Compacted(CompactedRecord),
}

/// Whether an event is written to the rollout. Streaming deltas are left out:
/// the completed items repeat what they add up to.
pub fn is_persisted_event(msg: &ThreadEventMsg) -> bool {
    !msg.is_delta()
}

/// One rollout line, newline included, stamped with the current time.
pub fn encode_line(item: &RolloutItem) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        timestamp: &'a str,
        #[serde(flatten)]
        item: &'a RolloutItem,
    }
    let timestamp = now_timestamp();
    // Plain data with string keys: serializing cannot fail.
    let mut line = serde_json::to_string(&Line {
        timestamp: &timestamp,
        item,
    })
    .unwrap_or_default();
    line.push('\n');
    line
}

/// The current UTC time as `YYYY-MM-DDThh:mm:ss.mmmZ`.
pub(crate) fn now_timestamp() -> String {
    format_timestamp(time::OffsetDateTime::now_utc())
}

fn format_timestamp(t: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&format).unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests;
