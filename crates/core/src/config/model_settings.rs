//! The keys that shape what the model is sent: reasoning and verbosity, the hosted web
//! search, and `[model_families.PREFIX]` rows that override the built-in family table.

use serde::Deserialize;

/// `model_reasoning_summary`: how much of its reasoning a reasoning model summarises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummary {
    /// The provider's choice.
    Auto,
    /// A short summary.
    Concise,
    /// A long summary.
    Detailed,
    /// No summary.
    None,
}

impl ReasoningSummary {
    /// The value as the Responses API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
            Self::None => "none",
        }
    }
}

/// `model_verbosity`: how long the model's answers are (Responses `text.verbosity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    /// Short answers.
    Low,
    /// The provider's default.
    Medium,
    /// Long answers.
    High,
}

impl Verbosity {
    /// The value as the Responses API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Whether the provider's hosted web search is offered, and with which results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WebSearchMode {
    /// Not offered (the default).
    #[default]
    Disabled,
    /// Offered, with live results.
    Live,
    /// Offered, with the provider's cached results only.
    Cached,
}

/// `[tools]`: built-in tools switched on or off.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ToolsToml {
    /// `tools.web_search = true`: the hosted web search with live results.
    pub(super) web_search: Option<bool>,
    /// `tools.view_image = false` withdraws `view_image` from models that take images.
    pub(super) view_image: Option<bool>,
}

/// The web search mode `web_search` (`"live"`, `"cached"`, `"disabled"` or a boolean) and
/// `tools.web_search` select; `Err` is the message for a value that means nothing.
pub(super) fn web_search_mode(
    web_search: Option<&toml::Value>,
    tools: Option<&ToolsToml>,
) -> Result<WebSearchMode, String> {
    let from_tools = tools.and_then(|tools| tools.web_search);
    match web_search {
        None => Ok(match from_tools {
            Some(true) => WebSearchMode::Live,
            _ => WebSearchMode::Disabled,
        }),
        Some(toml::Value::Boolean(true)) => Ok(WebSearchMode::Live),
        Some(toml::Value::Boolean(false)) => Ok(WebSearchMode::Disabled),
        Some(toml::Value::String(mode)) => match mode.as_str() {
            "live" => Ok(WebSearchMode::Live),
            "cached" => Ok(WebSearchMode::Cached),
            "disabled" => Ok(WebSearchMode::Disabled),
            other => Err(format!(
                "`web_search = \"{other}\"`: expected \"live\", \"cached\" or \"disabled\""
            )),
        },
        Some(other) => Err(format!(
            "`web_search = {other}`: expected \"live\", \"cached\", \"disabled\" or a boolean"
        )),
    }
}

/// Which command tools a family is offered, as config spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellToolSetting {
    /// `shell_command` alone.
    ShellCommand,
    /// `shell` and `shell_command`.
    Shell,
    /// `exec_command` and `write_stdin` (unified exec).
    UnifiedExec,
}

/// How a family is offered `apply_patch`, as config spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyPatchSetting {
    /// A custom tool taking the raw patch, constrained by the patch grammar.
    Freeform,
    /// A function taking the patch as `input`.
    Function,
}

/// `[model_families.PREFIX]`: what deputy should believe about models whose name starts
/// with `PREFIX`, over the built-in table (each key left out keeps the table's value).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ModelFamilyOverride {
    /// Input tokens the model takes.
    pub context_window: Option<u64>,
    /// Whether the model reasons (sent `reasoning.summary` and asked for its encrypted
    /// reasoning, which is sent back in later requests).
    pub reasoning: Option<bool>,
    /// The command tools it is offered.
    pub shell_tool: Option<ShellToolSetting>,
    /// How it is offered `apply_patch`.
    pub apply_patch_tool: Option<ApplyPatchSetting>,
    /// Whether it takes images.
    pub images: Option<bool>,
    /// Whether the provider's hosted web search works with it.
    pub web_search: Option<bool>,
    /// Whether it may call several tools in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Its base instructions, replacing deputy's.
    pub base_instructions: Option<String>,
}
