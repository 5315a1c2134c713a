//! What a first run runs into: no API key, a typo in `-c` or config.toml, a session id
//! typed by hand, a prompt where the id goes, `--help`.

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{DEPUTY, deputy, exec, finish};
use crate::{home_for, json_lines};

/// Every rollout file under `home`.
fn rollouts(home: &Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&home.join("sessions"), &mut out);
    out
}

/// Runs `deputy exec --json PROMPT` and returns the new thread's id.
fn new_session(home: &TestHome, prompt: &str) -> String {
    let run = exec(home, &["--json", prompt]);
    run.assert_code(0);
    json_lines(&run.stdout)[0]["thread_id"]
        .as_str()
        .expect("thread.started")
        .to_string()
}

#[test]
fn help_opens_with_what_deputy_is() {
    let home = TestHome::new("http://127.0.0.1:9/v1");
    let run = finish(deputy(&home, &["--help"]));
    run.assert_code(0);
    assert!(
        run.stdout.starts_with("deputy: a coding agent"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("deputy exec"), "{}", run.stdout);
}

#[test]
fn a_missing_api_key_names_both_ways_out_and_leaves_no_session_behind() {
    let server = MockModelServer::start();
    let home = home_for(&server);
    home.append_config("env_key = \"DEPUTY_TEST_NO_SUCH_KEY\"");

    let run = exec(&home, &["hello"]);

    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(
        run.stderr.contains("DEPUTY_TEST_NO_SUCH_KEY"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("export DEPUTY_TEST_NO_SUCH_KEY="),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("[model_providers"), "{}", run.stderr);
    assert!(run.stderr.contains("localhost:11434"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&home.config_path().display().to_string()),
        "{}",
        run.stderr
    );
    assert_eq!(rollouts(home.path()), Vec::<std::path::PathBuf>::new());
    assert_eq!(server.request_count(), 0);
}

#[test]
fn an_empty_model_is_rejected() {
    let server = MockModelServer::start();
    let home = home_for(&server);

    for args in [
        &["-c", "model=", "hello"][..],
        &["-c", "model=\"\"", "hello"][..],
    ] {
        let run = exec(&home, args);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {run:?}");
        assert!(run.stderr.contains("model"), "{}", run.stderr);
    }
    let run = exec(&home, &["-c", "model=", "hello"]);
    assert!(
        run.stderr.contains("`-c model=` has no value"),
        "{}",
        run.stderr
    );
    assert_eq!(server.request_count(), 0);
    assert!(rollouts(home.path()).is_empty());
}

#[test]
fn a_dash_c_type_error_reads_like_a_config_file_one() {
    let server = MockModelServer::start();
    let home = home_for(&server);

    let run = exec(&home, &["-c", "tool_output_token_limit=lots", "hello"]);

    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let error = run.stderr.trim();
    assert!(error.contains("expected an integer"), "{error}");
    assert!(!error.contains("usize"), "a Rust type name: {error}");
    assert_eq!(
        error.matches("tool_output_token_limit").count(),
        1,
        "the key more than once: {error}"
    );
    assert!(error.contains("\"lots\""), "{error}");

    // The same mistake in config.toml reads the same, with its file and line.
    home.write_config(&format!(
        "tool_output_token_limit = \"lots\"\n{}",
        TestHome::default_config(&server.base_url())
    ));
    let from_file = exec(&home, &["hello"]);
    let file_error = from_file.stderr.trim();
    let location = format!("{}:1: ", home.config_path().display());
    assert!(file_error.contains(&location), "{file_error}");
    let (_, file_reason) = file_error.split_once(&location).unwrap_or_default();
    let (_, cli_reason) = error.split_once("invalid override: ").unwrap_or_default();
    assert_eq!(file_reason, cli_reason);
}

#[test]
fn every_error_of_a_config_file_is_reported_first_line_first() {
    let server = MockModelServer::start();
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    home.write_config(&format!(
        "approval_policy = \"sometimes\"\ntool_output_token_limit = -3\n{}\
         stream_idle_timeout_ms = \"slow\"\n",
        config.replace("approval_policy = \"never\"\n", "")
    ));
    let provider_line = config.lines().count() + 2;

    let run = exec(&home, &["hello"]);

    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let path = home.config_path().display().to_string();
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!("error: {path}:1: ")),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("`approval_policy`"), "{}", lines[0]);
    assert!(lines[1].starts_with(&format!("{path}:2: ")), "{}", lines[1]);
    assert!(
        lines[1].contains("`tool_output_token_limit`"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with(&format!("{path}:{provider_line}: ")),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains("stream_idle_timeout_ms"), "{}", lines[2]);
    assert_eq!(server.request_count(), 0);
}

#[test]
fn sessions_show_and_exec_resume_take_a_unique_start_of_the_id() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("First."),
        MockResponse::text_turn("Second."),
    ]);
    let home = home_for(&server);
    let id = new_session(&home, "remember this");
    let prefix = &id[..13];

    let shown = finish(deputy(&home, &["sessions", "show", prefix]));
    shown.assert_code(0);
    assert!(
        shown.stdout.starts_with(&format!("session {id}\n")),
        "{}",
        shown.stdout
    );

    let resumed = exec(&home, &["resume", "--json", prefix, "and now?"]);
    resumed.assert_code(0);
    assert_eq!(json_lines(&resumed.stdout)[0]["thread_id"], id.as_str());
    assert_eq!(rollouts(home.path()).len(), 1);
}

