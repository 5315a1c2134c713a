//! `TestHome` lays out a hermetic `DEPUTY_HOME` and runs commands inside it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::ffi::OsStr;
use std::fs;

use deputy_test_support::TestHome;

#[test]
fn new_home_has_the_mock_config_and_an_empty_workspace() {
    let home = TestHome::new("http://127.0.0.1:9/v1");

    let config = fs::read_to_string(home.config_path()).unwrap_or_default();

    assert_eq!(config, TestHome::default_config("http://127.0.0.1:9/v1"));
    assert_eq!(home.config_path(), home.path().join("config.toml"));
    assert_eq!(home.workspace(), home.path().join("workspace"));
    assert_eq!(
        fs::read_dir(home.workspace()).map(Iterator::count).ok(),
        Some(0)
    );
}

#[test]
fn append_config_adds_lines_and_write_config_replaces() {
    let home = TestHome::new("http://127.0.0.1:9/v1");

    home.append_config("stream_idle_timeout_ms = 200");
    home.append_config("[profiles.fast]\nmodel = \"m\"\n");

    let config = fs::read_to_string(home.config_path()).unwrap_or_default();
    assert!(config.ends_with(
        "stream_max_retries = 0\nstream_idle_timeout_ms = 200\n[profiles.fast]\nmodel = \"m\"\n"
    ));

    home.write_config("model = \"other\"\n");
    assert_eq!(
        fs::read_to_string(home.config_path()).ok().as_deref(),
        Some("model = \"other\"\n")
    );
}

#[test]
fn command_runs_in_the_workspace_with_home_and_quiet_logs() {
    let home = TestHome::new("http://127.0.0.1:9/v1");
    let mut cmd = home.command("bash");
    cmd.args([
        "-c",
        r#"printf '%s\n%s\n' "$DEPUTY_HOME" "$RUST_LOG"; pwd -P"#,
    ]);

    let removed_key = cmd
        .get_envs()
        .any(|(name, value)| name == OsStr::new("OPENAI_API_KEY") && value.is_none());
    let output = cmd
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default();

    let workspace = fs::canonicalize(home.workspace()).unwrap_or_default();
    let expected = format!("{}\nwarn\n{}\n", home.path().display(), workspace.display());
    assert_eq!(output, expected);
    assert!(removed_key, "OPENAI_API_KEY must be cleared");
}
