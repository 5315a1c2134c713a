//! What deputy knows about a model: its context window, whether it reasons, which tools
//! it is offered and in which form, what it can take, and the instructions it is given.
//!
//! One built-in table, by model name prefix (the most specific matching row wins; a
//! provider prefix such as `openai/` and case are ignored); a model it does not know gets
//! the generic family. The configuration then has the last word: its
//! `[model_families.PREFIX]` rows (every matching one, shortest prefix first) and its own
//! keys (`model_context_window`, `base_instructions`, `include_plan_tool`,
//! `model_supports_reasoning_summaries`, `web_search`, `tools.view_image`). The tool
//! registry and the request builder read the family, never the table or those keys.

use deputy_protocol::WireApi;

use crate::config::{
    ApplyPatchSetting, Config, ModelFamilyOverride, ShellToolSetting, WebSearchMode,
};

/// Which command tools the model is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellToolKind {
    /// `shell` (an argv) and `shell_command` (a `bash -lc` script), both one-shot.
    ShellAndShellCommand,
    /// `shell_command` alone.
    ShellCommand,
    /// `exec_command` + `write_stdin`: commands that may outlive the call, on a terminal
    /// when asked (the coding models, as Codex offers them).
    UnifiedExec,
}

/// How `apply_patch` is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyPatchToolKind {
    /// A function taking the patch as `input`.
    Function,
    /// A freeform (custom) tool taking the raw patch, constrained by the patch grammar.
    Freeform,
}

/// What deputy knows about one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFamily {
    /// The table prefix the model matched; empty for the generic family.
    pub family: &'static str,
    /// Input tokens the model takes, when known.
    pub context_window: Option<u64>,
    /// Instructions replacing deputy's own (config); `None`: deputy's, written for the
    /// tools the model is offered (`crate::base_instructions`).
    pub custom_instructions: Option<String>,
    /// Whether the model reasons: it is asked for a reasoning summary and for its encrypted
    /// reasoning, which goes back in every later request.
    pub reasoning: bool,
    /// The command tools offered.
    pub shell_tool: ShellToolKind,
    /// How `apply_patch` is offered.
    pub apply_patch_tool: ApplyPatchToolKind,
    /// Whether `update_plan` is offered.
    pub plan_tool: bool,
    /// Whether `request_user_input` is offered.
    pub user_input_tool: bool,
    /// Whether the model takes images (in tool outputs; elsewhere the provider decides).
    pub images: bool,
    /// Whether `view_image` is offered (models that take images, unless config says no).
    pub view_image_tool: bool,
    /// Whether the provider's hosted web search works with the model.
    pub web_search: bool,
    /// The hosted web search as offered: `Some(live)` when it is (enabled in config, a
    /// Responses provider, a model that can use it).
    pub hosted_web_search: Option<bool>,
    /// Whether the model may call several tools in one response.
    pub parallel_tool_calls: bool,
}

/// One row of the built-in table.
struct Known {
    prefix: &'static str,
    /// A further part the name must contain (`-codex` of `gpt-5.1-codex-max`).
    infix: &'static str,
    /// Input tokens, as the provider publishes them.
    context_window: u64,
    images: bool,
    web_search: bool,
    reasoning: bool,
    tools: Tools,
}

/// The tool forms of a row.
#[derive(Clone, Copy)]
enum Tools {
    /// `shell` + `shell_command`, `apply_patch` as a function (the generic set).
    Classic,
    /// `shell_command`, freeform `apply_patch`.
    Gpt5,
    /// The coding models: `exec_command` + `write_stdin` and `request_user_input`, as Codex
    /// offers them. Freeform `apply_patch`.
    Codex,
    /// `shell_command`, `apply_patch` as a function.
    OpenWeights,
}

impl Tools {
    fn shell(self) -> ShellToolKind {
        match self {
            Self::Classic => ShellToolKind::ShellAndShellCommand,
            Self::Codex => ShellToolKind::UnifiedExec,
            Self::Gpt5 | Self::OpenWeights => ShellToolKind::ShellCommand,
        }
    }

    fn apply_patch(self) -> ApplyPatchToolKind {
        match self {
            Self::Classic | Self::OpenWeights => ApplyPatchToolKind::Function,
            Self::Gpt5 | Self::Codex => ApplyPatchToolKind::Freeform,
        }
    }
}

