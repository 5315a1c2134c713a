//! Configuration: `$DEPUTY_HOME/config.toml`, profiles, `-c` overrides and per-call overrides.
//!
//! Precedence, lowest first: built-in defaults < config.toml < the selected
//! profile < `-c key=value` overrides < per-call parameters. All layers are
//! merged as TOML tables and deserialized once, so every layer accepts the
//! same keys with the same meaning.

mod known_keys;
mod mcp_servers;
mod model_list;
mod model_settings;
mod overrides;
mod provider;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_protocol::{AskForApproval, SandboxMode, SandboxPolicy, TurnOverrides};
use serde::Deserialize;

use crate::exec_env::ShellEnvironmentPolicy;

pub use mcp_servers::{
    DEFAULT_MCP_STARTUP_TIMEOUT, DEFAULT_MCP_TOOL_TIMEOUT, InvalidServerName, McpServerConfig,
    McpServerTransport, check_server_name as check_mcp_server_name,
};
pub use model_list::{ConfiguredModel, configured_models};
pub use model_settings::{
    ApplyPatchSetting, ModelFamilyOverride, ReasoningSummary, ShellToolSetting, Verbosity,
    WebSearchMode,
};
pub use overrides::{json_to_toml, parse_cli_override};
pub use provider::{MissingApiKey, ModelProviderInfo, built_in_providers};

/// Model used when nothing selects one.
pub const DEFAULT_MODEL: &str = "gpt-5-codex";
/// Provider used when nothing selects one.
pub const DEFAULT_PROVIDER: &str = "openai";
/// Tool output sent to the model is cut to about this many tokens.
pub const DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT: usize = 10_000;
/// How long an approval request waits for an answer before it counts as denied.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);
/// Most bytes of AGENTS.md instructions sent to the model.
pub const DEFAULT_PROJECT_DOC_MAX_BYTES: usize = 32 * 1024;
/// How long a thread may sit idle (no turn, nobody following it) before it is unloaded.
pub const DEFAULT_THREAD_IDLE_UNLOAD: Duration = Duration::from_secs(30 * 60);
/// How often a running MCP call reports progress when nothing else happens: often enough
/// for a client whose request timeout restarts on progress to keep a 3 s timeout.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(2);
/// The shortest progress interval honoured (a zero interval would be a busy loop).
const MIN_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// A config error a user can act on: which file, where, what.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or a value has the wrong type.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// What is wrong, naming the key.
        message: String,
    },
    /// Several problems in one file, first line first.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ConfigError>),
    /// An override (`-c` or per-call) is malformed or has the wrong type.
    #[error("invalid override: {0}")]
    Override(String),
    /// The configuration is well-formed but inconsistent.
    #[error("{0}")]
    Semantic(String),
}

/// `[sandbox_workspace_write]` (also saved in a session's metadata).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct SandboxWorkspaceWrite {
    /// Extra writable roots.
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
    /// Whether commands may use the network.
    #[serde(default)]
    pub network_access: bool,
    /// Leave `$TMPDIR` read-only.
    #[serde(default)]
    pub exclude_tmpdir_env_var: bool,
    /// Leave `/tmp` read-only.
    #[serde(default)]
    pub exclude_slash_tmp: bool,
    /// Let confined commands (read-only and workspace-write) create Unix sockets, and so
    /// connect to local daemons (ssh-agent, docker, D-Bus, tmux) whose sockets they can see.
    #[serde(default)]
    pub allow_unix_sockets: bool,
}

