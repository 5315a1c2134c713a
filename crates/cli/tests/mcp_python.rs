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
