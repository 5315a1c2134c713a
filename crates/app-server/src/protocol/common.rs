//! Shapes several methods share: the handshake, policies, user input, models.

use std::path::PathBuf;

pub use deputy_protocol::{AskForApproval, SandboxMode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is.
    pub client_info: ClientInfo,
    /// What the client can do.
    #[serde(default)]
    pub capabilities: Option<InitializeCapabilities>,
}

/// The client's name and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// Its name.
    pub name: String,
    /// Its display name.
    #[serde(default)]
    pub title: Option<String>,
    /// Its version.
    pub version: String,
}

/// What the client can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Whether it wants Codex's experimental methods and fields (deputy sends the same
    /// either way, e.g. `availableDecisions`).
    #[serde(default)]
    pub experimental_api: bool,
    /// Notification methods it does not want sent (exact method names).
    #[serde(default)]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The server's user agent, with the client's name and version appended.
    pub user_agent: String,
    /// The server's home directory (`$DEPUTY_HOME`).
    pub codex_home: PathBuf,
    /// `unix` or `windows`.
    pub platform_family: String,
    /// `linux`, `macos` or `windows`.
    pub platform_os: String,
}

/// A sandbox policy, as the v2 protocol spells it (tagged by `type`, camelCase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// No confinement.
    DangerFullAccess,
    /// Read everywhere, write nowhere.
    #[serde(rename_all = "camelCase")]
    ReadOnly {
        /// Whether outbound network is allowed.
        #[serde(default)]
        network_access: bool,
    },
    /// Confinement by something outside deputy (not supported: refused).
    #[serde(rename_all = "camelCase")]
    ExternalSandbox {
        /// Whether outbound network is allowed.
        #[serde(default)]
        network_access: NetworkAccess,
    },
    /// Write in the cwd, temporary directories and extra roots.
    #[serde(rename_all = "camelCase")]
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

/// Whether an external sandbox lets commands reach the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NetworkAccess {
    /// No outbound network.
    #[default]
    Restricted,
    /// Outbound network allowed.
    Enabled,
}

/// Who answers a thread's approval requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalsReviewer {
    /// The client's user: deputy sends every approval request to the client.
    User,
}

/// How hard a reasoning model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// No reasoning.
    None,
    /// As little as possible.
    Minimal,
    /// Light.
    Low,
    /// The provider's default.
    Medium,
    /// Deep.
    High,
    /// Deepest.
    Xhigh,
}

/// A reasoning effort a model offers, with what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEffortOption {
    /// The effort.
    pub reasoning_effort: ReasoningEffort,
    /// What it trades.
    pub description: String,
}

/// A provider's processing tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceTier {
    /// Faster, at a higher price.
    Fast,
    /// Slower, at a lower price.
    Flex,
}

/// A kind of user input a model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputModality {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Which front door started a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionSource {
    /// A terminal user interface.
    Cli,
    /// An editor extension.
    #[serde(rename = "vscode")]
    VsCode,
    /// `deputy exec`.
    Exec,
    /// `deputy app-server`.
    AppServer,
    /// Another front door, by name (`mcp` for `deputy mcp-server`).
    Custom(String),
    /// Not known.
    Unknown,
}

/// A span of a text input that the client renders specially.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextElement {
    /// Where it sits in the text, in bytes.
    pub byte_range: ByteRange,
    /// What the client shows in its place.
    #[serde(default)]
    pub placeholder: Option<String>,
}

/// A range of bytes, end excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ByteRange {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// One part of a user's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Spans the client renders specially (kept as given).
        #[serde(default)]
        text_elements: Vec<TextElement>,
    },
    /// An image by URL: a `data:` URL, or an `http(s)` address the model server fetches.
    Image {
        /// The image URL.
        url: String,
    },
    /// An image file on this machine (absolute, or relative to the thread's directory).
    LocalImage {
        /// The file.
        path: PathBuf,
    },
}

/// Params of `model/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListParams {
    /// Where the previous page ended (`nextCursor`).
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most models to return.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Result of `model/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListResponse {
    /// The models.
    pub data: Vec<Model>,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

/// A model the configuration names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// Its id (the model name).
    pub id: String,
    /// The model name sent to the provider.
    pub model: String,
    /// How to show it.
    pub display_name: String,
    /// Where the configuration names it.
    pub description: String,
    /// Whether pickers should hide it.
    pub hidden: bool,
    /// Whether threads get it when nothing else is asked for.
    pub is_default: bool,
    /// The effort used when none is asked for.
    pub default_reasoning_effort: ReasoningEffort,
    /// The efforts it can be asked for.
    pub supported_reasoning_efforts: Vec<ReasoningEffortOption>,
    /// What input it takes through deputy (text only: images are refused).
    pub input_modalities: Vec<InputModality>,
}
