//! The tools' arguments, results and definitions. Schemas are generated from the
//! argument and result structs; the exact JSON is pinned by tests.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use deputy_core::config::{ConfigLayers, ConfigOverrides, json_to_toml};
use deputy_protocol::{AskForApproval, InputItem, SandboxMode};
use rmcp::model::{RequestId, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Name of the tool that starts a session.
pub(crate) const CODEX_TOOL: &str = "codex";
/// Name of the tool that continues one.
pub(crate) const CODEX_REPLY_TOOL: &str = "codex-reply";

/// Name of the tool that creates a conversation.
pub(crate) const CONVERSATION_CREATE_TOOL: &str = "conversationCreate";
/// Name of the tool that sends a conversation a message.
pub(crate) const CONVERSATION_SEND_MESSAGE_TOOL: &str = "conversationSendMessage";
/// Name of the tool that streams a conversation's events.
pub(crate) const CONVERSATION_STREAM_TOOL: &str = "conversationStream";
/// Name of the tool that lists conversations.
pub(crate) const CONVERSATIONS_LIST_TOOL: &str = "conversationsList";

/// Arguments of `codex`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct CodexToolCallParam {
    /// The task for the agent: the first user message of the session.
    pub(crate) prompt: String,
    /// Model to use instead of the configured one (e.g. "gpt-5-codex").
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// A profile from config.toml whose settings apply to this session.
    #[serde(default)]
    pub(crate) profile: Option<String>,
    /// Working directory of the session; a relative path resolves against the server's working directory.
    #[serde(default)]
    pub(crate) cwd: Option<String>,
    /// When the agent must ask before running commands: `untrusted`, `on-failure`, `on-request` or `never`.
    #[serde(default)]
    pub(crate) approval_policy: Option<ApprovalPolicyParam>,
    /// How commands are confined: `read-only`, `workspace-write` or `danger-full-access`.
    #[serde(default)]
    pub(crate) sandbox: Option<SandboxModeParam>,
    /// Config settings that override config.toml, as dotted paths (e.g. {"sandbox_workspace_write.network_access": true}).
    #[serde(default)]
    pub(crate) config: Option<BTreeMap<String, serde_json::Value>>,
    /// Replaces the agent's built-in instructions.
    #[serde(default)]
    pub(crate) base_instructions: Option<String>,
    /// Extra instructions given to the model as a developer message.
    #[serde(default)]
    pub(crate) developer_instructions: Option<String>,
    /// Prompt used when the conversation history is compacted.
    #[serde(default)]
    pub(crate) compact_prompt: Option<String>,
    /// Whether the model is offered the `update_plan` tool (default true).
    #[serde(default)]
    pub(crate) include_plan_tool: Option<bool>,
}

/// `approval-policy` values (kebab-case, as in config.toml).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ApprovalPolicyParam {
    Untrusted,
    OnFailure,
    OnRequest,
    Never,
}

/// `sandbox` values (kebab-case, as in config.toml).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SandboxModeParam {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

/// Arguments of `codex-reply`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CodexReplyParam {
    /// The next user message of the session.
    pub(crate) prompt: String,
    /// The thread to continue, as returned in `structuredContent.threadId`.
    #[serde(default)]
    pub(crate) thread_id: Option<String>,
    /// Deprecated alias of `threadId`.
    #[serde(default)]
    pub(crate) conversation_id: Option<String>,
}

/// Arguments of `conversationCreate` (snake_case keys, as in seed 003).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ConversationCreateParam {
    /// The first user message; when not empty, the first turn starts at once in the background.
    pub(crate) prompt: String,
    /// Model to use instead of the configured one (e.g. "gpt-5-codex").
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Working directory of the conversation; a relative path resolves against the server's working directory.
    #[serde(default)]
    pub(crate) cwd: Option<String>,
    /// When the agent must ask before running commands: `untrusted`, `on-failure`, `on-request` or `never`.
    #[serde(default)]
    pub(crate) approval_policy: Option<ApprovalPolicyParam>,
    /// How commands are confined: `read-only`, `workspace-write` or `danger-full-access`.
    #[serde(default)]
    pub(crate) sandbox: Option<SandboxModeParam>,
    /// Config settings that override config.toml, as dotted paths (e.g. {"sandbox_workspace_write.network_access": true}).
    #[serde(default)]
    pub(crate) config: Option<BTreeMap<String, serde_json::Value>>,
    /// A profile from config.toml whose settings apply to this conversation.
    #[serde(default)]
    pub(crate) profile: Option<String>,
    /// Replaces the agent's built-in instructions.
    #[serde(default)]
    pub(crate) base_instructions: Option<String>,
}

