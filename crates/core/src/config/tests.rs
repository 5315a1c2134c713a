use std::fs;

use deputy_protocol::{AskForApproval, SandboxMode, WireApi};
use pretty_assertions::assert_eq;

use super::*;

fn home_with(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("config.toml"), config).unwrap();
    dir
}

fn layers(home: &tempfile::TempDir) -> ConfigLayers {
    ConfigLayers::new(home.path().to_path_buf())
}

#[test]
fn missing_config_file_means_defaults() {
    let home = tempfile::tempdir().unwrap();
    let config = layers(&home).load().unwrap();
    assert_eq!(config.model, DEFAULT_MODEL);
    assert_eq!(config.model_provider_id, "openai");
    assert_eq!(config.approval_policy, AskForApproval::OnRequest);
    assert_eq!(config.sandbox_mode, SandboxMode::ReadOnly);
    assert!(config.include_plan_tool);
    assert!(config.warnings.is_empty());
}

#[test]
fn precedence_is_defaults_file_profile_cli_call() {
    let home = home_with(
        r#"
model = "file-model"
approval_policy = "untrusted"
sandbox_mode = "read-only"
tool_output_token_limit = 111
profile = "fast"
[profiles.fast]
model = "profile-model"
approval_policy = "never"
tool_output_token_limit = 222
"#,
    );
    let mut layers = layers(&home);
    assert_eq!(layers.load().unwrap().model, "profile-model");

    layers.cli_overrides = vec![parse_cli_override("model=cli-model").unwrap()];
    let config = layers.load().unwrap();
    assert_eq!(config.model, "cli-model");
    assert_eq!(config.approval_policy, AskForApproval::Never);
    assert_eq!(config.tool_output_token_limit, 222);
    assert_eq!(config.profile.as_deref(), Some("fast"));

    layers.call_overrides = vec![("tool_output_token_limit".into(), toml::Value::Integer(333))];
    layers.overrides.model = Some("call-model".into());
    layers.overrides.sandbox_mode = Some(SandboxMode::WorkspaceWrite);
    let config = layers.load().unwrap();
    assert_eq!(config.model, "call-model");
    assert_eq!(config.tool_output_token_limit, 333);
    assert_eq!(config.sandbox_mode, SandboxMode::WorkspaceWrite);
}

#[test]
fn profile_selected_by_override_beats_file_profile() {
    let home = home_with(
        "profile = \"a\"\n[profiles.a]\nmodel = \"m-a\"\n[profiles.b]\nmodel = \"m-b\"\n",
    );
    let mut layers = layers(&home);
    layers.cli_overrides = vec![parse_cli_override("profile=b").unwrap()];
    assert_eq!(layers.load().unwrap().model, "m-b");
    layers.overrides.profile = Some("a".into());
    assert_eq!(layers.load().unwrap().model, "m-a");
}

#[test]
fn unknown_profile_is_a_clear_error() {
    let home = home_with("profile = \"nope\"\n");
    let err = layers(&home).load().unwrap_err().to_string();
    assert!(err.contains("profile `nope` not found"), "{err}");
}

#[test]
fn custom_provider_is_resolved_with_all_fields() {
    let home = home_with(
        r#"
model_provider = "local"
[model_providers.local]
name = "Local"
base_url = "http://127.0.0.1:8000/v1"
env_key = "LOCAL_API_KEY"
wire_api = "chat"
request_max_retries = 1
stream_max_retries = 2
stream_idle_timeout_ms = 3000
http_headers = { "X-Extra" = "1" }
query_params = { "api-version" = "2025-01-01" }
"#,
    );
    let config = layers(&home).load().unwrap();
    let p = &config.model_provider;
    assert_eq!(config.model_provider_id, "local");
    assert_eq!(p.wire_api, WireApi::Chat);
    assert_eq!(p.request_max_retries(), 1);
    assert_eq!(p.stream_max_retries(), 2);
    assert_eq!(p.stream_idle_timeout().as_millis(), 3000);
    assert_eq!(p.http_headers["X-Extra"], "1");
    assert_eq!(p.query_params["api-version"], "2025-01-01");
}

