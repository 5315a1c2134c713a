//! `deputy mcp-server` driven by the official MCP Python SDK (`mcp.ClientSession` over
//! `stdio_client`): what a third-party client sees must parse and validate there.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, TestHome, python_with_mcp};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest the Python client may run; it finishes in about a second.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(60);

/// Runs `command` to its end, killing it after [`SCRIPT_DEADLINE`].
fn run_bounded(mut command: Command) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python");
    let pid = child.id();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    match done_rx.recv_timeout(SCRIPT_DEADLINE) {
        Ok(output) => output.expect("wait for python"),
        Err(_) => {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            panic!("the Python MCP client did not finish within {SCRIPT_DEADLINE:?}");
        }
    }
}

#[test]
fn the_python_sdk_lists_the_tools_and_runs_a_session() {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "call-py",
            "shell_command",
            json!({"command": "echo from-python"}),
        ),
        MockResponse::text_turn("Python says hi."),
        MockResponse::text_turn("Python again."),
    ]);
    let home = TestHome::new(&model.base_url());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_sdk_client.py");
    let mut command = home.command(&python);
    command.arg(&script).arg(DEPUTY).env("HOME", home.path());

    let output = run_bounded(command);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}"));

    let thread_id = seen["structuredContent"]["threadId"].clone();
    assert!(thread_id.is_string(), "{seen}");
    let progress = seen["progressMessages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        progress.iter().any(|m| m == "running `echo from-python`"),
        "{progress:?}"
    );
    let mut summary = seen.clone();
    summary["progressMessages"] = json!("checked above");
    assert_eq!(
        summary,
        json!({
            "protocolVersion": "2025-11-25",
            "serverName": "deputy",
            "tools": [
                "codex",
                "codex-reply",
                "conversationCreate",
                "conversationSendMessage",
                "conversationStream",
                "conversationsList",
                "review"
            ],
            "isError": false,
            "text": ["Python says hi."],
            "structuredContent": {"threadId": thread_id, "content": "Python says hi."},
            "progressMessages": "checked above",
            "reply": {"threadId": thread_id, "content": "Python again."},
            "eventTypes": [
                "agent_message",
                "agent_message_delta",
                "exec_command_begin",
                "exec_command_end",
                "exec_command_output_delta",
                "session_configured",
                "task_complete",
                "task_started",
                "token_count",
                "user_message",
            ],
            "eventThreadIds": [thread_id],
        })
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
}

/// `request_user_input` asked through the Python SDK's elicitation callback, which answers
/// with `action` (`accept` picks each question's last option or types an answer); returns
/// what the script saw and the tool output the model was given.
fn user_input_through_the_sdk(action: &str) -> (Value, String) {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "ask",
            "request_user_input",
            json!({"questions": [
                {"id": "db", "header": "Database", "question": "Which database?",
                 "options": [{"label": "sqlite", "description": "a file"},
                             {"label": "postgres", "description": "a server"}]},
                {"id": "name", "header": "Name", "question": "What should it be called?",
                 "options": []}
            ]}),
        ),
        MockResponse::text_turn("Thanks."),
    ]);
    let home = TestHome::new(&model.base_url());
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_user_input_client.py");
    let mut command = home.command(&python);
    command
        .arg(&script)
        .arg(DEPUTY)
        .arg(action)
        .env("HOME", home.path());
    let output = run_bounded(command);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}"));
    let requests = model.requests();
    let told = requests
        .last()
        .and_then(|request| request.body["input"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == "ask")
        .map(|item| item["output"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no output for the question in {requests:?}"));
    (seen, told)
}

#[test]
fn request_user_input_is_answered_through_the_python_sdk_s_elicitation_callback() {
    let (seen, told) = user_input_through_the_sdk("accept");
    assert_eq!(seen["isError"], false, "{seen}");
    assert_eq!(seen["text"], json!(["Thanks."]), "{seen}");
    let elicitations = seen["elicitations"].as_array().unwrap();
    assert_eq!(elicitations.len(), 1, "{seen}");
    let schema = &elicitations[0]["schema"];
    assert_eq!(
        schema["properties"]["db"]["enum"],
        json!(["sqlite", "postgres"])
    );
    assert!(
        elicitations[0]["message"]
            .as_str()
            .unwrap()
            .contains("Which database?"),
        "{seen}"
    );
    let answers: Value = serde_json::from_str(&told).unwrap_or_else(|_| panic!("{told}"));
    assert_eq!(
        answers,
        json!({"answers": {"db": {"answers": ["postgres"]}, "name": {"answers": ["typed by python"]}}})
    );
}

#[test]
fn a_declined_request_user_input_tells_the_model_no_answer_and_the_turn_goes_on() {
    let (seen, told) = user_input_through_the_sdk("decline");
    assert_eq!(seen["text"], json!(["Thanks."]), "{seen}");
    assert!(told.starts_with("The user gave no answer"), "{told}");
}