/// Arguments of `conversationSendMessage`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ConversationSendMessageParam {
    /// The conversation, as returned by `conversationCreate` (a `codex` threadId works too).
    pub(crate) conversation_id: String,
    /// The message: its parts, in order.
    pub(crate) content: Vec<ContentItemParam>,
}

/// One part of a message: `text` with `text`, or `image` with one of `image_url`, `path` or `data` + `mimeType`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ContentItemParam {
    /// What the part is: `text` or `image`.
    #[serde(rename = "type")]
    pub(crate) kind: ContentKind,
    /// The text of a `text` part.
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// An image's URL: `data:image/…;base64,…` or an `http(s)` address.
    #[serde(default)]
    pub(crate) image_url: Option<String>,
    /// An image file (PNG, JPEG, GIF or WebP, at most 10 MiB), relative to the conversation's directory.
    #[serde(default)]
    pub(crate) path: Option<PathBuf>,
    /// An image's bytes in base64, as MCP's image content carries them.
    #[serde(default)]
    pub(crate) data: Option<String>,
    /// The MIME type of `data`.
    #[serde(default, rename = "mimeType")]
    pub(crate) mime_type: Option<String>,
}

/// Kinds of message parts.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ContentKind {
    Text,
    Image,
}

impl ContentItemParam {
    /// The part as engine input; `Err` says what is wrong with it.
    pub(crate) fn into_input(self) -> Result<InputItem, String> {
        match (self.kind, self.text, self.image_url, self.path, self.data) {
            (ContentKind::Text, Some(text), None, None, None) => Ok(InputItem::Text { text }),
            (ContentKind::Text, ..) => Err("a `text` part takes `text` and nothing else".into()),
            (ContentKind::Image, None, Some(url), None, None) => Ok(InputItem::Image { url }),
            (ContentKind::Image, None, None, Some(path), None) => {
                Ok(InputItem::LocalImage { path })
            }
            (ContentKind::Image, None, None, None, Some(data)) => match self.mime_type {
                Some(mime) if mime.starts_with("image/") => Ok(InputItem::Image {
                    url: format!("data:{mime};base64,{data}"),
                }),
                _ => Err("an `image` part with `data` needs an image `mimeType`".into()),
            },
            (ContentKind::Image, ..) => Err(
                "an `image` part takes one of `image_url`, `path` or `data` + `mimeType`".into(),
            ),
        }
    }
}

/// Arguments of `conversationStream`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ConversationStreamParam {
    /// The conversation whose events to stream.
    pub(crate) conversation_id: String,
}

/// Arguments of `conversationsList`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ConversationsListParam {
    /// Most conversations to return (default 20).
    #[serde(default)]
    pub(crate) limit: Option<u32>,
    /// Where to continue: the `next_cursor` of the previous page.
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

/// Result of `conversationCreate`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ConversationCreateResult {
    /// The new conversation's id (also a thread id for `codex-reply`).
    pub(crate) conversation_id: String,
    /// The model it talks to.
    pub(crate) model: String,
}

/// Result of `conversationSendMessage`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ConversationSendMessageResult {
    /// `ok`: the message's turn is queued.
    pub(crate) status: SendStatus,
}

/// What became of a sent message.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SendStatus {
    // Its turn is queued (behind a running one, if any).
    Ok,
}

/// Result of `conversationStream`: empty; the events follow as notifications.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ConversationStreamResult {}

/// Result of `conversationsList`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ConversationsListResult {
    /// Conversations, newest first.
    pub(crate) conversations: Vec<ConversationSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// One conversation in a listing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ConversationSummary {
    /// Its id.
    pub(crate) conversation_id: String,
    /// Its first user message, on one line and shortened; empty before the first message.
    pub(crate) title: String,
}

impl CodexToolCallParam {
    /// Adds this call's settings to the server's config layers (per-call layer wins).
    pub(crate) fn apply_to(&self, layers: &mut ConfigLayers) {
        apply_call_config(layers, self.config.as_ref());
        layers.overrides = ConfigOverrides {
            model: self.model.clone(),
            profile: self.profile.clone(),
            cwd: self.cwd.as_ref().map(Into::into),
            approval_policy: self.approval_policy.map(Into::into),
            sandbox_mode: self.sandbox.map(Into::into),
            base_instructions: self.base_instructions.clone(),
            developer_instructions: self.developer_instructions.clone(),
            compact_prompt: self.compact_prompt.clone(),
            include_plan_tool: self.include_plan_tool,
            ..ConfigOverrides::default()
        };
    }
}

