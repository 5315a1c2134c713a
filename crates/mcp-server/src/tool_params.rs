//! The two tools' arguments and definitions. Schemas are generated from the
//! argument structs; the exact JSON is pinned by tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use deputy_core::config::{ConfigLayers, ConfigOverrides, json_to_toml};
use deputy_protocol::{AskForApproval, SandboxMode};
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// Name of the tool that starts a session.
pub(crate) const CODEX_TOOL: &str = "codex";
/// Name of the tool that continues one.
pub(crate) const CODEX_REPLY_TOOL: &str = "codex-reply";

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

impl CodexToolCallParam {
    /// Adds this call's settings to the server's config layers (per-call layer wins).
    pub(crate) fn apply_to(&self, layers: &mut ConfigLayers) {
        if let Some(config) = &self.config {
            layers.call_overrides.extend(
                config
                    .iter()
                    .filter_map(|(key, value)| Some((key.clone(), json_to_toml(value)?))),
            );
        }
        layers.overrides = ConfigOverrides {
            model: self.model.clone(),
            profile: self.profile.clone(),
            cwd: self.cwd.as_ref().map(Into::into),
            approval_policy: self.approval_policy.map(|p| match p {
                ApprovalPolicyParam::Untrusted => AskForApproval::Untrusted,
                ApprovalPolicyParam::OnFailure => AskForApproval::OnFailure,
                ApprovalPolicyParam::OnRequest => AskForApproval::OnRequest,
                ApprovalPolicyParam::Never => AskForApproval::Never,
            }),
            sandbox_mode: self.sandbox.map(|s| match s {
                SandboxModeParam::ReadOnly => SandboxMode::ReadOnly,
                SandboxModeParam::WorkspaceWrite => SandboxMode::WorkspaceWrite,
                SandboxModeParam::DangerFullAccess => SandboxMode::DangerFullAccess,
            }),
            base_instructions: self.base_instructions.clone(),
            developer_instructions: self.developer_instructions.clone(),
            compact_prompt: self.compact_prompt.clone(),
            include_plan_tool: self.include_plan_tool,
        };
    }
}

/// The tools this server offers, in `tools/list` order.
pub(crate) fn tools() -> Vec<Tool> {
    let output = Arc::new(object(serde_json::json!({
        "type": "object",
        "properties": {
            "threadId": {"type": "string"},
            "content": {"type": "string"}
        },
        "required": ["threadId", "content"]
    })));
    vec![
        Tool::new(
            CODEX_TOOL,
            "Run a deputy session: the coding agent works on `prompt` in `cwd` (running commands and editing files under the given sandbox and approval policy) and returns its final answer. Accepts configuration parameters matching config.toml.",
            Arc::new(input_schema::<CodexToolCallParam>()),
        )
        .with_title("Codex")
        .with_raw_output_schema(output.clone()),
        Tool::new(
            CODEX_REPLY_TOOL,
            "Continue a deputy session by giving its thread id and the next prompt. Works across server restarts.",
            Arc::new(input_schema::<CodexReplyParam>()),
        )
        .with_title("Codex Reply")
        .with_raw_output_schema(output),
        crate::review_tool::review_tool(),
    ]
}

/// An input schema in the trimmed form Codex's clients know: `type`, `properties`, `required`.
pub(crate) fn input_schema<T: JsonSchema>() -> JsonObject {
    let settings = schemars::generate::SchemaSettings::draft2019_09().with(|s| {
        s.inline_subschemas = true;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    strip_null(&mut schema);
    let mut trimmed = JsonObject::new();
    for key in ["type", "properties", "required"] {
        if let Some(value) = schema.get(key) {
            trimmed.insert(key.to_string(), value.clone());
        }
    }
    trimmed
}

/// Optional arguments are simply absent, never `null`: drop the `null`
/// alternatives schemars adds for `Option` fields.
fn strip_null(schema: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    for value in map.values_mut() {
        match value {
            Value::Object(_) => strip_null(value),
            Value::Array(items) => items.iter_mut().for_each(strip_null),
            _ => {}
        }
    }
}

fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}
