//! deputy's system instructions, put together for the tools a model is actually offered:
//! how to work, then one section per tool it has (and none for a tool it lacks), the
//! patch format with a worked example when it may edit, sandbox and approval semantics,
//! AGENTS.md precedence, checking, progress messages and the final answer.
//!
//! Tool names are always written in backticks, so that a test can tell which tools the
//! text names: it fails when the instructions name a tool that is not offered, or when an
//! offered tool is never explained.

use std::sync::Arc;

use crate::client::{HostedTool, ToolSpec};
use crate::sync::SharedByKey;
use crate::tools::names;

const INTRO: &str = include_str!("prompts/base/intro.md");
const TOOLS: &str = include_str!("prompts/base/tools_intro.md");
const SHELL: &str = include_str!("prompts/base/shell.md");
const SHELL_COMMAND: &str = include_str!("prompts/base/shell_command.md");
const UNIFIED_EXEC: &str = include_str!("prompts/base/unified_exec.md");
const REQUEST_USER_INPUT: &str = include_str!("prompts/base/request_user_input.md");
const APPLY_PATCH_FREEFORM: &str = include_str!("prompts/base/apply_patch_freeform.md");
const APPLY_PATCH_FUNCTION: &str = include_str!("prompts/base/apply_patch_function.md");
const PATCH_FORMAT: &str = include_str!("prompts/base/patch_format.md");
const UPDATE_PLAN: &str = include_str!("prompts/base/update_plan.md");
const VIEW_IMAGE: &str = include_str!("prompts/base/view_image.md");
const WEB_SEARCH: &str = include_str!("prompts/base/web_search.md");
const SANDBOX: &str = include_str!("prompts/base/sandbox.md");
const PROJECT_DOCS: &str = include_str!("prompts/base/project_docs.md");
const FINISHING: &str = include_str!("prompts/base/finishing.md");

/// deputy's instructions for a model offered `tools` (in the order they are offered),
/// shared: every thread offered the same built-in tools holds the same text (a few KB that a
/// thousand concurrent sessions each built and kept a copy of). The texts are the few
/// combinations of sections the tool sets of this process need.
pub(crate) fn for_tools(tools: &[ToolSpec]) -> Arc<str> {
    static JOINED: SharedByKey<Vec<&'static str>, str> = SharedByKey::new();
    JOINED.get_or_make(sections_for(tools), |sections| {
        sections
            .iter()
            .map(|section| section.trim_end())
            .collect::<Vec<_>>()
            .join("\n\n")
            .into()
    })
}

