//! The configuration loader under random and mutated input: any `config.toml`, `-c` override
//! or per-call `config` object loads or fails with an error that says what is wrong — never
//! a panic or a hang.
//!
//! CI runs 256 cases of each; `PROPTEST_CASES=100000 cargo test -p deputy-core --lib
//! config::random_input` runs more.

use std::path::Path;
use std::time::Duration;

use deputy_test_support::random_input::{config as cases, json_value, mutated, within};
use proptest::prelude::*;

use super::{ConfigError, ConfigLayers, json_to_toml, parse_cli_override};

/// How long one load may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(10);

/// Configurations using every section, the starting points of the mutated ones.
const CONFIGS: &[&str] = &[
    r#"model = "gpt-5"
model_provider = "local"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
profile = "fast"
model_context_window = 200000
model_auto_compact_token_limit = 180000
tool_output_token_limit = 10000
approval_timeout_sec = 60
thread_idle_unload_sec = 1800
project_doc_max_bytes = 32768
include_plan_tool = true
developer_instructions = """
Be brief.
"""

[sandbox_workspace_write]
writable_roots = ["/tmp/extra"]
network_access = false
exclude_slash_tmp = false
exclude_tmpdir_env_var = true
allow_unix_sockets = false

[shell_environment_policy]
inherit = "core"
ignore_default_excludes = false
exclude = ["AWS_*"]
set = { CI = "1" }
include_only = ["PATH", "HOME"]

[model_providers.local]
name = "Local"
base_url = "http://127.0.0.1:11434/v1"
wire_api = "chat"
env_key = "LOCAL_KEY"
query_params = { "api-version" = "1" }
http_headers = { "X-Id" = "a" }
request_max_retries = 2
stream_max_retries = 1
stream_idle_timeout_ms = 30000

[profiles.fast]
model = "gpt-5-mini"
approval_policy = "never"
"#,
    "model = \"m\"\n[profiles.a]\nsandbox_mode = \"read-only\"\n",
    "",
];

/// Keys and values overrides are made of.
const KEYS: &[&str] = &[
    "model",
    "model_provider",
    "approval_policy",
    "sandbox_mode",
    "profile",
    "model_context_window",
    "project_doc_max_bytes",
    "approval_timeout_sec",
    "sandbox_workspace_write",
    "writable_roots",
    "network_access",
    "shell_environment_policy",
    "inherit",
    "set",
    "model_providers",
    "local",
    "base_url",
    "wire_api",
    "profiles",
    "never",
    "read-only",
    "chat",
    "responses",
    "all",
    "none",
];

/// Loads a configuration from `text` (as config.toml in `home`) and the overrides, on a
/// watched thread; checks an error names its problem.
fn load(
    home: &Path,
    text: &[u8],
    cli: Vec<(String, toml::Value)>,
    call: Vec<(String, toml::Value)>,
) -> Result<(), TestCaseError> {
    std::fs::write(home.join("config.toml"), text).expect("write config.toml");
    let mut layers = ConfigLayers::new(home.to_path_buf());
    layers.cli_overrides = cli;
    layers.call_overrides = call;
    let loaded = within(HANG, move || layers.load().map(|_| ()));
    if let Err(err) = loaded {
        let said = err.to_string();
        prop_assert!(!said.trim().is_empty());
        if let ConfigError::Invalid { path, .. } = &err {
            prop_assert!(path.ends_with("config.toml"), "{}", said);
        }
    }
    Ok(())
}

/// A dotted key of the vocabulary's words.
fn dotted_key() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(KEYS), 1..4).prop_map(|parts| parts.join("."))
}

#[test]
fn the_samples_load() {
    for sample in CONFIGS {
        let home = tempfile::tempdir().expect("tempdir");
        std::fs::write(home.path().join("config.toml"), sample).expect("write");
        let loaded = ConfigLayers::new(home.path().to_path_buf()).load();
        assert!(loaded.is_ok(), "{sample}\n{loaded:?}");
    }
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn any_config_file_loads_or_says_what_is_wrong(text in prop_oneof![
        mutated(CONFIGS),
        prop::collection::vec(any::<u8>(), 0..400),
    ]) {
        let home = tempfile::tempdir().expect("tempdir");
        load(home.path(), &text, Vec::new(), Vec::new())?;
    }

    #[test]
    fn any_override_loads_or_says_what_is_wrong(
        raw in prop_oneof![
            (dotted_key(), "[\\PC]{0,20}").prop_map(|(k, v)| format!("{k}={v}")),
            "[\\PC]{0,40}",
        ],
        call_key in dotted_key(),
        call_value in json_value(KEYS),
    ) {
        let home = tempfile::tempdir().expect("tempdir");
        let cli = match within(HANG, move || parse_cli_override(&raw)) {
            Ok(pair) => vec![pair],
            Err(err) => {
                prop_assert!(!err.to_string().is_empty());
                Vec::new()
            }
        };
        let call = json_to_toml(&call_value)
            .map(|value| vec![(call_key, value)])
            .unwrap_or_default();
        load(home.path(), CONFIGS[0].as_bytes(), cli, call)?;
    }
}
