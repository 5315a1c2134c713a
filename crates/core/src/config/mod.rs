//! Configuration: `$DEPUTY_HOME/config.toml`, profiles, `-c` overrides and per-call overrides.
//!
//! Precedence, lowest first: built-in defaults < config.toml < the selected
//! profile < `-c key=value` overrides < per-call parameters. All layers are
//! merged as TOML tables and deserialized once, so every layer accepts the
//! same keys with the same meaning.

mod overrides;
mod provider;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_protocol::{AskForApproval, SandboxMode, SandboxPolicy};
use serde::Deserialize;

pub use overrides::{json_to_toml, parse_cli_override};
pub use provider::{ModelProviderInfo, built_in_providers};

/// Model used when nothing selects one.
pub const DEFAULT_MODEL: &str = "gpt-5-codex";
/// Provider used when nothing selects one.
pub const DEFAULT_PROVIDER: &str = "openai";
/// Tool output sent to the model is cut to about this many tokens.
pub const DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT: usize = 10_000;
/// How long an approval request waits for an answer before it counts as denied.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

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
    base_instructions: Option<String>,
    developer_instructions: Option<String>,
    compact_prompt: Option<String>,
    include_plan_tool: Option<bool>,
    #[serde(default)]
    sandbox_workspace_write: SandboxWorkspaceWrite,
    #[serde(default)]
    model_providers: BTreeMap<String, ModelProviderInfo>,
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
    /// When to ask before acting.
    pub approval_policy: AskForApproval,
    /// How commands are confined.
    pub sandbox_mode: SandboxMode,
    /// `[sandbox_workspace_write]`.
    pub sandbox_workspace_write: SandboxWorkspaceWrite,
    /// Working directory of the thread (absolute, existing).
    pub cwd: PathBuf,
    /// Replaces deputy's built-in instructions when set.
    pub base_instructions: Option<String>,
    /// Sent as a developer message at the start of the thread.
    pub developer_instructions: Option<String>,
    /// Prompt used when compacting history.
    pub compact_prompt: Option<String>,
    /// Whether `update_plan` is offered to the model.
    pub include_plan_tool: bool,
    /// Compact history past this many tokens.
    pub model_auto_compact_token_limit: Option<u64>,
    /// The model's context window, when known.
    pub model_context_window: Option<u64>,
    /// Tool output to the model is truncated to about this many tokens.
    pub tool_output_token_limit: usize,
    /// How long to wait for an approval answer.
    pub approval_timeout: Duration,
    /// The selected profile, if any.
    pub profile: Option<String>,
    /// The executable that confines commands (deputy itself); `None` means
    /// sandboxed commands cannot run (fail closed).
    pub sandbox_launcher: Option<PathBuf>,
    /// The thread's private `/tmp` for confined commands (set when the thread starts).
    pub(crate) sandbox_private_tmp: Option<std::sync::Arc<crate::sandboxing::PrivateTmpSlot>>,
    /// Problems that did not stop loading (unknown keys…), for the user to see.
    pub warnings: Vec<String>,
}

impl Config {
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
                warnings.push(format!("unknown config key {quoted} (ignored)"));
            }
        })
        .map_err(ConfigError::Override)?;
        self.build(toml, profile_name)
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
        let mut providers = built_in_providers();
        providers.extend(toml.model_providers);
        let model_provider = providers.remove(&model_provider_id).ok_or_else(|| {
            ConfigError::Semantic(format!(
                "model_provider `{model_provider_id}` is not defined; add [model_providers.{model_provider_id}] to config.toml"
            ))
        })?;
        let cwd = resolve_cwd(o.cwd.as_deref())?;
        Ok(Config {
            deputy_home: self.deputy_home.clone(),
            model: o
                .model
                .clone()
                .or(toml.model)
                .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            model_provider_id,
            model_provider,
            approval_policy: o
                .approval_policy
                .or(toml.approval_policy)
                .unwrap_or_default(),
            sandbox_mode: o.sandbox_mode.or(toml.sandbox_mode).unwrap_or_default(),
            sandbox_workspace_write: toml.sandbox_workspace_write,
            cwd,
            base_instructions: o.base_instructions.clone().or(toml.base_instructions),
            developer_instructions: o
                .developer_instructions
                .clone()
                .or(toml.developer_instructions),
            compact_prompt: o.compact_prompt.clone().or(toml.compact_prompt),
            include_plan_tool: o
                .include_plan_tool
                .or(toml.include_plan_tool)
                .unwrap_or(true),
            model_auto_compact_token_limit: toml.model_auto_compact_token_limit,
            model_context_window: toml.model_context_window,
            tool_output_token_limit: toml
                .tool_output_token_limit
                .unwrap_or(DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT),
            approval_timeout: toml
                .approval_timeout_sec
                .map_or(DEFAULT_APPROVAL_TIMEOUT, Duration::from_secs),
            profile,
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
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        invalid(
            line_of(&text, e.span()),
            format!("invalid TOML: {}", e.message().trim()),
        )
    })?;
    let mut warnings = Vec::new();
    let deserializer = toml::de::Deserializer::parse(&text)
        .map_err(|e| invalid(line_of(&text, e.span()), e.message().trim().to_string()))?;
    let mut unknown = |key: serde_ignored::Path<'_>| {
        warnings.push(format!(
            "{}: unknown config key `{key}` (ignored)",
            path.display()
        ));
    };
    let checked: Result<ConfigToml, _> = serde_path_to_error::deserialize(
        serde_ignored::Deserializer::new(deserializer, &mut unknown),
    );
    if let Err(err) = checked {
        let key = err.path().to_string();
        let inner = err.into_inner();
        return Err(invalid(
            line_of(&text, inner.span()),
            format!("invalid value for `{key}`: {}", inner.message().trim()),
        ));
    }
    Ok((table, warnings))
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
    serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut unknown))
        .map_err(|err| format!("`{}`: {}", err.path(), err.inner()))
}

#[cfg(test)]
mod tests;