/// The sections of the instructions for `tools`, in order.
fn sections_for(tools: &[ToolSpec]) -> Vec<&'static str> {
    let offered = |name: &str| tools.iter().any(|tool| tool.name() == Some(name));
    let mut sections = vec![INTRO, TOOLS];
    if offered(names::SHELL) {
        sections.push(SHELL);
    }
    if offered(names::SHELL_COMMAND) {
        sections.push(SHELL_COMMAND);
    }
    if offered(names::EXEC_COMMAND) {
        sections.push(UNIFIED_EXEC);
    }
    match tools
        .iter()
        .find(|tool| tool.name() == Some(names::APPLY_PATCH))
    {
        Some(ToolSpec::Freeform(_)) => sections.extend([APPLY_PATCH_FREEFORM, PATCH_FORMAT]),
        Some(_) => sections.extend([APPLY_PATCH_FUNCTION, PATCH_FORMAT]),
        None => {}
    }
    if offered(names::UPDATE_PLAN) {
        sections.push(UPDATE_PLAN);
    }
    if offered(names::VIEW_IMAGE) {
        sections.push(VIEW_IMAGE);
    }
    if offered(names::REQUEST_USER_INPUT) {
        sections.push(REQUEST_USER_INPUT);
    }
    if tools
        .iter()
        .any(|tool| matches!(tool, ToolSpec::Hosted(HostedTool::WebSearch { .. })))
    {
        sections.push(WEB_SEARCH);
    }
    sections.extend([SANDBOX, PROJECT_DOCS, FINISHING]);
    sections
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ConfigLayers, WebSearchMode};
    use crate::model_family::ModelFamily;
    use crate::tools::{ThreadTools, ToolRegistry};

    /// Names of tools a model may have met elsewhere (deputy's and Codex 0.125's): the
    /// instructions may name one only when it is offered.
    const KNOWN_TOOLS: &[&str] = &[
        names::SHELL,
        names::SHELL_COMMAND,
        names::APPLY_PATCH,
        names::UPDATE_PLAN,
        names::VIEW_IMAGE,
        names::WEB_SEARCH,
        names::EXEC_COMMAND,
        names::WRITE_STDIN,
        names::REQUEST_USER_INPUT,
        "spawn_agent",
        "send_input",
        "resume_agent",
        "wait_agent",
        "close_agent",
        "list_mcp_resources",
        "read_mcp_resource",
    ];

    fn config(model: &str, web_search: WebSearchMode, plan: bool) -> Config {
        let home = tempfile::tempdir().unwrap();
        let mut config = ConfigLayers::new(home.path().to_path_buf()).load().unwrap();
        config.model = model.into();
        config.web_search = web_search;
        config.include_plan_tool = plan;
        config
    }

    /// The names of every tool `tools` offers (a hosted web search by its tool name).
    fn offered_names(tools: &[ToolSpec]) -> Vec<String> {
        tools
            .iter()
            .filter_map(|tool| match tool {
                ToolSpec::Hosted(HostedTool::WebSearch { .. }) => Some(names::WEB_SEARCH),
                other => other.name(),
            })
            .map(str::to_string)
            .collect()
    }

    /// Whether `text` names tool `name`: in backticks, alone or followed by its arguments.
    fn names_tool(text: &str, name: &str) -> bool {
        text.match_indices(&format!("`{name}"))
            .any(|(at, m)| matches!(text[at + m.len()..].chars().next(), Some('`' | ' ')))
    }

    #[test]
    fn the_instructions_explain_exactly_the_tools_offered_in_every_family() {
        let models = [
            "gpt-5-codex",
            "gpt-5.1",
            "gpt-oss-20b",
            "o3",
            "gpt-4o",
            "qwen2.5-coder:7b",
            "mock-model",
        ];
        for model in models {
            for web_search in [WebSearchMode::Disabled, WebSearchMode::Live] {
                for plan in [true, false] {
                    let config = config(model, web_search, plan);
                    let family = ModelFamily::for_config(&config);
                    let tools = ToolRegistry::for_turn(&family, &ThreadTools::default()).specs();
                    let text = for_tools(&tools);
                    let offered = offered_names(&tools);
                    let case = format!("{model}, web search {web_search:?}, plan {plan}");
                    for name in &offered {
                        assert!(
                            names_tool(&text, name),
                            "{case}: `{name}` is offered but never explained"
                        );
                    }
                    for name in KNOWN_TOOLS {
                        if !offered.iter().any(|offered| offered == name) {
                            assert!(
                                !names_tool(&text, name),
                                "{case}: the instructions name `{name}`, which is not offered"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_patch_format_is_taught_with_its_worked_example_whenever_apply_patch_is_offered() {
        let tools = ToolRegistry::for_turn(
            &ModelFamily::builtin("gpt-5-codex"),
            &ThreadTools::default(),
        )
        .specs();
        let text = for_tools(&tools);
        let example_start = text.find("*** Begin Patch\n*** Update File").unwrap();
        let example = &text[example_start..];
        let example = &example[..example.find("*** End Patch").unwrap() + "*** End Patch".len()];
        // The example is a patch deputy itself reads.
        deputy_apply_patch::parse_patch(example).unwrap();
        assert!(text.contains("plain text (not JSON)"));
        let function = for_tools(
            &ToolRegistry::for_turn(&ModelFamily::builtin("gpt-4o"), &ThreadTools::default())
                .specs(),
        );
        assert!(function.contains("`apply_patch {input}`"));
    }

    #[test]
    fn threads_offered_the_same_tools_share_one_text() {
        let specs = |model: &str| {
            ToolRegistry::for_turn(&ModelFamily::builtin(model), &ThreadTools::default()).specs()
        };
        let first = for_tools(&specs("gpt-5-codex"));
        let again = for_tools(&specs("gpt-5-codex"));
        assert!(Arc::ptr_eq(&first, &again), "each call built its own copy");
        let other = for_tools(&specs("gpt-4o"));
        assert_ne!(first, other, "different tools, different instructions");
        assert!(Arc::ptr_eq(&other, &for_tools(&specs("gpt-4o"))));
    }
}
