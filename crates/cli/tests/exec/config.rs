//! Configuration as `deputy exec` reads it: config.toml, profiles, `-c`, `-m` and `-C`.

use std::path::Path;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::exec;
use crate::{all_requests, home_for, items_of_type};

#[test]
fn malformed_config_names_file_and_line_and_sends_nothing() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("unused"));
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    let broken_line = config.lines().count() + 1;
    home.write_config(&format!("{config}this line is not toml\n"));

    let run = exec(&home, &["hello"]);

    assert_ne!(run.status.code(), Some(0), "{run:?}");
    assert!(run.status.code().is_some(), "killed by a signal: {run:?}");
    let location = format!("{}:{broken_line}", home.config_path().display());
    assert!(run.stderr.contains(&location), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn wrongly_typed_config_value_names_file_line_and_key() {
    let server = MockModelServer::start();
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    home.write_config(&format!("tool_output_token_limit = \"lots\"\n{config}"));

    let run = exec(&home, &["hello"]);

    assert_ne!(run.status.code(), Some(0), "{run:?}");
    let location = format!("{}:1", home.config_path().display());
    assert!(run.stderr.contains(&location), "{}", run.stderr);
    assert!(
        run.stderr.contains("tool_output_token_limit"),
        "{}",
        run.stderr
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn unknown_config_key_is_a_warning_and_the_run_succeeds() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Fine."));
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    home.write_config(&format!("favourite_colour = \"blue\"\n{config}"));

    let run = exec(&home, &["hello"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Fine.\n");
    let warning = run
        .stderr
        .lines()
        .find(|line| line.contains("favourite_colour"))
        .unwrap_or_else(|| panic!("no warning naming the key:\n{}", run.stderr));
    assert!(warning.starts_with("warning:"), "{warning}");
    assert_eq!(server.request_count(), 1);
}

/// The `model` of the only request of a one-answer run with `args`.
fn model_sent(args: &[&str], extra_config: &str) -> String {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let home = home_for(&server);
    if !extra_config.is_empty() {
        home.append_config(extra_config);
    }
    let run = exec(&home, args);
    run.assert_code(0);
    let requests = all_requests(&server, 1);
    requests[0].body["model"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

const FAST_PROFILE: &str = "[profiles.fast]\nmodel = \"fast-model\"\n";

#[test]
fn dash_c_override_reaches_the_request() {
    assert_eq!(
        model_sent(&["-c", "model=other-model", "hello"], ""),
        "other-model"
    );
}

#[test]
fn dash_m_beats_dash_c() {
    assert_eq!(
        model_sent(&["-c", "model=from-c", "-m", "from-m", "hello"], ""),
        "from-m"
    );
}

#[test]
fn profile_flag_selects_the_profile_and_dash_c_beats_it() {
    assert_eq!(
        model_sent(&["--profile", "fast", "hello"], FAST_PROFILE),
        "fast-model"
    );
    assert_eq!(
        model_sent(
            &["--profile", "fast", "-c", "model=from-c", "hello"],
            FAST_PROFILE
        ),
        "from-c"
    );
}

#[test]
fn dash_c_dotted_path_reaches_the_provider_table() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let home = home_for(&server);

    let run = exec(
        &home,
        &[
            "-c",
            "model_providers.mock.http_headers={ X-Extra = \"from-cli\" }",
            "hello",
        ],
    );

    run.assert_code(0);
    let requests = all_requests(&server, 1);
    assert_eq!(requests[0].header("x-extra"), Some("from-cli"));
}

#[test]
fn dash_big_c_sets_the_working_directory_of_commands() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-pwd",
            "shell",
            json!({"command": ["bash", "-c", "pwd > where.txt"]}),
        ),
        MockResponse::text_turn("ok"),
    ]);
    let home = home_for(&server);
    let sub = home.workspace().join("sub");
    std::fs::create_dir(&sub).expect("mkdir sub");

    exec(&home, &["-C", "sub", "where am I"]).assert_code(0);

    let recorded = std::fs::read_to_string(sub.join("where.txt")).expect("where.txt in sub");
    assert_eq!(
        Path::new(recorded.trim()).canonicalize().expect("pwd"),
        sub.canonicalize().expect("sub")
    );
    let requests = all_requests(&server, 2);
    let developer = items_of_type(&requests[0], "message")
        .into_iter()
        .find(|m| m["role"] == "developer")
        .expect("developer message");
    let text = developer["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&sub.canonicalize().expect("sub").display().to_string()),
        "{text}"
    );
}