#[test]
fn undefined_provider_names_the_missing_table() {
    let home = home_with("model_provider = \"ghost\"\n");
    let err = layers(&home).load().unwrap_err().to_string();
    assert!(err.contains("[model_providers.ghost]"), "{err}");
}

#[test]
fn malformed_toml_names_file_and_line() {
    let home = home_with("model = \"a\"\napproval_policy = \n");
    let err = layers(&home).load().unwrap_err().to_string();
    let file = home.path().join("config.toml").display().to_string();
    assert!(err.starts_with(&format!("{file}:2:")), "{err}");
}

#[test]
fn wrong_type_names_file_line_and_key() {
    let home = home_with("model = \"a\"\n\n[sandbox_workspace_write]\nnetwork_access = \"yes\"\n");
    let err = layers(&home).load().unwrap_err().to_string();
    let file = home.path().join("config.toml").display().to_string();
    assert!(err.starts_with(&format!("{file}:4:")), "{err}");
    assert!(
        err.contains("`sandbox_workspace_write.network_access`"),
        "{err}"
    );
}

#[test]
fn bad_enum_value_names_the_key() {
    let home = home_with("approval_policy = \"sometimes\"\n");
    let err = layers(&home).load().unwrap_err().to_string();
    assert!(
        err.contains(":1:") && err.contains("`approval_policy`"),
        "{err}"
    );
}

#[test]
fn unknown_keys_warn_but_load() {
    let home = home_with("model = \"m\"\nfavourite_colour = \"blue\"\n");
    let config = layers(&home).load().unwrap();
    assert_eq!(config.model, "m");
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("`favourite_colour`"));
}

#[test]
fn cli_override_parses_toml_then_falls_back_to_string() {
    let (key, value) = parse_cli_override("sandbox_workspace_write.network_access=true").unwrap();
    assert_eq!(key, "sandbox_workspace_write.network_access");
    assert_eq!(value, toml::Value::Boolean(true));
    assert_eq!(
        parse_cli_override("model=gpt-5-mini").unwrap().1,
        toml::Value::String("gpt-5-mini".into())
    );
    assert_eq!(
        parse_cli_override("model='quoted name'").unwrap().1,
        toml::Value::String("quoted name".into())
    );
    assert_eq!(
        parse_cli_override("tool_output_token_limit=42").unwrap().1,
        toml::Value::Integer(42)
    );
    assert!(parse_cli_override("no-equals-sign").is_err());
    assert!(parse_cli_override("a..b=1").is_err());
}

#[test]
fn override_with_wrong_type_is_an_error_naming_the_key() {
    let home = tempfile::tempdir().unwrap();
    let mut layers = layers(&home);
    layers.cli_overrides = vec![parse_cli_override("tool_output_token_limit=lots").unwrap()];
    let err = layers.load().unwrap_err().to_string();
    assert!(err.contains("`tool_output_token_limit`"), "{err}");
}

#[test]
fn json_config_object_converts_to_toml() {
    let json = serde_json::json!({"a": 1, "b": [true, "x"], "c": {"d": 1.5}, "e": null});
    let toml = json_to_toml(&json).unwrap();
    let expected: toml::Table = toml::from_str("a = 1\nb = [true, \"x\"]\n[c]\nd = 1.5").unwrap();
    assert_eq!(toml, toml::Value::Table(expected));
}

#[test]
fn relative_cwd_resolves_against_process_cwd_and_missing_cwd_fails() {
    let home = tempfile::tempdir().unwrap();
    let mut layers = layers(&home);
    layers.overrides.cwd = Some(home.path().join("does-not-exist"));
    let err = layers.load().unwrap_err().to_string();
    assert!(
        err.contains("does-not-exist") && err.contains("does not exist"),
        "{err}"
    );
    layers.overrides.cwd = Some(".".into());
    let cwd = layers.load().unwrap().cwd;
    assert_eq!(
        cwd,
        std::env::current_dir().unwrap().canonicalize().unwrap()
    );
}

#[test]
fn unknown_provider_key_warns_like_any_other_unknown_key() {
    let home = home_with(
        "model_provider = \"local\"\n[model_providers.local]\nbase_url = \"http://x/v1\"\ncolour = \"red\"\n",
    );
    let config = layers(&home).load().unwrap();
    assert_eq!(config.model_provider.base_url, "http://x/v1");
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.contains("`model_providers.local.colour`")),
        "{:?}",
        config.warnings
    );
}

