//! Codex's feature flags (`--enable FEATURE` / `--disable FEATURE`), as its clients pass
//! them when they launch `codex app-server`: the names Codex 0.125 knows are accepted —
//! a flag that asks deputy for something it does not do is ignored with a warning — and
//! any other name is refused, as Codex refuses it.

/// Codex 0.125's feature keys (`codex features list`) that still do something there.
const KNOWN: &[&str] = &[
    "apply_patch_freeform",
    "apply_patch_streaming_events",
    "apps",
    "artifact",
    "browser_use",
    "child_agents_md",
    "chronicle",
    "code_mode",
    "code_mode_only",
    "codex_git_commit",
    "codex_hooks",
    "computer_use",
    "default_mode_request_user_input",
    "enable_fanout",
    "enable_request_compression",
    "exec_permission_approvals",
    "external_migration",
    "fast_mode",
    "general_analytics",
    "guardian_approval",
    "image_generation",
    "in_app_browser",
    "js_repl",
    "js_repl_tools_only",
    "memories",
    "multi_agent",
    "multi_agent_v2",
    "personality",
    "plugins",
    "prevent_idle_sleep",
    "realtime_conversation",
    "remote_control",
    "remote_plugin",
    "request_permissions_tool",
    "runtime_metrics",
    "shell_snapshot",
    "shell_tool",
    "shell_zsh_fork",
    "skill_env_var_dependency_prompt",
    "skill_mcp_dependency_install",
    "tool_call_mcp_elicitation",
    "tool_search",
    "tool_search_always_defer_mcp_tools",
    "tool_suggest",
    "undo",
    "unavailable_dummy_tools",
    "unified_exec",
    "use_legacy_landlock",
    "web_search_cached",
    "web_search_request",
    "workspace_dependencies",
    "workspace_owner_usage_nudge",
];

/// Keys Codex 0.125 lists as removed: accepted and without effect there, so here too.
const REMOVED: &[&str] = &[
    "collaboration_modes",
    "elevated_windows_sandbox",
    "experimental_windows_sandbox",
    "image_detail_original",
    "remote_models",
    "request_rule",
    "responses_websockets",
    "responses_websockets_v2",
    "search_tool",
    "sqlite",
    "steer",
    "tui_app_server",
    "use_linux_sandbox_bwrap",
];

/// Older names Codex 0.125 still takes, and the feature each stands for.
const ALIASES: &[(&str, &str)] = &[
    ("connectors", "apps"),
    (
        "enable_experimental_windows_sandbox",
        "experimental_windows_sandbox",
    ),
    ("experimental_use_unified_exec_tool", "unified_exec"),
    (
        "experimental_use_freeform_apply_patch",
        "apply_patch_freeform",
    ),
    ("include_apply_patch_tool", "apply_patch_freeform"),
    ("request_permissions", "exec_permission_approvals"),
    ("web_search", "web_search_request"),
    ("collab", "multi_agent"),
    ("memory_tool", "memories"),
];

/// The features deputy always has; every other known one it never has.
const DEPUTY_HAS: &[&str] = &["shell_tool"];

/// Checks the `--enable` and `--disable` flags: the warnings to print for flags that ask
/// for something deputy does not do, or the error for a name Codex does not know.
pub(crate) fn check_feature_flags(
    enable: &[String],
    disable: &[String],
) -> Result<Vec<String>, String> {
    let flags = enable
        .iter()
        .map(|name| (name, true))
        .chain(disable.iter().map(|name| (name, false)));
    let mut warnings = Vec::new();
    for (name, wanted) in flags {
        let canonical = ALIASES
            .iter()
            .find(|(alias, _)| alias == name)
            .map_or(name.as_str(), |(_, feature)| feature);
        if REMOVED.contains(&canonical) {
            continue;
        }
        if !KNOWN.contains(&canonical) {
            return Err(format!("unknown feature flag `{name}`"));
        }
        let has = DEPUTY_HAS.contains(&canonical);
        if has != wanted {
            let (flag, state) = if wanted {
                ("--enable", "does not have")
            } else {
                ("--disable", "cannot turn off")
            };
            warnings.push(format!(
                "{flag} {name}: deputy {state} Codex's `{canonical}` feature; ignored"
            ));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_feature_deputy_lacks_is_ignored_with_a_warning_naming_it() {
        let warnings = check_feature_flags(&names(&["guardian_approval"]), &[]).unwrap();
        assert_eq!(
            warnings,
            [
                "--enable guardian_approval: deputy does not have Codex's `guardian_approval` feature; ignored"
            ]
        );
    }

    #[test]
    fn flags_that_match_what_deputy_does_and_removed_features_are_silent() {
        let warnings = check_feature_flags(
            &names(&["shell_tool", "sqlite"]),
            &names(&["unified_exec", "web_search", "steer"]),
        )
        .unwrap();
        assert_eq!(warnings, Vec::<String>::new());
    }

    #[test]
    fn an_alias_is_reported_under_its_feature() {
        let warnings = check_feature_flags(&names(&["collab"]), &names(&["shell_tool"])).unwrap();
        assert_eq!(
            warnings,
            [
                "--enable collab: deputy does not have Codex's `multi_agent` feature; ignored",
                "--disable shell_tool: deputy cannot turn off Codex's `shell_tool` feature; ignored",
            ]
        );
    }

    #[test]
    fn an_unknown_feature_is_refused() {
        assert_eq!(
            check_feature_flags(&names(&["apps"]), &names(&["no_such_feature"])),
            Err("unknown feature flag `no_such_feature`".to_string())
        );
    }
}