/// The shape of config.toml (and of every merged layer).
#[derive(Debug, Default, Deserialize)]
struct ConfigToml {
    model: Option<String>,
    model_provider: Option<String>,
    approval_policy: Option<AskForApproval>,
    sandbox_mode: Option<SandboxMode>,
    // Read from the raw table before deserializing (profile selection); declared
    // here so that serde_ignored does not report them as unknown keys.
    #[expect(dead_code, reason = "declared for key validation only")]
    profile: Option<String>,
    model_auto_compact_token_limit: Option<u64>,
    model_context_window: Option<u64>,
    tool_output_token_limit: Option<usize>,
    approval_timeout_sec: Option<u64>,
    thread_idle_unload_sec: Option<u64>,
    base_instructions: Option<String>,
    developer_instructions: Option<String>,
    compact_prompt: Option<String>,
    review_model: Option<String>,
    project_doc_max_bytes: Option<usize>,
    include_plan_tool: Option<bool>,
    progress_interval_ms: Option<u64>,
    // Codex keys with a meaning here (the built-in provider's endpoint, the effort a
    // reasoning model spends, the hosted web search tool).
    openai_base_url: Option<String>,
    model_reasoning_effort: Option<String>,
    model_reasoning_summary: Option<ReasoningSummary>,
    model_verbosity: Option<Verbosity>,
    model_supports_reasoning_summaries: Option<bool>,
    web_search: Option<toml::Value>,
    tools: Option<model_settings::ToolsToml>,
    #[serde(default)]
    model_families: BTreeMap<String, ModelFamilyOverride>,
    #[serde(default)]
    sandbox_workspace_write: SandboxWorkspaceWrite,
    #[serde(default)]
    shell_environment_policy: ShellEnvironmentPolicy,
    #[serde(default)]
    model_providers: BTreeMap<String, ModelProviderInfo>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpServerConfig>,
    #[serde(default)]
    #[expect(dead_code, reason = "declared for key validation only")]
    profiles: BTreeMap<String, toml::Table>,
}

/// Per-call settings that are not plain config keys (MCP tool arguments, CLI flags).
#[derive(Debug, Clone, Default)]
pub struct ConfigOverrides {
    /// `model`.
    pub model: Option<String>,
    /// Profile to select instead of config.toml's `profile`.
    pub profile: Option<String>,
    /// Working directory; relative paths resolve against the process cwd.
    pub cwd: Option<PathBuf>,
    /// `approval_policy`.
    pub approval_policy: Option<AskForApproval>,
    /// `sandbox_mode`.
    pub sandbox_mode: Option<SandboxMode>,
    /// Replaces deputy's built-in system instructions.
    pub base_instructions: Option<String>,
    /// Sent to the model as a developer message.
    pub developer_instructions: Option<String>,
    /// Prompt used when compacting history.
    pub compact_prompt: Option<String>,
    /// Whether `update_plan` is offered.
    pub include_plan_tool: Option<bool>,
    /// More writable roots for `workspace-write`, besides the configured ones (`--add-dir`).
    pub additional_writable_roots: Vec<PathBuf>,
}

