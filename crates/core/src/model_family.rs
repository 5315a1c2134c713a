//! What deputy knows about a model: its context window, the instructions it is given,
//! which tools it is offered and in which form, and what it can take.
//!
//! One built-in table, by model name prefix (the longest matching prefix wins; a
//! provider prefix such as `openai/` and case are ignored); a model it does not know gets
//! the generic family. The configuration then has the last word where it has a key for
//! it (`model_context_window`, `base_instructions`, `include_plan_tool`). The tool
//! registry and the request builder read the family, never the table or those keys.

use std::borrow::Cow;

use crate::config::Config;

/// deputy's own system instructions, unless `base_instructions` replaces them.
const BASE_INSTRUCTIONS: &str = include_str!("prompts/base_instructions.md");

/// Which command tools the model is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellToolKind {
    /// `shell` (an argv) and `shell_command` (a `bash -lc` script), both one-shot.
    ShellAndShellCommand,
    /// `exec_command` + `write_stdin`: commands that may outlive the call, on a terminal
    /// when asked (the coding models, as Codex offers them).
    UnifiedExec,
}

/// How `apply_patch` is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyPatchToolKind {
    /// A function taking the patch as `input`.
    Function,
}

/// What deputy knows about one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFamily {
    /// The table prefix the model matched; empty for the generic family.
    pub family: &'static str,
    /// Input tokens the model takes, when known.
    pub context_window: Option<u64>,
    /// The system instructions.
    pub base_instructions: Cow<'static, str>,
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
    /// Whether the provider's hosted web search works with the model.
    pub web_search: bool,
    /// Whether the model may call several tools in one response.
    pub parallel_tool_calls: bool,
}

/// One row of the built-in table.
struct Known {
    prefix: &'static str,
    /// Input tokens, as the provider publishes them.
    context_window: u64,
    images: bool,
    web_search: bool,
}

const fn known(prefix: &'static str, context_window: u64, images: bool, web_search: bool) -> Known {
    Known {
        prefix,
        context_window,
        images,
        web_search,
    }
}

/// Models deputy knows, by name prefix.
const KNOWN: &[Known] = &[
    // OpenAI: the gpt-5 family takes 400k in total, of which 128k are output.
    known("gpt-5", 272_000, true, true),
    known("gpt-4.1", 1_047_576, true, true),
    known("gpt-4o", 128_000, true, true),
    known("gpt-4-turbo", 128_000, true, false),
    known("gpt-4", 8_192, false, false),
    known("gpt-3.5-turbo", 16_385, false, false),
    known("gpt-oss", 131_072, false, false),
    known("codex-mini", 200_000, true, false),
    known("o1-mini", 128_000, false, false),
    known("o1", 200_000, true, false),
    known("o3", 200_000, true, true),
    known("o4-mini", 200_000, true, true),
    // Open models as local servers name them (`qwen2.5-coder:7b`, `llama3.1:8b`…).
    known("qwen2.5-coder", 32_768, false, false),
    known("qwen2.5", 32_768, false, false),
    known("qwen3-coder", 262_144, false, false),
    known("qwen3", 40_960, false, false),
    known("llama3.1", 131_072, false, false),
    known("llama3.2", 131_072, false, false),
    known("llama3.3", 131_072, false, false),
    known("llama-3.1", 131_072, false, false),
    known("llama-3.2", 131_072, false, false),
    known("llama-3.3", 131_072, false, false),
    known("llama3", 8_192, false, false),
    known("llama-3", 8_192, false, false),
    known("deepseek-coder-v2", 163_840, false, false),
    known("codestral", 256_000, false, false),
    known("devstral", 131_072, false, false),
    known("mistral-small", 131_072, false, false),
    known("gemma3", 131_072, true, false),
];

impl ModelFamily {
    /// The built-in family of `model` (the generic one when the table does not know it).
    pub fn builtin(model: &str) -> Self {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let row = KNOWN
            .iter()
            .filter(|row| name.starts_with(row.prefix))
            .max_by_key(|row| row.prefix.len());
        let coding = name.starts_with("gpt-5") && name.contains("-codex");
        Self {
            family: row.map_or("", |row| row.prefix),
            context_window: row.map(|row| row.context_window),
            base_instructions: Cow::Borrowed(BASE_INSTRUCTIONS),
            // The coding models are trained on unified exec and on asking the user.
            shell_tool: if coding {
                ShellToolKind::UnifiedExec
            } else {
                ShellToolKind::ShellAndShellCommand
            },
            apply_patch_tool: ApplyPatchToolKind::Function,
            plan_tool: true,
            user_input_tool: coding,
            images: row.is_some_and(|row| row.images),
            web_search: row.is_some_and(|row| row.web_search),
            parallel_tool_calls: false,
        }
    }

    /// The family of the configured model, with the configuration's own keys applied.
    pub fn for_config(config: &Config) -> Self {
        let mut family = Self::builtin(&config.model);
        if let Some(window) = config.model_context_window {
            family.context_window = Some(window);
        }
        if let Some(instructions) = &config.base_instructions {
            family.base_instructions = Cow::Owned(instructions.clone());
        }
        family.plan_tool = config.include_plan_tool;
        family
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
    fn an_unknown_model_gets_the_generic_family() {
        let generic = ModelFamily::builtin("mock-model");
        assert_eq!(generic.family, "");
        assert!(!generic.images && !generic.web_search && !generic.parallel_tool_calls);
        assert_eq!(generic.shell_tool, ShellToolKind::ShellAndShellCommand);
        assert_eq!(generic.apply_patch_tool, ApplyPatchToolKind::Function);
        assert!(generic.plan_tool);
        assert_eq!(generic.base_instructions, BASE_INSTRUCTIONS);
        let gpt5 = ModelFamily::builtin("openai/GPT-5-codex");
        assert_eq!(gpt5.family, "gpt-5");
        assert!(gpt5.images && gpt5.web_search);
        assert_eq!(gpt5.shell_tool, ShellToolKind::UnifiedExec);
        assert!(gpt5.user_input_tool && !generic.user_input_tool);
        assert_eq!(
            ModelFamily::builtin("gpt-5").shell_tool,
            ShellToolKind::ShellAndShellCommand
        );
    }

    #[test]
    fn the_configuration_has_the_last_word_where_it_has_a_key() {
        let home = tempfile::tempdir().unwrap();
        let mut config = crate::config::ConfigLayers::new(home.path().to_path_buf())
            .load()
            .unwrap();
        config.model = "gpt-4o".into();
        assert_eq!(ModelFamily::for_config(&config), {
            ModelFamily::builtin("gpt-4o")
        });
        config.model_context_window = Some(10_000);
        config.base_instructions = Some("Be terse.".into());
        config.include_plan_tool = false;
        let family = ModelFamily::for_config(&config);
        assert_eq!(family.context_window, Some(10_000));
        assert_eq!(family.base_instructions, "Be terse.");
        assert!(!family.plan_tool);
        assert!(
            family.images,
            "what the configuration does not say stays the table's"
        );
    }
}