impl ConversationCreateParam {
    /// Adds this call's settings to the server's config layers (per-call layer wins).
    pub(crate) fn apply_to(&self, layers: &mut ConfigLayers) {
        apply_call_config(layers, self.config.as_ref());
        layers.overrides = ConfigOverrides {
            model: self.model.clone(),
            profile: self.profile.clone(),
            cwd: self.cwd.as_ref().map(Into::into),
            approval_policy: self.approval_policy.map(Into::into),
            sandbox_mode: self.sandbox.map(Into::into),
            base_instructions: self.base_instructions.clone(),
            ..ConfigOverrides::default()
        };
    }
}

/// Adds a call's `config` object (dotted paths) as the per-call override layer.
fn apply_call_config(
    layers: &mut ConfigLayers,
    config: Option<&BTreeMap<String, serde_json::Value>>,
) {
    if let Some(config) = config {
        layers.call_overrides.extend(
            config
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), json_to_toml(value)?))),
        );
    }
}

impl From<ApprovalPolicyParam> for AskForApproval {
    fn from(policy: ApprovalPolicyParam) -> Self {
        match policy {
            ApprovalPolicyParam::Untrusted => Self::Untrusted,
            ApprovalPolicyParam::OnFailure => Self::OnFailure,
            ApprovalPolicyParam::OnRequest => Self::OnRequest,
            ApprovalPolicyParam::Never => Self::Never,
        }
    }
}

impl From<SandboxModeParam> for SandboxMode {
    fn from(mode: SandboxModeParam) -> Self {
        match mode {
            SandboxModeParam::ReadOnly => Self::ReadOnly,
            SandboxModeParam::WorkspaceWrite => Self::WorkspaceWrite,
            SandboxModeParam::DangerFullAccess => Self::DangerFullAccess,
        }
    }
}

/// The tools this server offers, in `tools/list` order, as `tools.json` holds them.
///
/// The definitions are derived from the argument and result types (see `derive.rs`); a
/// test keeps the file equal to what they derive, and `DEPUTY_BLESS=1 cargo test
/// --workspace tools_json` rewrites it. Reading the file rather than deriving the schemas
/// at every start takes a tenth of the server's start-up, and the pages of schema
/// generation, off the way to the first `tools/list`. It is read once per process.
pub(crate) fn tools() -> Vec<Tool> {
    catalogue().clone()
}

fn catalogue() -> &'static Vec<Tool> {
    static CATALOGUE: OnceLock<Vec<Tool>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        serde_json::from_str(TOOLS_JSON).unwrap_or_else(|err| {
            // Caught by the test; a client still gets an answer.
            tracing::error!("tools.json does not hold tool definitions: {err}");
            Vec::new()
        })
    })
}

/// The answer to a `tools/list` request with id `id`, byte for byte as rmcp writes it to a
/// peer on a version with `initialize` (no `resultType`), built from the file's text:
/// the definitions are not parsed, copied and serialized again, which was most of the
/// work of a cold start's first `tools/list`.
pub(crate) fn list_answer(id: &RequestId) -> String {
    // A request id is a string or an integer: it always serializes.
    let id = serde_json::to_string(id).unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":{COMPACT_TOOLS_JSON}}}}}"#)
}

/// `tools.json` without the whitespace between its tokens, as serde_json writes it
/// compactly; made by the compiler.
const COMPACT_TOOLS_JSON: &str = {
    const BYTES: &[u8] = TOOLS_JSON.as_bytes();
    const LEN: usize = keep_tokens(BYTES, None);
    const COMPACT: [u8; LEN] = {
        let mut out = [0; LEN];
        keep_tokens(BYTES, Some(&mut out));
        out
    };
    match std::str::from_utf8(&COMPACT) {
        Ok(text) => text,
        Err(_) => panic!("dropping ASCII whitespace left tools.json valid UTF-8"),
    }
};

/// How many bytes of `json` are part of its tokens (all but the whitespace between them),
/// copying them, in order, to the front of `out` when it is given.
const fn keep_tokens(json: &[u8], mut out: Option<&mut [u8]>) -> usize {
    let mut scan = Scan::START;
    let (mut len, mut i) = (0, 0);
    while i < json.len() {
        if scan.keeps(json[i]) {
            if let Some(out) = &mut out {
                out[len] = json[i];
            }
            len += 1;
        }
        i += 1;
    }
    len
}

/// Where a byte-by-byte reading of JSON text is: inside a string, after a backslash.
struct Scan {
    in_string: bool,
    escaped: bool,
}

impl Scan {
    const START: Self = Self {
        in_string: false,
        escaped: false,
    };

    /// Whether `byte`, the next one, is part of a token (whitespace between tokens is not).
    const fn keeps(&mut self, byte: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
            }
            true
        } else if byte.is_ascii_whitespace() {
            false
        } else {
            self.in_string = byte == b'"';
            true
        }
    }
}

/// The served tool definitions (see [`tools`]).
const TOOLS_JSON: &str = include_str!("tool_catalogue/tools.json");

#[cfg(test)]
mod derive;