/// Fully resolved configuration of one thread.
#[derive(Debug, Clone)]
pub struct Config {
    /// `$DEPUTY_HOME`.
    pub deputy_home: PathBuf,
    /// Model name.
    pub model: String,
    /// Key of the provider in `model_providers`.
    pub model_provider_id: String,
    /// The provider itself.
    pub model_provider: ModelProviderInfo,
    /// Whether the provider is deputy's own (`openai`, `ollama`) rather than a
    /// `[model_providers]` table of the configuration.
    pub model_provider_built_in: bool,
    /// When to ask before acting.
    pub approval_policy: AskForApproval,
    /// How commands are confined.
    pub sandbox_mode: SandboxMode,
    /// `[sandbox_workspace_write]`.
    pub sandbox_workspace_write: SandboxWorkspaceWrite,
    /// `[shell_environment_policy]`: the environment commands start with.
    pub shell_environment_policy: ShellEnvironmentPolicy,
    /// Working directory of the thread (absolute, existing).
    pub cwd: PathBuf,
    /// Replaces deputy's built-in instructions when set.
    pub base_instructions: Option<String>,
    /// Sent as a developer message at the start of the thread.
    pub developer_instructions: Option<String>,
    /// Prompt used when compacting history.
    pub compact_prompt: Option<String>,
    /// The model reviews run with (default: the session's model).
    pub review_model: Option<String>,
    /// Whether `update_plan` is offered to the model.
    pub include_plan_tool: bool,
    /// `model_auto_compact_token_limit`: compact the history past this many tokens
    /// (see [`Config::auto_compact_token_limit`] for the default).
    pub model_auto_compact_token_limit: Option<u64>,
    /// `model_context_window`: overrides the built-in window of the model
    /// (see [`Config::context_window`]).
    pub model_context_window: Option<u64>,
    /// Most bytes of AGENTS.md instructions sent to the model; 0 sends none.
    pub project_doc_max_bytes: usize,
    /// Tool output to the model is truncated to about this many tokens.
    pub tool_output_token_limit: usize,
    /// How long to wait for an approval answer.
    pub approval_timeout: Duration,
    /// How long the thread may sit idle before it is unloaded (its history stays on disk).
    pub thread_idle_unload: Duration,
    /// How often a running MCP call reports progress when nothing else happens.
    pub progress_interval: Duration,
    /// `model_reasoning_effort`: how hard a reasoning model thinks, sent as the provider's
    /// reasoning effort (`minimal`, `low`, `medium`, `high`, …; checked by the provider).
    pub model_reasoning_effort: Option<String>,
    /// `model_reasoning_summary`: the summary a reasoning model is asked for (`auto` unless set).
    pub model_reasoning_summary: Option<ReasoningSummary>,
    /// `model_verbosity`: Responses `text.verbosity`, when set.
    pub model_verbosity: Option<Verbosity>,
    /// `model_supports_reasoning_summaries`: whether the model reasons, over its family's word.
    pub model_supports_reasoning_summaries: Option<bool>,
    /// `web_search` / `tools.web_search`: whether the hosted web search is offered.
    pub web_search: WebSearchMode,
    /// `tools.view_image`: whether `view_image` is offered to models that take images.
    pub view_image_tool: bool,
    /// `[model_families.PREFIX]`: overrides of the built-in model family table.
    pub model_families: BTreeMap<String, ModelFamilyOverride>,
    /// The selected profile, if any.
    pub profile: Option<String>,
    /// `[mcp_servers]`: the MCP servers whose tools the model is offered, by name.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// The executable that confines commands (deputy itself); `None` means
    /// sandboxed commands cannot run (fail closed).
    pub sandbox_launcher: Option<PathBuf>,
    /// The thread's private `/tmp` for confined commands (set when the thread starts).
    pub(crate) sandbox_private_tmp: Option<std::sync::Arc<crate::private_tmp::PrivateTmpSlot>>,
    /// Problems that did not stop loading (unknown keys…), for the user to see.
    pub warnings: Vec<String>,
}

impl Config {
    /// Checks that the model provider's API key is in the environment; when it is not,
    /// the error says how to provide one, or how to use a server that needs none.
    pub fn check_api_key(&self) -> Result<(), ConfigError> {
        let provider = &self.model_provider;
        if provider.api_key().is_ok() {
            return Ok(());
        }
        let variables = provider.key_variables();
        let var = provider.env_key.as_deref().unwrap_or_default();
        Err(ConfigError::Semantic(format!(
            "no API key: model provider `{id}` reads it from the environment variable {variables}, \
             which is not set (or empty).\n\
             Either set it:\n\
             \n    export {var}=...\n\n\
             or use a model server that needs no key, with a [model_providers] entry in {path}, \
             for example a local Ollama:\n\
             \n    model = \"qwen2.5-coder\"\
             \n    model_provider = \"ollama\"\
             \n\
             \n    [model_providers.ollama]\
             \n    name = \"Ollama\"\
             \n    base_url = \"http://localhost:11434/v1\"\
             \n    wire_api = \"chat\"",
            id = self.model_provider_id,
            path = self.deputy_home.join("config.toml").display(),
        )))
    }

    /// Where the model server's address comes from, for a message about a server that
    /// cannot be reached: the `base_url` and the setting to change it.
    pub fn base_url_origin(&self) -> String {
        let path = self.deputy_home.join("config.toml");
        let (id, url) = (&self.model_provider_id, &self.model_provider.base_url);
        match (self.model_provider_built_in, id.as_str()) {
            (true, "openai") => format!(
                "base_url {url} of the built-in `openai` provider: set `openai_base_url` in {} \
                 (or OPENAI_BASE_URL) to use another server",
                path.display()
            ),
            (true, _) => format!(
                "base_url {url} of the built-in `{id}` provider: define [model_providers.{id}] \
                 in {} to use another address",
                path.display()
            ),
            (false, _) => format!(
                "base_url = \"{url}\" of [model_providers.{id}] in {}",
                path.display()
            ),
        }
    }