/// A row of the table, one argument per column.
const fn row(
    prefix: &'static str,
    infix: &'static str,
    context_window: u64,
    images: bool,
    web_search: bool,
    reasoning: bool,
    tools: Tools,
) -> Known {
    Known {
        prefix,
        infix,
        context_window,
        images,
        web_search,
        reasoning,
        tools,
    }
}

/// A row of the generic tools for a model that does not reason.
const fn plain(prefix: &'static str, context_window: u64, images: bool, web_search: bool) -> Known {
    row(
        prefix,
        "",
        context_window,
        images,
        web_search,
        false,
        Tools::Classic,
    )
}

/// Models deputy knows. The tool forms of OpenAI's models are those Codex 0.125 gives
/// them (its model catalog), so that a model trained on that harness finds its tools.
const KNOWN: &[Known] = &[
    // OpenAI: the gpt-5 family takes 400k in total, of which 128k are output.
    row("gpt-5", "-codex", 272_000, true, true, true, Tools::Codex),
    row("codex-", "", 272_000, true, true, true, Tools::Codex),
    row("gpt-5", "", 272_000, true, true, true, Tools::Gpt5),
    plain("gpt-4.1", 1_047_576, true, true),
    plain("gpt-4o", 128_000, true, true),
    plain("gpt-4-turbo", 128_000, true, false),
    plain("gpt-4", 8_192, false, false),
    plain("gpt-3.5-turbo", 16_385, false, false),
    row(
        "gpt-oss",
        "",
        131_072,
        false,
        false,
        true,
        Tools::OpenWeights,
    ),
    row("codex-mini", "", 200_000, true, false, true, Tools::Classic),
    row("o1-mini", "", 128_000, false, false, true, Tools::Classic),
    row("o1", "", 200_000, true, false, true, Tools::Classic),
    row("o3", "", 200_000, true, true, true, Tools::Classic),
    row("o4-mini", "", 200_000, true, true, true, Tools::Classic),
    // Open models as local servers name them (`qwen2.5-coder:7b`, `llama3.1:8b`…).
    plain("qwen2.5-coder", 32_768, false, false),
    plain("qwen2.5", 32_768, false, false),
    plain("qwen3-coder", 262_144, false, false),
    plain("qwen3", 40_960, false, false),
    plain("llama3.1", 131_072, false, false),
    plain("llama3.2", 131_072, false, false),
    plain("llama3.3", 131_072, false, false),
    plain("llama-3.1", 131_072, false, false),
    plain("llama-3.2", 131_072, false, false),
    plain("llama-3.3", 131_072, false, false),
    plain("llama3", 8_192, false, false),
    plain("llama-3", 8_192, false, false),
    plain("deepseek-coder-v2", 163_840, false, false),
    plain("codestral", 256_000, false, false),
    plain("devstral", 131_072, false, false),
    plain("mistral-small", 131_072, false, false),
    plain("gemma3", 131_072, true, false),
];

/// The name as the table reads it: without a provider prefix, lower case.
fn table_name(model: &str) -> String {
    model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
}

impl ModelFamily {
    /// The built-in family of `model` (the generic one when the table does not know it).
    pub fn builtin(model: &str) -> Self {
        let name = table_name(model);
        let row = KNOWN
            .iter()
            .filter(|row| name.starts_with(row.prefix) && name.contains(row.infix))
            .max_by_key(|row| row.prefix.len() + row.infix.len());
        let tools = row.map_or(Tools::Classic, |row| row.tools);
        let images = row.is_some_and(|row| row.images);
        Self {
            family: row.map_or("", |row| row.prefix),
            context_window: row.map(|row| row.context_window),
            custom_instructions: None,
            reasoning: row.is_some_and(|row| row.reasoning),
            shell_tool: tools.shell(),
            apply_patch_tool: tools.apply_patch(),
            plan_tool: true,
            // The coding models are trained on asking the user.
            user_input_tool: matches!(tools, Tools::Codex),
            images,
            view_image_tool: images,
            // Of a model it does not know, deputy cannot say: whoever turned the hosted
            // search on decides.
            web_search: row.is_none_or(|row| row.web_search),
            hosted_web_search: None,
            parallel_tool_calls: false,
        }
    }