#[test]
fn every_error_of_a_file_is_reported_in_line_order() {
    let home = home_with(
        "model = 3\ntool_output_token_limit = \"x\"\n\n[sandbox_workspace_write]\n\
         network_access = \"yes\"\nwritable_roots = \"/tmp\"\n",
    );
    let err = layers(&home).load().unwrap_err().to_string();
    let file = home.path().join("config.toml").display().to_string();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    for (line, (number, key)) in lines.iter().zip([
        (1, "model"),
        (2, "tool_output_token_limit"),
        (5, "sandbox_workspace_write.network_access"),
        (6, "sandbox_workspace_write.writable_roots"),
    ]) {
        assert!(line.starts_with(&format!("{file}:{number}: ")), "{err}");
        assert!(line.contains(&format!("`{key}`")), "{err}");
    }
}

#[test]
fn every_syntax_error_of_a_file_is_reported() {
    let home = home_with("a = \nb = \"ok\"\nc = ]\n");
    let err = layers(&home).load().unwrap_err().to_string();
    let file = home.path().join("config.toml").display().to_string();
    assert!(err.starts_with(&format!("{file}:1: invalid TOML")), "{err}");
    assert!(err.contains(&format!("\n{file}:3: invalid TOML")), "{err}");
}

#[test]
fn type_errors_are_worded_for_config_files_and_name_the_key_once() {
    let home = tempfile::tempdir().unwrap();
    let mut layers = layers(&home);
    layers.cli_overrides = vec![parse_cli_override("tool_output_token_limit=lots").unwrap()];
    assert_eq!(
        layers.load().unwrap_err().to_string(),
        "invalid override: invalid value for `tool_output_token_limit`: \
         expected an integer (0 or more), found string \"lots\""
    );
    assert_eq!(
        plain_message("invalid type: integer `3`, expected a boolean"),
        "expected a boolean (true or false), found integer `3`"
    );
    assert_eq!(
        plain_message("invalid type: string \"x\", expected a sequence"),
        "expected an array, found string \"x\""
    );
}

#[test]
fn an_empty_override_value_and_an_empty_model_are_refused() {
    let err = parse_cli_override("model=").unwrap_err().to_string();
    assert!(err.contains("`-c model=` has no value"), "{err}");
    let home = home_with("model = \"\"\n");
    let err = layers(&home).load().unwrap_err().to_string();
    assert!(err.contains("`model` is empty"), "{err}");
}

#[test]
fn openai_base_url_points_the_built_in_provider_elsewhere_from_the_file_or_c() {
    let home = home_with("openai_base_url = \"http://127.0.0.1:1/file/v1\"\n");
    let mut layers = layers(&home);
    let config = layers.load().unwrap();
    assert_eq!(config.model_provider.base_url, "http://127.0.0.1:1/file/v1");
    assert!(config.model_provider_built_in);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    layers.cli_overrides = vec![parse_cli_override("openai_base_url=\"http://h:2/v1\"").unwrap()];
    let config = layers.load().unwrap();
    assert_eq!(config.model_provider.base_url, "http://h:2/v1");
    // The built-in key variables, CODEX_API_KEY first, as Codex reads them.
    assert_eq!(
        config.model_provider.key_variables(),
        "CODEX_API_KEY or OPENAI_API_KEY"
    );
}

#[test]
fn codex_keys_a_client_writes_load_with_at_most_one_note_each() {
    let home = home_with(
        "model_reasoning_effort = \"high\"\nweb_search = \"disabled\"\n\
         model_verbosity = \"low\"\nmodel_reasoning_summary = \"concise\"\n\
         hide_agent_reasoning = true\n[sandbox_workspace_write]\nnetwork_access = true\n",
    );
    let mut layers = layers(&home);
    layers.cli_overrides = vec![
        parse_cli_override("approval_policy=\"untrusted\"").unwrap(),
        parse_cli_override("web_search=\"live\"").unwrap(),
    ];
    let config = layers.load().unwrap();
    assert_eq!(config.model_reasoning_effort.as_deref(), Some("high"));
    assert_eq!(config.model_verbosity, Some(Verbosity::Low));
    assert_eq!(
        config.model_reasoning_summary,
        Some(ReasoningSummary::Concise)
    );
    assert_eq!(config.web_search, WebSearchMode::Live);
    assert_eq!(config.approval_policy, AskForApproval::Untrusted);
    assert!(config.sandbox_workspace_write.network_access);
    assert_eq!(
        config.warnings,
        [format!(
            "{}: `hide_agent_reasoning` is a Codex setting deputy does not use (ignored)",
            home.path().join("config.toml").display()
        )]
    );
}