    /// This configuration with a turn's overrides applied (a relative `cwd` resolves
    /// against the current one and must be an existing directory).
    pub fn with_overrides(&self, overrides: &TurnOverrides) -> Result<Config, ConfigError> {
        let mut config = self.clone();
        if let Some(cwd) = &overrides.cwd {
            let cwd = self.cwd.join(cwd);
            if !cwd.is_dir() {
                return Err(ConfigError::Semantic(format!(
                    "cwd `{}` does not exist or is not a directory",
                    cwd.display()
                )));
            }
            config.cwd = cwd.canonicalize().unwrap_or(cwd);
        }
        if let Some(model) = &overrides.model {
            if model.trim().is_empty() {
                return Err(ConfigError::Semantic("the model name is empty".into()));
            }
            config.model = model.clone();
        }
        if let Some(policy) = overrides.approval_policy {
            config.approval_policy = policy;
        }
        if let Some(policy) = &overrides.sandbox_policy {
            config.sandbox_mode = policy.mode();
            let ws = &mut config.sandbox_workspace_write;
            match policy {
                SandboxPolicy::DangerFullAccess => {}
                SandboxPolicy::ReadOnly { network_access } => ws.network_access = *network_access,
                SandboxPolicy::WorkspaceWrite {
                    writable_roots,
                    network_access,
                    exclude_tmpdir_env_var,
                    exclude_slash_tmp,
                } => {
                    ws.writable_roots.clone_from(writable_roots);
                    ws.network_access = *network_access;
                    ws.exclude_tmpdir_env_var = *exclude_tmpdir_env_var;
                    ws.exclude_slash_tmp = *exclude_slash_tmp;
                }
            }
        }
        Ok(config)
    }

    /// The sandbox policy these settings describe.
    pub fn sandbox_policy(&self) -> SandboxPolicy {
        let network_access = self.sandbox_workspace_write.network_access;
        match self.sandbox_mode {
            SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
            SandboxMode::ReadOnly => SandboxPolicy::ReadOnly { network_access },
            SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite {
                writable_roots: self.sandbox_workspace_write.writable_roots.clone(),
                network_access,
                exclude_tmpdir_env_var: self.sandbox_workspace_write.exclude_tmpdir_env_var,
                exclude_slash_tmp: self.sandbox_workspace_write.exclude_slash_tmp,
            },
        }
    }
}