    /// The family of the configured model, with the configuration's rows and keys applied.
    pub fn for_config(config: &Config) -> Self {
        let mut family = Self::builtin(&config.model);
        let name = table_name(&config.model);
        let mut rows: Vec<(&String, &ModelFamilyOverride)> = config
            .model_families
            .iter()
            .filter(|(prefix, _)| name.starts_with(&prefix.to_ascii_lowercase()))
            .collect();
        rows.sort_by_key(|(prefix, _)| prefix.len());
        for (_, row) in rows {
            family.apply(row);
        }
        if let Some(window) = config.model_context_window {
            family.context_window = Some(window);
        }
        if let Some(instructions) = &config.base_instructions {
            family.custom_instructions = Some(instructions.clone());
        }
        if let Some(reasoning) = config.model_supports_reasoning_summaries {
            family.reasoning = reasoning;
        }
        family.plan_tool = config.include_plan_tool;
        family.view_image_tool = family.images && config.view_image_tool;
        let responses = config.model_provider.wire_api == WireApi::Responses;
        family.hosted_web_search = match config.web_search {
            WebSearchMode::Disabled => None,
            _ if !responses || !family.web_search => None,
            WebSearchMode::Live => Some(true),
            WebSearchMode::Cached => Some(false),
        };
        family
    }

