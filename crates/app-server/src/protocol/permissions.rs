//! What a thread may touch, in the v2 protocol's newer spelling (`permissionProfile`):
//! the file system entries and the network, beside the older `SandboxPolicy`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A thread's permissions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PermissionProfile {
    /// deputy's sandbox confines the thread's commands as the entries say.
    #[serde(rename_all = "camelCase")]
    Managed {
        /// What the file system allows.
        file_system: FileSystemPermissions,
        /// Whether the network is reachable.
        network: NetworkPermissions,
    },
    /// No sandbox at all.
    Disabled,
}

/// File system permissions of a managed profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum FileSystemPermissions {
    /// Only what the entries allow.
    Restricted {
        /// Each path and what it allows, later entries narrowing earlier ones.
        entries: Vec<FileSystemSandboxEntry>,
    },
}

/// One path and what the sandbox lets commands do there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileSystemSandboxEntry {
    /// The path.
    pub path: FileSystemPath,
    /// What is allowed beneath it.
    pub access: FileSystemAccessMode,
}

/// A path, or a place named by its role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FileSystemPath {
    /// An absolute path.
    Path {
        /// The path.
        path: PathBuf,
    },
    /// A place that depends on the thread or the machine.
    Special {
        /// Which one.
        value: FileSystemSpecialPath,
    },
}

/// A place named by its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileSystemSpecialPath {
    /// The whole file system.
    Root,
    /// The thread's working directory.
    CurrentWorkingDirectory,
    /// `$TMPDIR`.
    Tmpdir,
    /// `/tmp`.
    SlashTmp,
}

/// What the sandbox allows beneath a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileSystemAccessMode {
    /// Reading.
    Read,
    /// Reading and writing.
    Write,
}

/// Network permissions of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkPermissions {
    /// Whether outbound connections are allowed.
    pub enabled: bool,
}