/// Where deputy keeps its config and sessions: `$DEPUTY_HOME`, else `~/.deputy`.
pub fn deputy_home() -> PathBuf {
    if let Some(home) = std::env::var_os("DEPUTY_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    home.join(".deputy")
}

/// Everything that goes into one [`Config`], lowest precedence first.
#[derive(Debug, Clone, Default)]
pub struct ConfigLayers {
    /// `$DEPUTY_HOME`.
    pub deputy_home: PathBuf,
    /// `-c key=value` overrides, already parsed.
    pub cli_overrides: Vec<(String, toml::Value)>,
    /// Dotted-path overrides from the caller (the MCP `config` argument).
    pub call_overrides: Vec<(String, toml::Value)>,
    /// Typed per-call settings.
    pub overrides: ConfigOverrides,
}

impl ConfigLayers {
    /// Layers with only a home directory.
    pub fn new(deputy_home: PathBuf) -> Self {
        Self {
            deputy_home,
            ..Self::default()
        }
    }

    /// Reads config.toml and resolves every layer into a [`Config`].
    pub fn load(&self) -> Result<Config, ConfigError> {
        let path = self.deputy_home.join("config.toml");
        let (file_table, mut warnings) = read_config_file(&path)?;
        self.resolve(file_table, &mut warnings).map(|mut config| {
            config.warnings = warnings;
            config
        })
    }

    fn resolve(
        &self,
        file_table: toml::Table,
        warnings: &mut Vec<String>,
    ) -> Result<Config, ConfigError> {
        let mut table = file_table;
        let profile_name = self.selected_profile(&table)?;
        if let Some(name) = &profile_name {
            let profile = table
                .get("profiles")
                .and_then(|p| p.get(name))
                .and_then(|p| p.as_table())
                .cloned()
                .ok_or_else(|| {
                    ConfigError::Semantic(format!(
                        "config profile `{name}` not found in {}",
                        self.deputy_home.join("config.toml").display()
                    ))
                })?;
            overrides::merge_tables(&mut table, profile);
        }
        for (key, value) in self.cli_overrides.iter().chain(&self.call_overrides) {
            overrides::set_dotted(&mut table, key, value.clone())?;
        }
        let toml: ConfigToml = deserialize_checked(toml::Value::Table(table), |key| {
            let quoted = format!("`{key}`");
            if !warnings.iter().any(|w| w.contains(&quoted)) {
                warnings.push(known_keys::unknown_key_warning(&key));
            }
        })
        .map_err(ConfigError::Override)?;
        let web_search =
            model_settings::web_search_mode(toml.web_search.as_ref(), toml.tools.as_ref())
                .map_err(ConfigError::Semantic)?;
        let mut config = self.build(toml, profile_name)?;
        config.web_search = web_search;
        if web_search != WebSearchMode::Disabled
            && config.model_provider.wire_api == deputy_protocol::WireApi::Chat
        {
            warnings.push(format!(
                "web search is offered on Responses providers only; `{}` uses the chat API, \
                 so the model gets no web search",
                config.model_provider_id
            ));
        }
        Ok(config)
    }

    fn selected_profile(&self, table: &toml::Table) -> Result<Option<String>, ConfigError> {
        if let Some(profile) = &self.overrides.profile {
            return Ok(Some(profile.clone()));
        }
        let from_overrides = self
            .call_overrides
            .iter()
            .chain(&self.cli_overrides)
            .rev()
            .find(|(key, _)| key == "profile")
            .map(|(_, value)| value);
        match from_overrides.or_else(|| table.get("profile")) {
            None => Ok(None),
            Some(toml::Value::String(name)) => Ok(Some(name.clone())),
            Some(other) => Err(ConfigError::Override(format!(
                "`profile` must be a string, found {}",
                other.type_str()
            ))),
        }
    }

    fn build(&self, toml: ConfigToml, profile: Option<String>) -> Result<Config, ConfigError> {
        let o = &self.overrides;
        let model_provider_id = toml
            .model_provider
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_string());
        let mut providers = built_in_providers(toml.openai_base_url.as_deref());
        let model_provider_built_in = !toml.model_providers.contains_key(&model_provider_id);
        providers.extend(toml.model_providers);
        let suggestion = known_keys::did_you_mean(&model_provider_id, providers.keys());
        let model_provider = providers.remove(&model_provider_id).ok_or_else(|| {
            ConfigError::Semantic(format!(
                "model_provider `{model_provider_id}` is not defined{suggestion}; the built-in ones are `openai` and `ollama`, \
                 others need a [model_providers.{model_provider_id}] table in {}",
                self.deputy_home.join("config.toml").display()
            ))
        })?;
        for name in toml.mcp_servers.keys() {
            mcp_servers::check_server_name(name)
                .map_err(|e| ConfigError::Semantic(e.to_string()))?;
        }
        let cwd = resolve_cwd(o.cwd.as_deref())?;
        let model = o
            .model
            .clone()
            .or(toml.model)
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        if model.trim().is_empty() {
            return Err(ConfigError::Semantic(
                "`model` is empty: name a model, e.g. `-m gpt-5-codex`".into(),
            ));
        }
        Ok(Config {
            deputy_home: self.deputy_home.clone(),
            model,
            model_provider_id,
            model_provider,
            model_provider_built_in,
            approval_policy: o
                .approval_policy
                .or(toml.approval_policy)
                .unwrap_or_default(),
            sandbox_mode: o.sandbox_mode.or(toml.sandbox_mode).unwrap_or_default(),
            sandbox_workspace_write: SandboxWorkspaceWrite {
                writable_roots: toml
                    .sandbox_workspace_write
                    .writable_roots
                    .iter()
                    .chain(&o.additional_writable_roots)
                    .cloned()
                    .collect(),
                ..toml.sandbox_workspace_write
            },
            shell_environment_policy: toml.shell_environment_policy,
            cwd,
            base_instructions: o.base_instructions.clone().or(toml.base_instructions),
            developer_instructions: o
                .developer_instructions
                .clone()
                .or(toml.developer_instructions),
            compact_prompt: o.compact_prompt.clone().or(toml.compact_prompt),
            review_model: toml.review_model,
            include_plan_tool: o
                .include_plan_tool
                .or(toml.include_plan_tool)
                .unwrap_or(true),
            model_auto_compact_token_limit: toml.model_auto_compact_token_limit,
            model_context_window: toml.model_context_window,
            project_doc_max_bytes: toml
                .project_doc_max_bytes
                .unwrap_or(DEFAULT_PROJECT_DOC_MAX_BYTES),
            tool_output_token_limit: toml
                .tool_output_token_limit
                .unwrap_or(DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT),
            approval_timeout: toml
                .approval_timeout_sec
                .map_or(DEFAULT_APPROVAL_TIMEOUT, Duration::from_secs),
            thread_idle_unload: toml
                .thread_idle_unload_sec
                .map_or(DEFAULT_THREAD_IDLE_UNLOAD, Duration::from_secs),
            progress_interval: toml
                .progress_interval_ms
                .map_or(DEFAULT_PROGRESS_INTERVAL, Duration::from_millis)
                .max(MIN_PROGRESS_INTERVAL),
            model_reasoning_effort: toml.model_reasoning_effort,
            model_reasoning_summary: toml.model_reasoning_summary,
            model_verbosity: toml.model_verbosity,
            model_supports_reasoning_summaries: toml.model_supports_reasoning_summaries,
            web_search: WebSearchMode::Disabled,
            view_image_tool: toml
                .tools
                .as_ref()
                .and_then(|tools| tools.view_image)
                .unwrap_or(true),
            model_families: toml.model_families,
            profile,
            mcp_servers: toml.mcp_servers,
            sandbox_launcher: None,
            sandbox_private_tmp: None,
            warnings: Vec::new(),
        })
    }
}