#[test]
fn exec_resume_with_a_prompt_instead_of_an_id_explains_itself() {
    let server = MockModelServer::start();
    let home = home_for(&server);

    let run = exec(&home, &["resume", "fix the tests"]);

    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(
        run.stderr
            .contains("Failed to parse thread_id `fix the tests`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("deputy exec resume ID PROMPT"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--last"), "{}", run.stderr);
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_malformed_id_gets_one_message_from_the_cli_and_from_mcp() {
    let server = MockModelServer::start();
    let home = home_for(&server);

    let cli = finish(deputy(&home, &["sessions", "show", "not-a-thread"]));
    assert_eq!(cli.status.code(), Some(1), "{cli:?}");
    let message = cli.stderr.trim().trim_start_matches("error: ").to_string();
    assert_eq!(
        message,
        "Failed to parse thread_id `not-a-thread`: not a UUID"
    );

    let mut command = home.command(DEPUTY);
    command.arg("mcp-server");
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({}));
    let id = client.request(
        "tools/call",
        json!({"name": "codex-reply", "arguments": {"threadId": "not-a-thread", "prompt": "hi"}}),
    );
    let response = client
        .wait_response(id, Duration::from_secs(15))
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(response["result"]["content"][0]["text"], message.as_str());
}

#[test]
fn sessions_list_and_exec_name_the_directory_flag_alike() {
    let server = MockModelServer::start();
    server.push_all([MockResponse::text_turn("A."), MockResponse::text_turn("B.")]);
    let home = home_for(&server);
    let sub = home.workspace().join("sub");
    std::fs::create_dir(&sub).expect("mkdir sub");
    let sub_arg = sub.display().to_string();
    let in_sub = {
        let run = exec(&home, &["--json", "-C", &sub_arg, "in sub"]);
        run.assert_code(0);
        json_lines(&run.stdout)[0]["thread_id"]
            .as_str()
            .expect("thread id")
            .to_string()
    };
    new_session(&home, "at the top");

    for flag in ["-C", "--cd", "--cwd"] {
        let listed = finish(deputy(&home, &["sessions", "list", flag, &sub_arg]));
        listed.assert_code(0);
        let ids: Vec<&str> = listed
            .stdout
            .lines()
            .filter_map(|line| line.split('\t').next())
            .collect();
        assert_eq!(ids, [in_sub.as_str()], "{flag}");
    }
}
