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