fn resolve_cwd(cwd: Option<&Path>) -> Result<PathBuf, ConfigError> {
    let process_cwd = std::env::current_dir()
        .map_err(|e| ConfigError::Semantic(format!("cannot read the current directory: {e}")))?;
    let cwd = match cwd {
        None => return Ok(process_cwd),
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => process_cwd.join(dir),
    };
    if !cwd.is_dir() {
        return Err(ConfigError::Semantic(format!(
            "cwd `{}` does not exist or is not a directory",
            cwd.display()
        )));
    }
    Ok(cwd.canonicalize().unwrap_or(cwd))
}

/// Reads config.toml into a table, checking every key's type against the
/// schema so errors name the file, line and key. A missing file is empty.
fn read_config_file(path: &Path) -> Result<(toml::Table, Vec<String>), ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((toml::Table::new(), Vec::new()));
        }
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let invalid = |line: usize, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(first) => {
            // Every syntax error of the file, not just the first.
            let (_, errors) = toml::de::DeTable::parse_recoverable(&text);
            let mut errors: Vec<ConfigError> = errors
                .iter()
                .map(|e| {
                    invalid(
                        line_of(&text, e.span()),
                        format!("invalid TOML: {}", e.message().trim()),
                    )
                })
                .collect();
            if errors.is_empty() {
                // Well-formed, but with a value no type holds (`x = 1e999`): only the
                // full read sees it.
                errors.push(invalid(
                    line_of(&text, first.span()),
                    format!("invalid TOML: {}", first.message().trim()),
                ));
            }
            return Err(several(errors));
        }
    };
    let mut warnings = Vec::new();
    let mut unknown = |key: serde_ignored::Path<'_>| {
        warnings.push(format!(
            "{}: {}",
            path.display(),
            known_keys::unknown_key_warning(&key.to_string())
        ));
    };
    let errors = type_errors(&text, &mut unknown)
        .into_iter()
        .map(|(line, message)| invalid(line, message))
        .collect::<Vec<_>>();
    if !errors.is_empty() {
        return Err(several(errors));
    }
    Ok((table, warnings))
}

/// One error as itself, several (sorted by line) as [`ConfigError::Several`].
fn several(mut errors: Vec<ConfigError>) -> ConfigError {
    let line = |e: &ConfigError| match e {
        ConfigError::Invalid { line, .. } => *line,
        _ => 0,
    };
    errors.sort_by_key(line);
    if errors.len() == 1 {
        errors.remove(0)
    } else {
        ConfigError::Several(errors)
    }
}