    /// Applies one `[model_families.PREFIX]` row.
    fn apply(&mut self, row: &ModelFamilyOverride) {
        if let Some(window) = row.context_window {
            self.context_window = Some(window);
        }
        if let Some(reasoning) = row.reasoning {
            self.reasoning = reasoning;
        }
        if let Some(shell) = row.shell_tool {
            self.shell_tool = match shell {
                ShellToolSetting::ShellCommand => ShellToolKind::ShellCommand,
                ShellToolSetting::Shell => ShellToolKind::ShellAndShellCommand,
                ShellToolSetting::UnifiedExec => ShellToolKind::UnifiedExec,
            };
        }
        if let Some(patch) = row.apply_patch_tool {
            self.apply_patch_tool = match patch {
                ApplyPatchSetting::Freeform => ApplyPatchToolKind::Freeform,
                ApplyPatchSetting::Function => ApplyPatchToolKind::Function,
            };
        }
        if let Some(images) = row.images {
            self.images = images;
            self.view_image_tool = images;
        }
        if let Some(web_search) = row.web_search {
            self.web_search = web_search;
        }
        if let Some(parallel) = row.parallel_tool_calls {
            self.parallel_tool_calls = parallel;
        }
        if let Some(instructions) = &row.base_instructions {
            self.custom_instructions = Some(instructions.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(model: &str) -> Option<u64> {
        ModelFamily::builtin(model).context_window
    }

    #[test]
    fn the_table_matches_names_as_providers_spell_them() {
        assert_eq!(window("gpt-5-codex"), Some(272_000));
        assert_eq!(window("gpt-5.1-mini"), Some(272_000));
        assert_eq!(window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(window("gpt-4o-mini"), Some(128_000));
        assert_eq!(window("o1-mini"), Some(128_000));
        assert_eq!(window("o3-pro"), Some(200_000));
        assert_eq!(window("qwen2.5-coder:7b"), Some(32_768));
        assert_eq!(window("Qwen/Qwen2.5-Coder-32B-Instruct"), Some(32_768));
        assert_eq!(window("llama3.1:8b"), Some(131_072));
        assert_eq!(window("llama3:8b"), Some(8_192));
        assert_eq!(window("mock-model"), None);
    }

    #[test]
    fn each_family_gets_the_tool_forms_codex_gives_it() {
        let kinds = |model: &str| {
            let family = ModelFamily::builtin(model);
            (family.shell_tool, family.apply_patch_tool, family.reasoning)
        };
        use ApplyPatchToolKind::{Freeform, Function};
        use ShellToolKind::{ShellAndShellCommand, ShellCommand, UnifiedExec};
        for codex in [
            "gpt-5-codex",
            "gpt-5.1-codex-max",
            "openai/gpt-5.2-codex",
            "codex-1",
        ] {
            assert_eq!(kinds(codex), (UnifiedExec, Freeform, true), "{codex}");
        }
        assert_eq!(kinds("gpt-5.1"), (ShellCommand, Freeform, true));
        assert_eq!(kinds("gpt-oss-120b"), (ShellCommand, Function, true));
        assert_eq!(kinds("o3"), (ShellAndShellCommand, Function, true));
        assert_eq!(kinds("gpt-4o"), (ShellAndShellCommand, Function, false));
        assert_eq!(kinds("codex-mini-latest").0, ShellAndShellCommand);
    }

    #[test]
    fn an_unknown_model_gets_the_generic_family() {
        let generic = ModelFamily::builtin("mock-model");
        assert_eq!(generic.family, "");
        assert!(!generic.images && !generic.parallel_tool_calls);
        assert!(
            generic.web_search,
            "offered when the configuration turns it on"
        );
        assert!(!generic.reasoning && !generic.view_image_tool);
        assert_eq!(generic.shell_tool, ShellToolKind::ShellAndShellCommand);
        assert_eq!(generic.apply_patch_tool, ApplyPatchToolKind::Function);
        assert!(generic.plan_tool);
        assert_eq!(generic.custom_instructions, None);
        let gpt5 = ModelFamily::builtin("openai/GPT-5-codex");
        assert_eq!(gpt5.family, "gpt-5");
        assert!(gpt5.images && gpt5.web_search && gpt5.view_image_tool);
        assert_eq!(gpt5.shell_tool, ShellToolKind::UnifiedExec);
        assert!(gpt5.user_input_tool && !generic.user_input_tool);
        assert_eq!(
            ModelFamily::builtin("gpt-5").shell_tool,
            ShellToolKind::ShellCommand
        );
        assert!(!ModelFamily::builtin("gpt-5").user_input_tool);
    }

    #[test]
    fn a_configured_row_can_give_a_model_unified_exec() {
        let mut config =
            config_with("[model_families.\"my-coder\"]\nshell_tool = \"unified_exec\"\n");
        config.model = "my-coder-7b".into();
        assert_eq!(
            ModelFamily::for_config(&config).shell_tool,
            ShellToolKind::UnifiedExec
        );
    }

    fn config_with(text: &str) -> Config {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), text).unwrap();
        crate::config::ConfigLayers::new(home.path().to_path_buf())
            .load()
            .unwrap()
    }

    #[test]
    fn the_configuration_has_the_last_word_where_it_has_a_key() {
        let mut config = config_with("");
        config.model = "gpt-4o".into();
        assert_eq!(ModelFamily::for_config(&config), {
            ModelFamily::builtin("gpt-4o")
        });
        config.model_context_window = Some(10_000);
        config.base_instructions = Some("Be terse.".into());
        config.include_plan_tool = false;
        let family = ModelFamily::for_config(&config);
        assert_eq!(family.context_window, Some(10_000));
        assert_eq!(family.custom_instructions.as_deref(), Some("Be terse."));
        assert!(!family.plan_tool);
        assert!(
            family.images,
            "what the configuration does not say stays the table's"
        );
    }

    #[test]
    fn configured_rows_override_the_table_most_specific_last() {
        let mut config = config_with(
            "[model_families.my]\nreasoning = true\nshell_tool = \"shell_command\"\n\
             [model_families.my-coder]\nshell_tool = \"shell\"\n\
             apply_patch_tool = \"freeform\"\nimages = true\ncontext_window = 64000\n\
             [model_families.other]\nreasoning = false\n",
        );
        config.model = "local/My-Coder-7B".into();
        let family = ModelFamily::for_config(&config);
        assert_eq!(family.shell_tool, ShellToolKind::ShellAndShellCommand);
        assert_eq!(family.apply_patch_tool, ApplyPatchToolKind::Freeform);
        assert!(family.reasoning && family.images && family.view_image_tool);
        assert_eq!(family.context_window, Some(64_000));
        config.view_image_tool = false;
        assert!(!ModelFamily::for_config(&config).view_image_tool);
    }

    #[test]
    fn web_search_is_offered_only_when_enabled_on_responses_for_a_model_that_can() {
        let mut config = config_with("web_search = \"cached\"\n");
        config.model = "gpt-5-codex".into();
        assert_eq!(
            ModelFamily::for_config(&config).hosted_web_search,
            Some(false)
        );
        config.web_search = WebSearchMode::Live;
        assert_eq!(
            ModelFamily::for_config(&config).hosted_web_search,
            Some(true)
        );
        config.model = "gpt-4".into();
        assert_eq!(ModelFamily::for_config(&config).hosted_web_search, None);
        config.model = "gpt-5-codex".into();
        config.model_provider.wire_api = WireApi::Chat;
        assert_eq!(ModelFamily::for_config(&config).hosted_web_search, None);
        config.model_provider.wire_api = WireApi::Responses;
        config.web_search = WebSearchMode::Disabled;
        assert_eq!(ModelFamily::for_config(&config).hosted_web_search, None);
    }
}
