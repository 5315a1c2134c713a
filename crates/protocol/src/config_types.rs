//! Policy enums shared by configuration, the engine and the wire.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When the agent must ask before acting (`approval_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AskForApproval {
    /// Only known-safe read-only commands run without asking.
    #[serde(alias = "unless-trusted")]
    Untrusted,
    /// Run sandboxed; ask to re-run unsandboxed when the sandbox may have caused a failure.
    OnFailure,
    /// Run sandboxed; the model may ask for escalation.
    #[default]
    OnRequest,
    /// Never ask; failures go back to the model.
    Never,
}

impl AskForApproval {
    /// The kebab-case spelling used in config files and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Untrusted => "untrusted",
            Self::OnFailure => "on-failure",
            Self::OnRequest => "on-request",
            Self::Never => "never",
        }
    }
}

/// How commands are confined (`sandbox_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read everywhere, write nowhere.
    #[default]
    ReadOnly,
    /// Write in the workspace and temporary directories.
    WorkspaceWrite,
    /// No confinement at all.
    DangerFullAccess,
}

impl SandboxMode {
    /// The kebab-case spelling used in config files and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }
}

/// The sandbox policy a session runs under, as reported in `session_configured`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum SandboxPolicy {
    /// No confinement.
    DangerFullAccess,
    /// Read everywhere, write nowhere.
    ReadOnly {
        /// Whether outbound network is allowed.
        #[serde(default)]
        network_access: bool,
    },
    /// Write in the cwd, temporary directories and extra roots.
    WorkspaceWrite {
        /// Extra writable roots beyond the cwd and temporary directories.
        #[serde(default)]
        writable_roots: Vec<PathBuf>,
        /// Whether outbound network is allowed.
        #[serde(default)]
        network_access: bool,
        /// Leave `$TMPDIR` out of the writable roots.
        #[serde(default)]
        exclude_tmpdir_env_var: bool,
        /// Leave `/tmp` out of the writable roots.
        #[serde(default)]
        exclude_slash_tmp: bool,
    },
}

impl SandboxPolicy {
    /// The mode this policy was built from.
    pub fn mode(&self) -> SandboxMode {
        match self {
            Self::DangerFullAccess => SandboxMode::DangerFullAccess,
            Self::ReadOnly { .. } => SandboxMode::ReadOnly,
            Self::WorkspaceWrite { .. } => SandboxMode::WorkspaceWrite,
        }
    }
}

/// How the model is reached (`wire_api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    /// OpenAI Responses API (`POST /responses`).
    #[default]
    Responses,
    /// Chat Completions (`POST /chat/completions`).
    Chat,
}