/// Every type error of a well-formed config file as `(line, message)`, reporting unknown
/// keys to `unknown`. Each top-level key (and each entry of a top-level table) is checked
/// on its own, so that one bad value does not hide the next.
fn type_errors(
    text: &str,
    unknown: &mut dyn FnMut(serde_ignored::Path<'_>),
) -> Vec<(usize, String)> {
    use toml::Spanned;
    use toml::de::{DeTable, DeValue};
    let Ok(root) = DeTable::parse(text) else {
        return Vec::new();
    };
    let span = root.span();
    let mut errors = Vec::new();
    let check = |table: DeTable<'_>, unknown: &mut dyn FnMut(serde_ignored::Path<'_>)| {
        let deserializer = toml::de::Deserializer::from(Spanned::new(span.clone(), table));
        let mut report = |key: serde_ignored::Path<'_>| unknown(key);
        let checked: Result<ConfigToml, _> = serde_path_to_error::deserialize(
            serde_ignored::Deserializer::new(deserializer, &mut report),
        );
        checked.err().map(|err| {
            let key = err.path().to_string();
            let inner = err.into_inner();
            (
                line_of(text, inner.span()),
                format!(
                    "invalid value for `{key}`: {}",
                    plain_message(inner.message())
                ),
            )
        })
    };
    for (key, value) in root.into_inner() {
        let whole = |value| DeTable::from_iter([(key.clone(), value)]);
        let entries: Vec<_> = match value.get_ref() {
            DeValue::Table(entries) if entries.len() > 1 => entries.clone().into_iter().collect(),
            _ => Vec::new(),
        };
        let Some(error) = check(whole(value.clone()), &mut *unknown) else {
            continue;
        };
        // A table with an error: look at its entries one by one for all of them.
        let mut ignore = |_: serde_ignored::Path<'_>| {};
        let found: Vec<_> = entries
            .into_iter()
            .filter_map(|entry| {
                let one = Spanned::new(value.span(), DeValue::Table(DeTable::from_iter([entry])));
                check(whole(one), &mut ignore)
            })
            .collect();
        if found.is_empty() {
            errors.push(error);
        } else {
            errors.extend(found);
        }
    }
    errors.sort();
    errors.dedup();
    errors
}

/// A serde message in the words of a config file: "expected an integer", not "expected
/// usize"; "expected X, found Y" for a value of the wrong type.
pub(crate) fn plain_message(message: &str) -> String {
    let message = message.trim();
    let wanted = |expected: &str| -> String {
        let expected = expected.trim();
        match expected {
            "usize" | "u8" | "u16" | "u32" | "u64" | "u128" => "an integer (0 or more)".into(),
            "isize" | "i8" | "i16" | "i32" | "i64" | "i128" => "an integer".into(),
            "f32" | "f64" => "a number".into(),
            "bool" | "a boolean" => "a boolean (true or false)".into(),
            "a sequence" => "an array".into(),
            "a map" => "a table".into(),
            other if other.starts_with("struct ") || other.starts_with("a map") => "a table".into(),
            other => other.to_string(),
        }
    };
    if let Some(rest) = message.strip_prefix("invalid type: ")
        && let Some((found, expected)) = rest.rsplit_once(", expected ")
    {
        return format!("expected {}, found {found}", wanted(expected));
    }
    if let Some(rest) = message.strip_prefix("invalid value: ")
        && let Some((found, expected)) = rest.rsplit_once(", expected ")
    {
        return format!("expected {}, found {found}", wanted(expected));
    }
    message.to_string()
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> usize {
    span.map_or(0, |span| {
        text[..span.start.min(text.len())].matches('\n').count() + 1
    })
}

/// Deserializes a merged table, reporting unknown keys and naming the key of a type error.
fn deserialize_checked<T: serde::de::DeserializeOwned>(
    value: toml::Value,
    mut on_unknown: impl FnMut(String),
) -> Result<T, String> {
    let mut unknown = |path: serde_ignored::Path<'_>| on_unknown(path.to_string());
    serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut unknown)).map_err(
        |err| {
            let key = err.path().to_string();
            format!(
                "invalid value for `{key}`: {}",
                plain_message(err.into_inner().message())
            )
        },
    )
}

#[cfg(test)]
mod random_input;
#[cfg(test)]
mod tests;