#[test]
fn web_search_is_chosen_by_either_key_and_a_meaningless_value_is_an_error() {
    let mode = |text: &str| {
        let home = home_with(text);
        layers(&home).load().map(|config| config.web_search)
    };
    assert_eq!(mode("").unwrap(), WebSearchMode::Disabled);
    assert_eq!(
        mode("[tools]\nweb_search = true\n").unwrap(),
        WebSearchMode::Live
    );
    assert_eq!(
        mode("web_search = \"cached\"\n").unwrap(),
        WebSearchMode::Cached
    );
    assert_eq!(
        mode("web_search = false\n[tools]\nweb_search = true\n").unwrap(),
        WebSearchMode::Disabled,
        "`web_search` is the newer key and wins"
    );
    let err = mode("web_search = \"sometimes\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"live\", \"cached\" or \"disabled\""),
        "{err}"
    );
}

#[test]
fn model_family_rows_and_unknown_keys_in_them_are_read() {
    let home = home_with(
        "[model_families.\"my-coder\"]\nreasoning = true\nshell_tool = \"shell_command\"\n\
         apply_patch_tool = \"freeform\"\nimags = true\n",
    );
    let config = layers(&home).load().unwrap();
    let row = &config.model_families["my-coder"];
    assert_eq!(row.reasoning, Some(true));
    assert_eq!(row.shell_tool, Some(ShellToolSetting::ShellCommand));
    assert_eq!(row.apply_patch_tool, Some(ApplyPatchSetting::Freeform));
    assert_eq!(
        config.warnings,
        [format!(
            "{}: unknown config key `model_families.my-coder.imags` (ignored); did you mean `images`?",
            home.path().join("config.toml").display()
        )]
    );
}

#[test]
fn a_mistyped_key_or_provider_gets_a_did_you_mean() {
    let home = home_with("aproval_policy = \"never\"\n");
    let config = layers(&home).load().unwrap();
    assert!(
        config.warnings[0].ends_with("did you mean `approval_policy`?"),
        "{:?}",
        config.warnings
    );
    let home = home_with("model_provider = \"olama\"\n");
    let err = layers(&home).load().unwrap_err().to_string();
    assert!(
        err.starts_with("model_provider `olama` is not defined; did you mean `ollama`?"),
        "{err}"
    );
}

#[test]
fn added_directories_join_the_writable_roots() {
    let home = home_with("[sandbox_workspace_write]\nwritable_roots = [\"/configured\"]\n");
    let mut layers = layers(&home);
    layers.overrides.additional_writable_roots = vec!["/added".into()];
    let config = layers.load().unwrap();
    assert_eq!(
        config.sandbox_workspace_write.writable_roots,
        [PathBuf::from("/configured"), PathBuf::from("/added")]
    );
}

#[test]
fn the_progress_interval_is_configurable_but_never_zero() {
    let home = home_with("progress_interval_ms = 0\n");
    let config = layers(&home).load().unwrap();
    assert_eq!(config.progress_interval, Duration::from_millis(100));
    let home = tempfile::tempdir().unwrap();
    let config = ConfigLayers::new(home.path().to_path_buf()).load().unwrap();
    assert_eq!(config.progress_interval, DEFAULT_PROGRESS_INTERVAL);
}

#[test]
fn a_well_formed_value_no_type_holds_is_still_a_clear_error() {
    // Found by config::random_input: the syntax is fine, only the full read overflows.
    let home = home_with("model = \"m\"\nlimit = 999e999\n");
    let err = layers(&home).load().unwrap_err().to_string();
    assert!(err.contains("config.toml:2: invalid TOML"), "{err}");
}
